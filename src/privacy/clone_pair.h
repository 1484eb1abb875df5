// Internal to the privacy module: the pair the shuffle analyses reduce a
// round to, and the binomial windows their sums run over
// (shuffle_numerical.cc, shuffle_pld.cc).
//
// The pair (shuffle_numerical.h): each of the n - 1 other users is, with
// probability `rate`, a clone showing one of user 1's two sides, each half
// the time; user 1 shows its own side with probability `favour`. The
// output is a post-processing of (K, M): M the clones shown (user 1's
// included; M - 1 ~ Bin(n - 1, rate), the same for both inputs), K those
// showing x1's side. Given M = m the divergence falls as m grows (one more
// clone adds a fair coin: post-processing), so a block of m in [lo, hi] is
// dominated by the pair at lo and dominates the pair at hi.
#ifndef FEDLDP_SRC_PRIVACY_CLONE_PAIR_H_
#define FEDLDP_SRC_PRIVACY_CLONE_PAIR_H_

#include <cstdint>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp::shuffle_internal {

// Bin(trials, p) on [first, first + pmf.size()), a bound on its mass
// outside that window, and on the relative error of each computed value
// (the mode's log-gamma terms are large: at 1e8 trials their few ulps are
// about 1e-6 of it).
struct Window {
  std::uint64_t first = 0;
  std::vector<double> pmf;
  double outside = 0;
  double rounding = 0;
};

// From the mode outward, until the mass beyond each end is at most
// tolerance / 2.
void BinomialWindow(std::uint64_t trials, double p, double tolerance, Window& w);

struct ClonePair {
  double rate = 0;    // each other user is a clone
  double favour = 0;  // user 1 shows its own side: e^eps0 / (1 + e^eps0)
  // 1 - favour, as 1 / (1 + e^eps0): exact where favour rounds to 1 (eps0
  // past about 37), which 1 - favour would make 0.
  double against = 0;
};
// The pair of `bound` for eps0-LDP reports.
ClonePair PairOf(ShuffleReduction bound, double eps0);
// The same for n users, or why not: a window of clones past kMaxWindow.
Result<ClonePair> CheckedPair(std::uint64_t n, ShuffleReduction bound, double eps0);

// M's law in blocks of `width` (0: every m its own block where the exact
// sum is affordable, Terms at most kMaxTerms, else at most kBlocks blocks
// of equal width over the window).
struct CloneBlock {
  std::uint64_t lo = 0, hi = 0;  // M in [lo, hi]
  double mass = 0;
};
struct CloneBlocks {
  std::vector<CloneBlock> blocks;
  double outside = 0;   // M's mass outside them, at most tolerance
  double rounding = 0;  // each mass's relative error, at most
};
CloneBlocks BlocksOf(std::uint64_t n, const ClonePair& pair, double tolerance,
                     std::uint64_t width = 0);

// ShuffleCloneDelta for a pair, in blocks of `width` (as BlocksOf), each
// by PrefixDivergence.
DeltaBracket PairDelta(std::uint64_t n, const ClonePair& pair, double eps, double tolerance,
                       std::uint64_t width = 0);

// The pair given m >= 1 clones shown, user 1's side shown with probability
// a in [1/2, 1): P(k) = a b(k) + (1 - a) b(k - 1), Q its mirror, b =
// Bin(m - 1, 1/2); `against` is 1 - a, given (ClonePair::against) so that
// it keeps its value where a rounds to 1. Its divergence D_e(P || Q),
// bracketed, summed only where P > e Q (a prefix of k), from its last term
// down: work about log(1 / tolerance) / (1 - ratio) terms, whatever m.
DeltaBracket PrefixDivergence(std::uint64_t m, double a, double against, double e,
                              double tolerance);

// An estimate of the terms a sum over every c and the whole window of A |
// C takes (the PLD's), C ~ Bin(n - 1, rate), and the most taken on before
// C is cut into blocks.
double Terms(std::uint64_t n, double rate);
inline constexpr double kMaxTerms = 5e7;
inline constexpr std::size_t kBlocks = 256;
// The widest window of clones, 24 standard deviations (8 bytes a value).
inline constexpr double kMaxWindow = 4e6;

}  // namespace fedldp::shuffle_internal

#endif  // FEDLDP_SRC_PRIVACY_CLONE_PAIR_H_
