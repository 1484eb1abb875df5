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
// We sum exactly, c by c, over a window of C outside which the remaining
// mass is bounded by geometric tails (the pmf ratios of a binomial fall
// monotonically past its mode). Given c, P > e^eps Q only for k up to a
// point found in closed form, below which the terms fall at least
// geometrically: summed from there down until the rest is bounded below the
// tolerance (about log(1 / tolerance) / (1 - ratio) terms whatever c). What
// is left out counts as lost in the upper bound and as a possible gain in
// the lower bound, so the true divergence of the analysis lies in [lower,
// upper], whose width is below 1e-6 delta. Rounding is bounded too:
// log-gamma's few ulps of values near n log n move each computed
// probability by a relative error (1e-6 at n = 1e8) that widens the bracket
// by as much. A bisection over eps then brackets the smallest eps of the
// analysis: epsilon_upper is sound (the divergence there is at most delta);
// epsilon_lower says how much tighter the analysis cannot get. Published
// example (their code brackets it with steps of 100 in c): n = 100,000,
// eps0 = 4, delta = 1e-6 gives eps between 0.1675 and 0.1728; the exact sum
// gives 0.16977.
//
// Large n (every c of the window past ~5e7 window terms, n e^-eps0 past
// ~1e5): the divergence given C = c falls as c grows (one more clone adds a
// fair coin: post-processing), so C's window is cut into 256 blocks, each
// bounded above by its first c and below by its last. n = 1e8 takes under
// half a second (clone_pair.h; agrees with Wang et al.'s code at n = 1e7
// and 1e8). Past n ~ 1e11 (a window of C over 4e6 values) it refuses.
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
//                    The mechanism-specific parameters published with it
//                    (a smaller beta: PM, Laplace, k-ary response) give
//                    user 1 a blanket part and treat it as the others'
//                    blankets; exact probabilities refute that pair
//                    (shuffled 3-ary response, n = 10, eps0 = 1: it
//                    states (0.941, 1e-6), the output's delta there is
//                    2.3e-4; tests/privacy/shuffle_numerical_test.cc).
//                    Revealing whether user 1 is blanket makes it sound,
//                    but never tighter than the generic pair (PM, n = 1e5,
//                    eps0 = 4: 0.1244 against 0.1182): every fedldp
//                    randomizer (PrivUnitG, FastProjUnit, PM, HM, Duchi,
//                    two-point) is stated with the generic parameters.
enum class ShuffleReduction { kClones, kVariationRatio };
// The tightest proven, every statement's default ("best" on command
// lines): the variation-ratio pair has more clones for every eps0 > 0
// (2 / (e^eps0 + 1) > e^-eps0) and the divergence falls as clones grow,
// so its bound is never above FMT's (NumericalShuffle.TheVariationRatioBound
// IsNeverAboveFmts checks it over a grid).
inline constexpr ShuffleReduction kTightestShuffleBound = ShuffleReduction::kVariationRatio;
// Each other user's probability of being a clone under `bound`.
double CloneRate(ShuffleReduction bound, double eps0);
// Its key on command lines ("fmt", "variation-ratio"), and back ("best"
// too: kTightestShuffleBound; an error names the keys); its name in
// statements.
inline constexpr std::string_view kBestShuffleBoundKey = "best";
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
                               ShuffleReduction bound = kTightestShuffleBound);

struct NumericalShuffleBound {
  double epsilon_lower = 0;  // the analysis cannot prove less than this
  double epsilon_upper = 0;  // proven: the shuffled output is (epsilon_upper, delta)-DP
  double delta = 0;
};
// n >= 1 reports, eps0 > 0 finite, delta in [1e-12, 1) (below, double
// rounding would matter), n up to about 1e11.
Result<NumericalShuffleBound> NumericalShuffleEpsilon(
    std::uint64_t n, double eps0, double delta, ShuffleReduction bound = kTightestShuffleBound);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_SHUFFLE_NUMERICAL_H_
