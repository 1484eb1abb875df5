// The PLD accountant of shuffled rounds, against what is known exactly:
// randomized response composed R times (a binomial sum), and one shuffled
// round against the clone analysis's exact divergence (shuffle_numerical).
#include "fedldp/privacy/shuffle_pld.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "fedldp/privacy/composition.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp {
namespace {

// R-fold randomized response at eps: L = eps (2K - R), K ~ Bin(R, alpha).
double ExactRrDelta(double eps, int rounds, double at) {
  const double alpha = 1 / (1 + std::exp(-eps));
  double delta = 0;
  for (int k = 0; k <= rounds; ++k) {
    const double pmf =
        std::exp(std::lgamma(rounds + 1) - std::lgamma(k + 1) - std::lgamma(rounds - k + 1) +
                 k * std::log(alpha) + (rounds - k) * std::log1p(-alpha));
    const double loss = eps * (2 * k - rounds);
    if (loss > at) delta += pmf * -std::expm1(at - loss);
  }
  return delta;
}

TEST(ShufflePld, ComposesRandomizedResponseExactlyOnItsGrid) {
  const double eps = 0.5, grid = eps / 64;  // losses exactly on the grid
  const double alpha = 1 / (1 + std::exp(-eps));
  const std::vector<std::pair<double, double>> atoms = {{eps, alpha}, {-eps, 1 - alpha}};
  for (const int rounds : {1, 2, 7, 10}) {
    const Pld pld = ComposePld(PldFromAtoms(atoms, grid), rounds, 0);
    for (double at = 0; at < 3; at += 8 * grid) {
      EXPECT_NEAR(PldDelta(pld, at), ExactRrDelta(eps, rounds, at), 1e-13)
          << rounds << " rounds, eps " << at;
    }
  }
}

// Off the grid, every loss is rounded up: delta is never below the exact
// one, and at most the exact one at eps - R h.
TEST(ShufflePld, RoundsLossesUpNeverDown) {
  const double eps = 0.3, grid = 0.25;
  const double alpha = 1 / (1 + std::exp(-eps));
  const std::vector<std::pair<double, double>> atoms = {{eps, alpha}, {-eps, 1 - alpha}};
  const int rounds = 6;
  const Pld pld = ComposePld(PldFromAtoms(atoms, grid), rounds, 0);
  for (double at = 0; at < 2; at += 0.05) {
    const double d = PldDelta(pld, at);
    EXPECT_GE(d, ExactRrDelta(eps, rounds, at) - 1e-15) << at;
    EXPECT_LE(d, ExactRrDelta(eps, rounds, at - rounds * grid) + 1e-15) << at;
  }
}

// One shuffled round: the PLD's delta lies between the clone analysis's
// exact divergence (both directions) at eps and at eps - h (give or take
// the windows' leftovers, at most the tolerance for C and as much for A |
// C, which the PLD counts as infinite loss).
TEST(ShufflePld, OneRoundAgreesWithTheCloneAnalysis) {
  const double grid = 1e-3, tolerance = 1e-12;
  for (const auto& [n, eps0] : std::vector<std::pair<std::uint64_t, double>>{
           {1000, 2.0}, {20000, 4.7}, {3256, 4.0}, {10, 1.0}}) {
    const Pld pld = ShuffledRoundPld(n, eps0, grid, tolerance).value();
    for (const double at : {0.05, 0.2, 0.5, 1.0}) {
      const double d = PldDelta(pld, at);
      EXPECT_GE(d, ShuffleCloneDelta(n, eps0, at, tolerance).lower - 1e-12)
          << "n " << n << ", eps0 " << eps0 << ", eps " << at;
      EXPECT_LE(d, ShuffleCloneDelta(n, eps0, at - grid, tolerance).upper + 3 * tolerance)
          << "n " << n << ", eps0 " << eps0 << ", eps " << at;
    }
  }
}

// Over rounds, the exact composition is never looser than the optimal
// composition of one (eps_r, delta_r) point per round, and here (8 rounds of
// 20,000 reports at eps0 4.7, MNIST's) far tighter.
TEST(ShufflePld, ComposedRoundsAreTighterThanComposingOnePointPerRound) {
  const std::uint64_t n = 20000, rounds = 8;
  const double eps0 = 4.7, delta = 1e-5;
  const Pld round = ShuffledRoundPld(n, eps0, 1e-3, 1e-3 * delta).value();
  const Pld run = ComposePld(round, rounds, 1e-3 * delta);
  const double pld = PldEpsilon(run, delta);
  const double per_round =
      NumericalShuffleEpsilon(n, eps0, delta / (2 * rounds)).value().epsilon_upper;
  const double optimal =
      OptimalComposition(per_round, delta / (2 * rounds), rounds, delta).value().epsilon;
  std::printf("8 rounds: PLD %.4f, optimal composition of (%.4f, %.2g) %.4f\n", pld, per_round,
              delta / (2 * rounds), optimal);
  EXPECT_LT(pld, optimal);
  EXPECT_GT(pld, NumericalShuffleEpsilon(n, eps0, delta).value().epsilon_lower);
}

}  // namespace
}  // namespace fedldp
