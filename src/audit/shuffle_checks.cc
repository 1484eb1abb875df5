#include "fedldp/audit/shuffle_checks.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace fedldp::audit {

double ShuffledResponseDelta(std::uint64_t n, std::uint64_t ones, double eps0, double eps) {
  const double high = std::exp(eps0) / (std::exp(eps0) + 1), low = 1 - high;
  std::vector<double> count{1.0};  // the other users' count of 1s
  for (std::uint64_t i = 0; i + 1 < n; ++i) {
    const double p = i < ones ? high : low;
    std::vector<double> next(count.size() + 1, 0.0);
    for (std::size_t k = 0; k < count.size(); ++k) {
      next[k] += count[k] * (1 - p);
      next[k + 1] += count[k] * p;
    }
    count = std::move(next);
  }
  double pq = 0, qp = 0;
  for (std::size_t k = 0; k <= count.size(); ++k) {
    const double at = k < count.size() ? count[k] : 0, before = k > 0 ? count[k - 1] : 0;
    const double p = (1 - low) * at + low * before;    // user 1 reports with input 0
    const double q = (1 - high) * at + high * before;  // with input 1
    pq += std::max(0.0, p - std::exp(eps) * q);
    qp += std::max(0.0, q - std::exp(eps) * p);
  }
  return std::max(pq, qp);
}

Verdict CheckShuffleBound(ShuffleReduction bound, std::uint64_t n, double eps0, double delta) {
  const auto b = NumericalShuffleEpsilon(n, eps0, delta, bound);
  if (!b.ok()) return {false, b.error(), NAN};
  double worst = 0;
  for (const std::uint64_t ones : {std::uint64_t{0}, (n - 1) / 2, n - 1}) {
    worst = std::max(worst, ShuffledResponseDelta(n, ones, eps0, b->epsilon_upper));
  }
  std::ostringstream why;
  why << "n " << n << ": (" << b->epsilon_upper << ", " << delta
      << "); shuffled randomized response's exact delta there " << worst;
  return {worst <= delta * (1 + 1e-9), why.str(), worst / delta};
}

}  // namespace fedldp::audit
