// Composition of (eps, delta)-DP mechanisms applied to one person's data.
//
// Optimal composition (Kairouz, Oh & Viswanath, "The composition theorem for
// differential privacy", ICML 2015 / IEEE Trans. IT 2017, Theorem 3.3). Every
// (eps, delta)-DP mechanism is dominated by the canonical pair
//   P = (delta, (1 - delta) e^eps / (1 + e^eps), (1 - delta) / (1 + e^eps), 0),
//   Q = (0, (1 - delta) / (1 + e^eps), (1 - delta) e^eps / (1 + e^eps), delta),
// and the k-fold adaptive composition by the product of k such pairs. Its
// hockey-stick divergence at eps_g is, exactly,
//   delta(eps_g) = 1 - (1 - delta)^k (1 - delta_RR(eps_g)),
//   delta_RR(eps_g) = sum_l C(k, l) max(0, e^((k - l) eps) - e^(eps_g + l eps)) / (1 + e^eps)^k,
// so the composition is (eps_g, delta(eps_g))-DP for every eps_g >= 0, and no
// smaller delta can be proven from (eps, delta) alone. At eps_g = (k - 2i) eps
// this is the theorem's ((k - 2i) eps, 1 - (1 - delta)^k (1 - delta_i)).
// It is never worse than advanced composition (Dwork, Rothblum & Vadhan 2010),
// which is kept for comparison.
#ifndef FEDLDP_PRIVACY_COMPOSITION_H_
#define FEDLDP_PRIVACY_COMPOSITION_H_

#include <cstdint>

#include "fedldp/base/status.h"

namespace fedldp {

struct DpGuarantee {
  double epsilon = 0;
  double delta = 0;
};

// k-fold composition of (eps, delta)-DP mechanisms, advanced form, slack delta'.
DpGuarantee AdvancedComposition(double epsilon, double delta, double k, double delta_slack);

// delta(eps_g) above, for k >= 1 compositions of (eps, delta)-DP mechanisms.
double ComposedDelta(double epsilon, double delta, std::uint64_t k, double epsilon_total);

// The smallest eps_g with ComposedDelta <= delta_total (bisection to a
// relative 1e-10, rounded up): eps > 0 finite, delta in [0, 1), 1 <= k <=
// 10^6, delta_total in (0, 1) and above 1 - (1 - delta)^k (which no eps_g
// can undercut). Also: never above k eps (basic composition).
Result<DpGuarantee> OptimalComposition(double epsilon, double delta, std::uint64_t k,
                                       double delta_total);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_COMPOSITION_H_
