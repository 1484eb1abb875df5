// Privacy amplification by shuffling, computed numerically: Feldman,
// McMillan & Talwar, "Hiding Among the Clones" (FOCS 2021), Appendix E.
//
// n users each send one report of an eps0-LDP randomizer, and the reports
// are shuffled. The analysis reduces the shuffled output, for two datasets
// that differ in user 1, to a pair of counts: each other user is, with
// probability e^-eps0, a "clone" that reports like user 1 on either input
// (half the time each), so with
//   C ~ Bin(n - 1, e^-eps0),  A ~ Bin(C, 1/2),  alpha = e^eps0 / (1 + e^eps0),
// the shuffled output is a post-processing of (K, C) where
//   P:  K = A + 1 with probability 1 - alpha, else K = A      (user 1 has x1)
//   Q:  K = A + 1 with probability alpha,     else K = A      (user 1 has x1')
// The shuffled output is (eps, delta)-DP if the hockey-stick divergence
//   D_{e^eps}(P || Q) = sum_{c,k} max(0, P(k, c) - e^eps Q(k, c))
// (and the same with P and Q swapped) is at most delta. Given C = c, the
// ratio P/Q at k falls as k grows (alpha > 1/2 and Bin(c, 1/2)(k-1)/(k)
// grows with k), and Q(k | c) = P(c + 1 - k | c), so both directions agree.
//
// We sum exactly, c by c and k by k, over windows of C and of A | C outside
// which the remaining mass is bounded by geometric tails (the pmf ratios of
// a binomial fall monotonically past its mode). That mass is counted as
// lost in the upper bound and as a possible gain in the lower bound, so the
// true divergence of the analysis lies in [lower, upper], whose width is
// below 1e-6 delta. A bisection over eps then brackets the smallest eps of
// the analysis: epsilon_upper is sound (the divergence there is at most
// delta); epsilon_lower says how much tighter the analysis cannot get.
// Published example (their code brackets it with steps of 100 in c): n =
// 100,000, eps0 = 4, delta = 1e-6 gives eps between 0.1675 and 0.1728; the
// exact sum gives 0.16977.
#ifndef FEDLDP_PRIVACY_SHUFFLE_NUMERICAL_H_
#define FEDLDP_PRIVACY_SHUFFLE_NUMERICAL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "fedldp/base/status.h"

namespace fedldp {

// Which decomposition of an eps0-LDP randomizer the pair rests on: how
// likely each other user is a clone (of either input, half the time each).
//   kClones          Feldman, McMillan & Talwar (FOCS 2021): e^-eps0.
//   kVariationRatio  Wang et al., "Privacy Amplification via Shuffling:
//                    Unified, Simplified, and Tightened" (VLDB 2024), with
//                    the parameters proven for any eps0-LDP randomizer
//                    (p = q = e^eps0, beta = (e^eps0 - 1) / (e^eps0 + 1), so
//                    alpha = beta / (p - 1) = 1 / (e^eps0 + 1)): each other
//                    user is a clone of x1 with r0 = alpha p / q = alpha and
//                    of x1' with r1 = alpha, 2 / (e^eps0 + 1) in all, and
//                    user 1 is a clone always (its blanket weight 1 - alpha
//                    - alpha p is 0), reporting x1 with probability
//                    e^eps0 / (e^eps0 + 1): the pair above with the larger
//                    clone rate (2 / (e^eps0 + 1) > e^-eps0 for eps0 > 0).
//                    Mechanism-specific parameters (a smaller beta: PM,
//                    Laplace) give user 1 a blanket weight, another pair,
//                    not computed here.
enum class ShuffleReduction { kClones, kVariationRatio };
// Each other user's probability of being a clone under `bound`.
double CloneRate(ShuffleReduction bound, double eps0);
// Its key on command lines ("fmt", "variation-ratio"), and back (an error
// names the keys); its name in statements.
std::string ShuffleReductionKey(ShuffleReduction bound);
Result<ShuffleReduction> ParseShuffleReduction(std::string_view key);
std::string ReductionName(ShuffleReduction bound);

struct DeltaBracket {
  double lower = 0;
  double upper = 0;
};
// The divergence of the analysis at `eps`, bracketed. `tolerance`: the
// mass left out of the windows is at most this (it widens the bracket).
DeltaBracket ShuffleCloneDelta(std::uint64_t n, double eps0, double eps, double tolerance,
                               ShuffleReduction bound = ShuffleReduction::kClones);

struct NumericalShuffleBound {
  double epsilon_lower = 0;  // the analysis cannot prove less than this
  double epsilon_upper = 0;  // proven: the shuffled output is (epsilon_upper, delta)-DP
  double delta = 0;
};
// n >= 1 reports, eps0 > 0 finite, delta in [1e-12, 1) (below, double
// rounding would matter). Refuses a computation of over ~1e10 terms (n
// e^-eps0 in the millions): use the closed form there.
Result<NumericalShuffleBound> NumericalShuffleEpsilon(
    std::uint64_t n, double eps0, double delta, ShuffleReduction bound = ShuffleReduction::kClones);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_SHUFFLE_NUMERICAL_H_
