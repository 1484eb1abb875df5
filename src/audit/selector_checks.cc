#include "fedldp/audit/selector_checks.h"

#include <algorithm>
#include <numeric>

#include "fedldp/random/counter_rng.h"

namespace fedldp::audit {

std::vector<std::vector<double>> AdversarialVectors(std::size_t d, std::size_t k) {
  std::vector<std::vector<double>> out;
  for (std::size_t place : {std::size_t{0}, k - 1, std::min(k, d - 1), d - 1}) {
    for (std::size_t target : {std::size_t{0}, d / 2, d - 1}) {
      // Distinct magnitudes d, d-1, ..., 1 with alternating signs, arranged so
      // that `target` has rank `place`.
      std::vector<std::size_t> order(d);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::swap(order[place], order[target]);
      std::vector<double> r(d);
      for (std::size_t m = 0; m < d; ++m) {
        r[order[m]] = static_cast<double>(d - m) * (m % 2 ? -1 : 1);
      }
      out.push_back(std::move(r));
    }
  }
  // Ties: all magnitudes equal, and one-hot-like vectors (a few equal
  // non-zeros, zeros elsewhere), where random tie-breaking shapes the law.
  out.push_back(std::vector<double>(d, 1.0));
  std::vector<double> sparse(d, 0.0);
  for (std::size_t j = 0; j < d; j += 3) sparse[j] = (j % 2 ? -0.5 : 0.5);
  out.push_back(std::move(sparse));
  return out;
}

std::vector<double> SelectionLaw(const Selector& s, std::span<const double> r) {
  auto p = s.Probabilities(r);
  p.push_back(s.NoneProbability());
  return p;
}

std::vector<std::uint64_t> SelectionCounts(const Selector& s, std::span<const double> r,
                                           std::size_t draws, std::uint64_t seed) {
  CounterRng rng(seed);
  std::vector<std::uint64_t> counts(s.dimension() + 1, 0);
  for (std::size_t i = 0; i < draws; ++i) {
    const std::int64_t j = s.Select(r, rng);
    ++counts[j == Selector::kNone ? s.dimension() : static_cast<std::size_t>(j)];
  }
  return counts;
}

double WorstSelectionRatio(const Selector& s) {
  std::vector<std::vector<double>> likelihood;
  for (const auto& r : AdversarialVectors(s.dimension(), s.k())) {
    likelihood.push_back(SelectionLaw(s, r));
  }
  return WorstRatio(likelihood);
}

Verdict CheckSelectionPrivacy(const Selector& s, double claimed_epsilon) {
  return CheckRatio(WorstSelectionRatio(s), claimed_epsilon);
}

}  // namespace fedldp::audit
