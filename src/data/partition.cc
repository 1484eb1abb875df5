#include "fedldp/data/partition.h"

#include <cmath>
#include <numeric>
#include <string>

#include "fedldp/random/counter_rng.h"

namespace fedldp {
namespace {

// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 by the boost
// Gamma(a) = Gamma(a + 1) U^(1/a).
double Gamma(double shape, Rng& rng) {
  if (shape < 1) return Gamma(shape + 1, rng) * std::pow(Uniform01(rng), 1 / shape);
  const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x, v;
    do {
      x = StandardNormal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = Uniform01(rng);
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0 && std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

}  // namespace

Result<std::vector<std::vector<std::size_t>>> PartitionRows(const Dataset& data,
                                                            std::span<const std::size_t> rows,
                                                            std::size_t clients, double alpha,
                                                            std::uint64_t seed) {
  std::vector<std::size_t> all;
  if (rows.empty()) {
    all.resize(data.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    rows = all;
  }
  if (clients == 0 || clients > rows.size()) {
    return Error{"clients must be in [1, " + std::to_string(rows.size()) + "] (the rows), got " +
                 std::to_string(clients)};
  }
  if (!(alpha >= 0) || !std::isfinite(alpha)) return Error{"Dirichlet alpha must be >= 0"};
  CounterRng rng(seed, 0x5b11);
  std::vector<std::vector<std::size_t>> shards(clients);
  if (alpha == 0) {
    std::vector<std::size_t> order(rows.begin(), rows.end());
    for (std::size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1], order[UniformIndex(rng, i)]);
    }
    const std::size_t per = order.size() / clients;  // equal shards; the rest unused
    for (std::size_t c = 0; c < clients; ++c) {
      shards[c].assign(order.begin() + c * per, order.begin() + (c + 1) * per);
    }
    return shards;
  }
  for (int k = 0; k < data.classes; ++k) {
    std::vector<std::size_t> of_class;
    for (const std::size_t i : rows) {
      if (data.labels[i] == k) of_class.push_back(i);
    }
    for (std::size_t i = of_class.size(); i > 1; --i) {
      std::swap(of_class[i - 1], of_class[UniformIndex(rng, i)]);
    }
    std::vector<double> p(clients);
    double total = 0;
    for (auto& v : p) total += (v = Gamma(alpha, rng));
    double cumulative = 0;
    std::size_t start = 0;
    for (std::size_t c = 0; c < clients; ++c) {
      cumulative += p[c] / total;
      const std::size_t end =
          c + 1 == clients
              ? of_class.size()
              : std::min(of_class.size(), static_cast<std::size_t>(std::llround(
                                              cumulative * static_cast<double>(of_class.size()))));
      for (std::size_t i = start; i < std::max(start, end); ++i) shards[c].push_back(of_class[i]);
      start = std::max(start, end);
    }
  }
  return shards;
}

}  // namespace fedldp
