#include "fedldp/data/partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>

#include "fedldp/base/limits.h"
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

using Shards = std::vector<std::vector<std::size_t>>;

void Shuffle(std::vector<std::size_t>& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[UniformIndex(rng, i)]);
}

Shards IidShards(std::span<const std::size_t> rows, std::size_t clients, Rng& rng) {
  std::vector<std::size_t> order(rows.begin(), rows.end());
  Shuffle(order, rng);
  const std::size_t per = order.size() / clients;  // equal shards; the rest unused
  Shards shards(clients);
  for (std::size_t c = 0; c < clients; ++c) {
    shards[c].assign(order.begin() + c * per, order.begin() + (c + 1) * per);
  }
  return shards;
}

Shards DirichletShards(const Dataset& data, std::span<const std::size_t> rows, std::size_t clients,
                       double alpha, Rng& rng) {
  Shards shards(clients);
  for (int k = 0; k < data.classes; ++k) {
    std::vector<std::size_t> of_class;
    for (const std::size_t i : rows) {
      if (data.labels[i] == k) of_class.push_back(i);
    }
    Shuffle(of_class, rng);
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

Shards LabelShards(const Dataset& data, std::span<const std::size_t> rows, std::size_t clients,
                   std::size_t per_client, Rng& rng) {
  std::vector<std::size_t> order(rows.begin(), rows.end());
  Shuffle(order, rng);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return data.labels[a] < data.labels[b]; });
  const std::size_t count = clients * per_client, size = order.size() / count;
  std::vector<std::size_t> pieces(count);
  std::iota(pieces.begin(), pieces.end(), std::size_t{0});
  Shuffle(pieces, rng);
  Shards shards(clients);
  for (std::size_t c = 0; c < clients; ++c) {
    for (std::size_t j = 0; j < per_client; ++j) {
      const auto from =
          order.begin() + static_cast<std::ptrdiff_t>(pieces[c * per_client + j] * size);
      shards[c].insert(shards[c].end(), from, from + static_cast<std::ptrdiff_t>(size));
    }
  }
  return shards;
}

}  // namespace

std::string Partition::Describe() const {
  if (label_shards > 0) return std::to_string(label_shards) + " label shards each";
  if (dirichlet_alpha > 0) {
    std::ostringstream s;
    s << "Dirichlet(" << dirichlet_alpha << ") label skew";
    return s.str();
  }
  return "equal IID shards";
}

Status Partition::Validate() const {
  if (!(dirichlet_alpha >= 0) || !std::isfinite(dirichlet_alpha)) {
    return Error{"Dirichlet alpha must be a finite number >= 0"};
  }
  FEDLDP_RETURN_IF_ERROR(CheckCount(kLabelShards, label_shards));
  if (dirichlet_alpha > 0 && label_shards > 0) {
    return Error{"give a Dirichlet alpha or label shards, not both"};
  }
  return {};
}

Result<Shards> PartitionRows(const Dataset& data, std::span<const std::size_t> rows,
                             std::size_t clients, const Partition& how, std::uint64_t seed) {
  FEDLDP_RETURN_IF_ERROR(how.Validate());
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
  if (how.label_shards > 0 && clients * how.label_shards > rows.size()) {
    return Error{std::to_string(clients) + " clients x " + std::to_string(how.label_shards) +
                 " label shards exceed the " + std::to_string(rows.size()) + " rows"};
  }
  CounterRng rng(seed, 0x5b11);
  if (how.label_shards > 0) return LabelShards(data, rows, clients, how.label_shards, rng);
  if (how.dirichlet_alpha > 0)
    return DirichletShards(data, rows, clients, how.dirichlet_alpha, rng);
  return IidShards(rows, clients, rng);
}

Result<HeldOut> HoldOut(const Dataset& data, std::size_t n, std::uint64_t seed) {
  if (n == 0 || n >= data.size()) {
    return Error{"validation rows (" + std::to_string(n) +
                 ") must be at least 1 and fewer than the training rows (" +
                 std::to_string(data.size()) + ")"};
  }
  std::vector<std::size_t> order(data.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  CounterRng rng(seed, /*stream=*/0x7a1d);
  SampleClients(order, n, rng);
  const auto held = order.begin() + static_cast<std::ptrdiff_t>(n);
  std::sort(order.begin(), held);
  std::sort(held, order.end());
  return HeldOut{data.Subset({held, order.end()}), data.Subset({order.begin(), held})};
}

}  // namespace fedldp
