#include "fedldp/data/synthetic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "fedldp/random/counter_rng.h"

namespace fedldp {

Result<Dataset> MakeSynthetic(const SyntheticOptions& o) {
  if (o.rows == 0 || o.dimension == 0) return Error{"synthetic data needs rows >= 1 and d >= 1"};
  if (!(o.c1 >= 0 && o.c1 <= 1)) return Error{"C1 must be in [0, 1]"};
  if (!(o.c2 >= 0 && o.c2 <= 1)) return Error{"C2 must be in [0, 1]"};
  if (!(o.label_noise >= 0 && o.label_noise <= 0.5))
    return Error{"label noise must be in [0, 0.5]"};
  Dataset data;
  char name[96];
  const bool per_entry = o.sparsity == SyntheticSparsity::kPerEntry;
  std::snprintf(name, sizeof name, "syn-%zu-%g-%g%s", o.dimension, o.c1, o.c2,
                per_entry ? "-entry" : "");
  data.name = name;
  data.dimension = o.dimension;
  CounterRng truth(o.seed, 0), rows(o.seed, 1);
  std::vector<double> w(o.dimension);
  for (auto& v : w) v = StandardNormal(truth);
  // Per feature: one shrink decision per column, drawn from the ground-truth
  // stream after w*, so w* is the same under both readings.
  std::vector<double> column_scale(o.dimension, 1.0);
  if (!per_entry) {
    for (auto& s : column_scale) s = Uniform01(truth) < o.c2 ? o.c1 : 1.0;
  }
  std::vector<float> x(o.dimension);
  for (std::size_t i = 0; i < o.rows; ++i) {
    double score = 0;
    for (std::size_t j = 0; j < o.dimension; ++j) {
      double v = 2 * Uniform01(rows) - 1;
      if (per_entry) {
        if (Uniform01(rows) < o.c2) v *= o.c1;
      } else {
        v *= column_scale[j];
      }
      x[j] = static_cast<float>(v);
      score += w[j] * x[j];
    }
    int y = score > 0 ? 1 : 0;
    if (o.label_noise > 0 && Uniform01(rows) < o.label_noise) y = 1 - y;
    data.Append(x, y);
  }
  return data;
}

Result<SyntheticOptions> ParseSyntheticName(const std::string& name) {
  // syn-{L,H}-C1-C2[-entry|-feature][-nROWS]
  const Error bad{
      "synthetic names look like syn-L-0.01-0.9 (L: d = 100, H: d = 300; suffix -entry for "
      "per-entry sparsity, then -nROWS for other than 60000 rows), got '" +
      name + "'"};
  if (name.size() < 7 || name.compare(0, 4, "syn-") != 0 || (name[4] != 'L' && name[4] != 'H') ||
      name[5] != '-') {
    return bad;
  }
  std::string rest = name.substr(6);
  SyntheticOptions o;
  if (const auto n = rest.rfind("-n"); n != std::string::npos) {
    const std::string digits = rest.substr(n + 2);
    if (digits.empty() || digits.size() > 10 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return bad;
    }
    o.rows = std::stoull(digits);
    if (o.rows == 0) return bad;
    rest.resize(n);
  }
  for (const auto& [suffix, sparsity] :
       {std::pair{std::string("-entry"), SyntheticSparsity::kPerEntry},
        std::pair{std::string("-feature"), SyntheticSparsity::kPerFeature}}) {
    if (rest.size() > suffix.size() &&
        rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0) {
      rest.resize(rest.size() - suffix.size());
      o.sparsity = sparsity;
      break;
    }
  }
  const auto dash = rest.find('-');
  if (dash == std::string::npos) return bad;
  o.dimension = name[4] == 'L' ? 100 : 300;
  char* end = nullptr;
  const std::string c1 = rest.substr(0, dash), c2 = rest.substr(dash + 1);
  o.c1 = std::strtod(c1.c_str(), &end);
  if (c1.empty() || *end != '\0') return bad;
  o.c2 = std::strtod(c2.c_str(), &end);
  if (c2.empty() || *end != '\0') return bad;
  return o;
}

}  // namespace fedldp
