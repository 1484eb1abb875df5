#include "fedldp/privacy/composition.h"

#include <cmath>
#include <sstream>

#include "fedldp/base/bisect.h"

namespace fedldp {

DpGuarantee AdvancedComposition(double epsilon, double delta, double k, double delta_slack) {
  return {
      epsilon * std::sqrt(2 * k * std::log(1 / delta_slack)) + k * epsilon * std::expm1(epsilon),
      k * delta + delta_slack};
}

double ComposedDelta(double epsilon, double delta, std::uint64_t k, double epsilon_total) {
  const double kk = static_cast<double>(k);
  // The l-th term is P[Bin(k, 1 / (1 + e^eps)) = l] (1 - e^(eps_g - (k - 2l) eps)),
  // summed while (k - 2l) eps > eps_g; the log pmf is updated term by term.
  const double log_p = -std::log1p(std::exp(epsilon));   // log 1 / (1 + e^eps)
  const double log_q = -std::log1p(std::exp(-epsilon));  // log e^eps / (1 + e^eps)
  double log_pmf = kk * log_q;                           // l = 0
  double rr = 0;
  for (std::uint64_t l = 0; l <= k; ++l) {
    const double ll = static_cast<double>(l);
    const double gap = (kk - 2 * ll) * epsilon - epsilon_total;
    if (gap <= 0) break;  // gap falls as l grows
    rr += std::exp(log_pmf) * -std::expm1(-gap);
    log_pmf += std::log((kk - ll) / (ll + 1)) + log_p - log_q;
  }
  rr = std::min(1.0, rr);
  // 1 - (1 - delta)^k (1 - rr), computed without cancellation.
  const double keep = std::exp(kk * std::log1p(-delta));
  return std::min(1.0, (1 - keep) + keep * rr);
}

Result<DpGuarantee> OptimalComposition(double epsilon, double delta, std::uint64_t k,
                                       double delta_total) {
  std::ostringstream e;
  if (!(std::isfinite(epsilon) && epsilon > 0)) {
    e << "the per-mechanism epsilon must be a finite number > 0, got " << epsilon;
  } else if (!(delta >= 0 && delta < 1)) {
    e << "the per-mechanism delta must be in [0, 1), got " << delta;
  } else if (k < 1 || k > 1'000'000) {
    e << "the number of compositions must be in [1, 10^6], got " << k;
  } else if (!(delta_total > 0 && delta_total < 1)) {
    e << "the total delta must be in (0, 1), got " << delta_total;
  } else if (ComposedDelta(epsilon, delta, k, static_cast<double>(k) * epsilon) > delta_total) {
    e << "a total delta of " << delta_total << " is below what " << k << " mechanisms with delta "
      << delta << " each leave (" << -std::expm1(static_cast<double>(k) * std::log1p(-delta))
      << ")";
  } else {
    double lo = 0, hi = static_cast<double>(k) * epsilon;
    if (ComposedDelta(epsilon, delta, k, 0) <= delta_total) return DpGuarantee{0, delta_total};
    hi = Bisect(
             lo, hi, [&](double e) { return ComposedDelta(epsilon, delta, k, e) <= delta_total; },
             1e-10)
             .hi;
    return DpGuarantee{hi, delta_total};
  }
  return Error{e.str()};
}

}  // namespace fedldp
