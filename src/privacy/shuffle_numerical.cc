#include "fedldp/privacy/shuffle_numerical.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "clone_pair.h"
#include "fedldp/base/bisect.h"

namespace fedldp {

namespace {

using namespace shuffle_internal;

std::string Text(double value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

}  // namespace

double CloneRate(ShuffleReduction bound, double eps0) {
  return bound == ShuffleReduction::kVariationRatio ? 2 / (std::exp(eps0) + 1) : std::exp(-eps0);
}

std::string ShuffleReductionKey(ShuffleReduction bound) {
  return bound == ShuffleReduction::kVariationRatio ? "variation-ratio" : "fmt";
}

Result<ShuffleReduction> ParseShuffleReduction(std::string_view key) {
  if (key == kBestShuffleBoundKey) return kTightestShuffleBound;
  for (const auto bound : {ShuffleReduction::kClones, ShuffleReduction::kVariationRatio}) {
    if (key == ShuffleReductionKey(bound)) return bound;
  }
  std::string why = "no shuffle bound is called '";  // built in steps: GCC 12's -Wrestrict
  why.append(key).append("': ");
  why.append(ShuffleReductionKey(ShuffleReduction::kClones)).append(", ");
  why.append(ShuffleReductionKey(ShuffleReduction::kVariationRatio)).append(" or ");
  why.append(kBestShuffleBoundKey).append(" (the tightest proven)");
  return Error{std::move(why)};
}

std::string ReductionName(ShuffleReduction bound) {
  return bound == ShuffleReduction::kVariationRatio ? "variation-ratio, Wang et al."
                                                    : "Feldman-McMillan-Talwar";
}

namespace shuffle_internal {

DeltaBracket PairDelta(std::uint64_t n, const ClonePair& pair, double eps, double tolerance,
                       std::uint64_t width) {
  const double e = std::exp(eps);
  const CloneBlocks blocks = BlocksOf(n, pair, tolerance, width);
  double lower = 0, upper = blocks.outside;
  for (const CloneBlock& b : blocks.blocks) {
    // A block's fewest clones bound it above, its most below.
    upper += b.mass * PrefixDivergence(b.lo, pair.favour, pair.against, e, tolerance).upper;
    lower += b.mass * PrefixDivergence(b.hi, pair.favour, pair.against, e, tolerance).lower;
  }
  return {lower * (1 - blocks.rounding), std::min(1.0, upper * (1 + blocks.rounding))};
}

}  // namespace shuffle_internal

DeltaBracket ShuffleCloneDelta(std::uint64_t n, double eps0, double eps, double tolerance,
                               ShuffleReduction bound) {
  return PairDelta(n, PairOf(bound, eps0), eps, tolerance);
}

Result<NumericalShuffleBound> NumericalShuffleEpsilon(std::uint64_t n, double eps0, double delta,
                                                      ShuffleReduction bound) {
  if (n < 1) return Error{"the number of reports must be at least 1"};
  if (!(std::isfinite(eps0) && eps0 > 0)) {
    return Error{"the local epsilon must be a positive number, not " + Text(eps0)};
  }
  FEDLDP_RETURN_IF_ERROR(CheckDelta(delta));
  if (auto pair = CheckedPair(n, bound, eps0); !pair.ok()) return Error{pair.error()};
  const double tolerance = 1e-6 * delta;
  const auto bisect = [&](auto holds) {  // the smallest eps in [0, eps0] where holds(eps)
    if (holds(0.0)) return 0.0;
    return Bisect(0.0, eps0, holds, 0, 1e-7).hi;
  };
  NumericalShuffleBound b;
  b.delta = delta;
  // Sound: the divergence's upper bound is at most delta there. (At eps0
  // the shuffled output is eps0-DP outright: post-processing.)
  b.epsilon_upper = bisect(
      [&](double eps) { return ShuffleCloneDelta(n, eps0, eps, tolerance, bound).upper <= delta; });
  // Below this the divergence's lower bound exceeds delta: no tighter eps
  // follows from the analysis.
  const double above = bisect(
      [&](double eps) { return ShuffleCloneDelta(n, eps0, eps, tolerance, bound).lower <= delta; });
  b.epsilon_lower = std::max(0.0, above - 1e-7);
  return b;
}

}  // namespace fedldp
