// The shuffle analyses' pair and its sums (src/privacy/clone_pair.h): the
// prefix sum against the plain sum, blocks against single clones.
#include "clone_pair.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace fedldp::shuffle_internal {
namespace {

// D_e(P || Q) of the pair given m clones shown, summed over every k.
double PlainDivergence(std::uint64_t m, double a, double e) {
  const double c = static_cast<double>(m - 1);
  const auto b = [&](double k) {
    if (k < 0 || k > c) return 0.0;
    return std::exp(std::lgamma(c + 1) - std::lgamma(k + 1) - std::lgamma(c - k + 1) -
                    c * std::log(2.0));
  };
  double d = 0;
  for (double k = 0; k <= c + 1; k += 1) {
    const double p = a * b(k) + (1 - a) * b(k - 1), q = (1 - a) * b(k) + a * b(k - 1);
    d += std::max(0.0, p - e * q);
  }
  return d;
}

TEST(ClonePair, ThePrefixSumBracketsThePlainSum) {
  for (const std::uint64_t m : {1u, 2u, 3u, 10u, 1000u, 100000u}) {
    for (const double a : {0.5, 0.62, 0.731, 0.95}) {
      for (const double e : {1.0, 1.001, 1.2, 2.0}) {
        const double plain = PlainDivergence(m, a, e);
        const DeltaBracket d = PrefixDivergence(m, a, 1 - a, e, 1e-16);
        // The plain sum's own rounding: about 1e-16 a term.
        const double slack = 1e-16 * static_cast<double>(m) + 1e-15 * plain;
        EXPECT_LE(d.lower, plain + slack) << m << " " << a << " " << e;
        EXPECT_GE(d.upper, plain - slack) << m << " " << a << " " << e;
        EXPECT_LE(d.upper - d.lower, 1e-8 * std::max(plain, 1e-4)) << m << " " << a << " " << e;
      }
    }
  }
}

TEST(ClonePair, TheDivergenceFallsWithClonesAndRisesWithFavour) {
  for (const double e : {1.0, 1.05}) {
    double before = 1;
    for (std::uint64_t m = 1; m < 3000; m += 97) {
      const double d = PrefixDivergence(m, 0.8, 1 - 0.8, e, 1e-16).upper;
      EXPECT_LE(d, before * (1 + 1e-12)) << m;
      before = d;
    }
    before = 0;
    for (double a = 0.5; a < 1; a += 0.05) {
      const double d = PrefixDivergence(400, a, 1 - a, e, 1e-16).lower;
      EXPECT_GE(d, before * (1 - 1e-12)) << a;
      before = d;
    }
  }
}

// Past eps0 of about 37, a = e^eps0 / (1 + e^eps0) rounds to 1: the
// divergence is taken from `against`, not 1 - a (which made it 1 for any
// e, so a round at eps0 40 was stated no better than at infinity).
TEST(ClonePair, TheDivergenceKeepsWhatFavourRoundsAway) {
  for (const double eps0 : {38.0, 40.0, 45.0}) {
    const ClonePair pair = PairOf(ShuffleReduction::kClones, eps0);
    ASSERT_EQ(pair.favour, 1.0);
    for (const double eps : {eps0 - 2, eps0 - 0.5}) {
      // One clone shown (user 1's own): P = (a, 1 - a), Q = (1 - a, a).
      const double exact = -std::expm1(eps - eps0) / (1 + std::exp(-eps0));
      const DeltaBracket d = PrefixDivergence(1, pair.favour, pair.against, std::exp(eps), 1e-16);
      EXPECT_NEAR(d.upper, exact, 1e-12 * exact) << eps0 << " " << eps;
      EXPECT_LE(d.lower, d.upper);
    }
  }
}

TEST(ClonePair, BlocksBracketTheSumOverEachCloneCount) {
  for (const auto bound : {ShuffleReduction::kClones, ShuffleReduction::kVariationRatio}) {
    for (const double eps0 : {1.0, 4.0}) {
      const ClonePair pair = PairOf(bound, eps0);
      for (const std::uint64_t n : {2000u, 30000u}) {
        for (const double eps : {0.02, 0.1, 0.3}) {
          const DeltaBracket exact = PairDelta(n, pair, eps, 1e-15, 1);
          for (const std::uint64_t width : {7u, 61u}) {
            const DeltaBracket blocked = PairDelta(n, pair, eps, 1e-15, width);
            const auto where = [&] {
              return ::testing::Message() << static_cast<int>(bound) << " " << eps0 << " " << n
                                          << " " << eps << " width " << width;
            };
            EXPECT_GE(blocked.upper, exact.upper * (1 - 1e-9) - 1e-15) << where();
            EXPECT_LE(blocked.lower, exact.lower * (1 + 1e-9) + 1e-15) << where();
            // Tight where blocks are narrow against the clones' spread
            // (sd 40 to 80 at n = 30,000).
            if (n == 30000 && width == 7) {
              EXPECT_LE(blocked.upper, exact.upper * 1.05 + 1e-13) << where();
            }
          }
        }
      }
    }
  }
}

TEST(ClonePair, TheMassesOfTheBlocksAddUpToOne) {
  for (const auto bound : {ShuffleReduction::kClones, ShuffleReduction::kVariationRatio}) {
    for (const std::uint64_t width : {0u, 1u, 13u}) {
      const CloneBlocks blocks = BlocksOf(50000, PairOf(bound, 2), 1e-12, width);
      double mass = blocks.outside;
      for (const CloneBlock& b : blocks.blocks) mass += b.mass;
      EXPECT_NEAR(mass, 1, blocks.rounding + 1e-12) << width;
      EXPECT_LT(blocks.rounding, 1e-9);
    }
  }
}

TEST(ClonePair, AWindowPastReachIsRefused) {
  EXPECT_TRUE(CheckedPair(std::uint64_t{1} << 36, ShuffleReduction::kVariationRatio, 1).ok());
  EXPECT_FALSE(CheckedPair(std::uint64_t{1} << 50, ShuffleReduction::kVariationRatio, 1).ok());
}

}  // namespace
}  // namespace fedldp::shuffle_internal
