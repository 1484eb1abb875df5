// The PLD accountant of shuffled rounds, against what is known exactly:
// randomized response composed R times (a binomial sum), and one shuffled
// round against the clone analysis's exact divergence (shuffle_numerical).
#include "fedldp/privacy/shuffle_pld.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "fedldp/audit/participation_checks.h"
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

// Randomized response at eps: P's atoms, loss eps with e^eps / (1 + e^eps).
std::vector<std::pair<double, double>> RrAtoms(double eps) {
  const double alpha = 1 / (1 + std::exp(-eps));
  return {{eps, alpha}, {-eps, 1 - alpha}};
}

TEST(ShufflePld, ComposesRandomizedResponseExactlyOnItsGrid) {
  const double eps = 0.5, grid = eps / 64;  // losses exactly on the grid
  const auto atoms = RrAtoms(eps);
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
  const auto atoms = RrAtoms(eps);
  const int rounds = 6;
  const Pld pld = ComposePld(PldFromAtoms(atoms, grid), rounds, 0);
  for (double at = 0; at < 2; at += 0.05) {
    const double d = PldDelta(pld, at);
    EXPECT_GE(d, ExactRrDelta(eps, rounds, at) - 1e-15) << at;
    EXPECT_LE(d, ExactRrDelta(eps, rounds, at - rounds * grid) + 1e-15) << at;
  }
}

// Connected through its deltas at the grid points (issue 45: rounding every
// loss up added about h / 2 to each round), randomized response off the
// grid composed R times is never below the exact delta, and within a
// fraction of a grid step of it, where rounding up sits R h / 2 too high.
TEST(ShufflePld, AConnectedPairHoldsAndAddsNoLossPerRound) {
  const double eps = 0.3, grid = 0.05;
  const auto atoms = RrAtoms(eps);
  const int rounds = 40;
  const Pld connected = ComposePld(SymmetricPldFromAtoms(atoms, grid), rounds, 0);
  const Pld rounded_up = ComposePld(PldFromAtoms(atoms, grid), rounds, 0);
  for (double at = 0; at < 4; at += 0.1) {
    const double exact = ExactRrDelta(eps, rounds, at);
    EXPECT_GE(PldDelta(connected, at), exact * (1 - 1e-12) - 1e-15) << at;
    EXPECT_LE(PldDelta(connected, at), ExactRrDelta(eps, rounds, at - grid / 2) + 1e-15) << at;
    // Rounded up (losses 0.35 for 0.3), the curve sits several steps off.
    if (exact > 1e-6) {
      EXPECT_GT(PldDelta(rounded_up, at), ExactRrDelta(eps, rounds, at - 5 * grid)) << at;
    }
  }
  // Shuffled rounds at MNIST's budget: 512 rounds of 48,000 reports at eps0
  // 3.138 state 2.7122 on the grid of 1e-3 and on one of 5e-4 alike (the
  // losses rounded up stated 2.966 on 1e-3, 2.738 on 1e-4).
  const auto coarse = ShuffledRunPld(48000, 3.138, 1, 512, 1e-3, 2e-11, 1e-8);
  const auto fine = ShuffledRunPld(48000, 3.138, 1, 512, 5e-4, 2e-11, 1e-8);
  ASSERT_TRUE(coarse && fine);
  EXPECT_NEAR(PldEpsilon(*coarse, 1e-5), PldEpsilon(*fine, 1e-5), 1e-4);
  EXPECT_NEAR(PldEpsilon(*coarse, 1e-5), 2.7122, 1e-4);
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

// The sampled round's PLD (C_q of the clone pair) is never below the exact
// delta of sampled shuffled randomized response, over one round and two
// composed, for every mix of the others' bits; it is near tight at eps0 4
// (within 1 % for m = 5 at R = 1); with a sampling rate 20 % too low it
// falls below the exact delta.
TEST(ShufflePld, SampledRoundsHoldAgainstExactSampledShuffledResponse) {
  for (const double eps0 : {1.0, 4.0}) {
    for (const int users : {20, 60}) {
      for (const int m : {5, 10}) {
        const double q = static_cast<double>(m) / users;
        const Pld base = ShuffledRoundPld(m, eps0, 1e-3, 1e-12).value();
        const Pld one = SampledRoundPld(base, q), two = ComposePld(one, 2, 1e-13);
        const Pld low = SampledRoundPld(base, 0.8 * q);
        bool low_fails = false;
        double closest = 1e9;
        for (const double eps : {0.0, 0.05, 0.1, 0.2, 0.4, 0.8}) {
          const double d1 = audit::SampledResponseDelta(users, m, eps0, eps, 1),
                       d2 = audit::SampledResponseDelta(users, m, eps0, eps, 2);
          EXPECT_GE(PldDelta(one, eps), d1 * (1 - 1e-9)) << eps0 << " " << users << " " << m;
          EXPECT_GE(PldDelta(two, eps), d2 * (1 - 1e-9)) << eps0 << " " << users << " " << m;
          if (PldDelta(low, eps) < d1 * (1 - 1e-6)) low_fails = true;
          if (d1 > 1e-9) closest = std::min(closest, PldDelta(one, eps) / d1);
        }
        EXPECT_TRUE(low_fails) << eps0 << " " << users << " " << m;
        if (eps0 == 4 && m == 5) {
          EXPECT_LT(closest, 1.01) << users;
        }
      }
    }
  }
}

// The Poisson round's PLD (a mixture over the count of C_q-sampled clone
// pairs) is never below the exact delta of Poisson-sampled shuffled
// randomized response, for every mix of the others' bits, whether every
// count is its own block or counts share blocks; with a rate 20 % too low
// it falls below the exact delta. Near tight at eps0 4 (within 1 %).
TEST(ShufflePld, PoissonRoundsHoldAgainstExactPoissonShuffledResponse) {
  for (const double eps0 : {1.0, 4.0}) {
    for (const double q : {0.1, 0.3}) {
      const int users = 24;
      const Pld own = PoissonRoundPld(users, q, eps0, 1e-3, 1e-12).value();  // a block per m
      const Pld shared =
          PoissonRoundPld(users, q, eps0, 1e-3, 1e-12, kTightestShuffleBound, 3).value();
      // Where the bound is looser (eps0 1: within 9-18 %), a rate half as large.
      const double wrong = eps0 == 4 ? 0.8 : 0.5;
      const Pld low = PoissonRoundPld(users, wrong * q, eps0, 1e-3, 1e-12).value();
      bool low_fails = false;
      double closest = 1e9;
      for (const double eps : {0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6}) {
        const double d = audit::PoissonResponseDelta(users, q, eps0, eps);
        EXPECT_GE(PldDelta(own, eps), d * (1 - 1e-9)) << eps0 << " " << q << " " << eps;
        EXPECT_GE(PldDelta(shared, eps), PldDelta(own, eps) * (1 - 1e-9)) << eps0 << " " << q;
        if (PldDelta(low, eps) < d * (1 - 1e-6)) low_fails = true;
        if (d > 1e-9) closest = std::min(closest, PldDelta(own, eps) / d);
      }
      EXPECT_TRUE(low_fails) << eps0 << " " << q;
      if (eps0 == 4) {
        EXPECT_LT(closest, 1.01) << q;  // near tight: 1.0008 at q 0.1, 1.0072 at 0.3
      }
    }
  }
}

// An epoch of random allocation is as private as one shuffle of all its N
// reports, whatever the rounds' sizes and however each round's randomizer
// depends on the rounds before (docs/shuffle-accounting.md, "Random
// allocation"): the N-report round's PLD is never below the exact delta of
// the epoch's counts, and within 0.1 % of it at its closest; the PLD of
// N + N/2 reports falls below it (the check has teeth).
TEST(ShufflePld, AnAllocatedEpochHoldsAsOneShuffleOfItsReports) {
  const std::vector<std::vector<int>> epochs = {{4, 4, 4}, {6, 6}, {3, 5, 4}, {2, 2, 2, 2, 2, 2}};
  for (const double eps0 : {1.0, 3.0}) {
    for (const auto& sizes : epochs) {
      for (const bool adaptive : {false, true}) {
        const int n = 12;
        const Pld whole = ShuffledRoundPld(n, eps0, 1e-3, 1e-12).value();
        const Pld more = ShuffledRoundPld(n + n / 2, eps0, 1e-3, 1e-12).value();
        bool more_fails = false;
        double closest = 1e9;
        const std::vector<double> epsilons = {0.0, 0.1, 0.2, 0.4, 0.8, 1.6};
        const std::vector<double> deltas =
            audit::AllocatedResponseDeltas(sizes, eps0, adaptive, epsilons);
        for (std::size_t i = 0; i < epsilons.size(); ++i) {
          const double eps = epsilons[i], d = deltas[i];
          EXPECT_GE(PldDelta(whole, eps), d * (1 - 1e-9))
              << eps0 << " " << sizes.size() << " rounds, adaptive " << adaptive << " " << eps;
          if (PldDelta(more, eps) < d * (1 - 1e-6)) more_fails = true;
          if (d > 1e-9) closest = std::min(closest, PldDelta(whole, eps) / d);
        }
        EXPECT_TRUE(more_fails) << eps0 << " " << sizes.size() << " " << adaptive;
        // Tight: within 1e-5 (eps0 1) and 3.3e-4 (eps0 3) where the others all hold one bit.
        EXPECT_LT(closest, 1.001) << eps0 << " " << sizes.size() << " " << adaptive;
      }
    }
  }
}

// fedldp audit's participation rows: each rule's curve holds against its
// exact randomized response, within 20 % where closest (near tight).
TEST(ShufflePld, TheAuditsParticipationChecksHoldNearTight) {
  for (const double eps0 : {0.5, 2.0}) {
    for (const auto& v : {audit::CheckSampledRound(eps0), audit::CheckPoissonRound(eps0),
                          audit::CheckAllocatedEpoch(eps0)}) {
      EXPECT_TRUE(v.pass) << v.reason;
      EXPECT_GE(v.value, 1 - 1e-9) << v.reason;
      EXPECT_LT(v.value, 1.2) << v.reason;
    }
  }
  // At the audit's largest eps0 the exact delta at eps = eps0 is rounding
  // (3e-13, e^8 times an ulp's worth of terms) where the bound is 6e-14:
  // the check allows the exact sums' rounding at e^eps.
  EXPECT_TRUE(audit::CheckAllocatedEpoch(8).pass) << audit::CheckAllocatedEpoch(8).reason;
}

// A mixture keeps its components' losses and weights; weight missing from 1
// is infinite loss.
TEST(ShufflePld, MixPldWeighsItsComponents) {
  Pld a, b;
  a.first = -1, a.mass = {0.25, 0.75};
  b.first = 2, b.mass = {0.5}, b.infinite = 0.5;
  const std::vector<std::pair<double, Pld>> parts = {{0.5, a}, {0.4, b}};
  const Pld m = MixPld(parts);
  EXPECT_EQ(m.first, -1);
  ASSERT_EQ(m.mass.size(), 4u);
  EXPECT_DOUBLE_EQ(m.mass[0], 0.125);
  EXPECT_DOUBLE_EQ(m.mass[1], 0.375);
  EXPECT_DOUBLE_EQ(m.mass[2], 0);
  EXPECT_DOUBLE_EQ(m.mass[3], 0.2);
  EXPECT_DOUBLE_EQ(m.infinite, 0.2 + 0.1);
}

// q = 1 is the round itself; a larger rate never lowers delta; C_q is
// symmetric (P(-l) = e^-l P(l)) and a distribution.
TEST(ShufflePld, SampledRoundIsTheRoundAtRateOneAndGrowsWithTheRate) {
  const Pld base = ShuffledRoundPld(3000, 3, 1e-3, 1e-12).value();
  const Pld same = SampledRoundPld(base, 1);
  EXPECT_EQ(same.first, base.first);
  EXPECT_EQ(same.mass, base.mass);
  double previous = 0;
  for (const double q : {0.01, 0.1, 0.5, 0.9}) {
    const Pld s = SampledRoundPld(base, q);
    double total = s.infinite;
    for (std::size_t i = 0; i < s.mass.size(); ++i) {
      total += s.mass[i];
      const std::int64_t loss = s.first + static_cast<std::int64_t>(i);
      const std::size_t mirror = static_cast<std::size_t>(-loss - s.first);
      if (loss > 0 && mirror < s.mass.size()) {
        EXPECT_NEAR(s.mass[mirror], s.mass[i] * std::exp(-static_cast<double>(loss) * 1e-3), 1e-15);
      }
    }
    EXPECT_NEAR(total, 1, 1e-9) << q;
    const double d = PldDelta(s, 0.05);
    EXPECT_GT(d, previous) << q;
    EXPECT_LE(d, PldDelta(base, 0.05));
    previous = d;
  }
}

// The Gaussian mechanism's delta in closed form (Balle & Wang, ICML 2018):
// Phi(mu / 2 - eps / mu) - e^eps Phi(-mu / 2 - eps / mu), mu = 1 / sigma.
// Its connected PLD is never below it, composed or not, and at most the
// exact delta of a composition half a grid step of eps per round lower; a
// Gaussian of 10 % more noise falls below it.
TEST(ShufflePld, GaussianPldHoldsAgainstTheClosedForm) {
  const auto exact = [](double sigma, double eps) {
    const auto phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
    const double mu = 1 / sigma;
    return phi(mu / 2 - eps / mu) - std::exp(eps) * phi(-mu / 2 - eps / mu);
  };
  const double grid = 2e-3;
  for (const double sigma : {0.5, 1.0, 4.0}) {
    // Composed 4 times where its losses spread less (the square of the support).
    for (int times = 1; times <= (sigma < 1 ? 1 : 4); times *= 4) {
      // Composed, the Gaussian of sigma / sqrt(times).
      const double composed = sigma / std::sqrt(times);
      const Pld pld = ComposePld(*GaussianPld(sigma, grid), times, 1e-15);
      const Pld wider = ComposePld(*GaussianPld(1.1 * sigma, grid), times, 1e-15);
      bool below = false;
      for (double eps = 0; eps < 6; eps += 0.05) {
        const double d = PldDelta(pld, eps);
        EXPECT_GE(d, exact(composed, eps) - 1e-14) << sigma << " " << times << " at " << eps;
        EXPECT_LE(d, exact(composed, eps - times * grid / 2) + 1e-13) << sigma << " at " << eps;
        below = below || PldDelta(wider, eps) < exact(composed, eps) - 1e-9;
      }
      EXPECT_TRUE(below) << sigma << " " << times;
    }
  }
  EXPECT_FALSE(GaussianPld(0, grid).ok());
  EXPECT_FALSE(GaussianPld(1, 0).ok());
}

// Past eps0 of about 37, e^eps0 / (1 + e^eps0) rounds to 1, and a round
// built from 1 minus it lost every loss to infinity (a round at eps0 40
// stated nothing); the other side is now computed as 1 / (1 + e^eps0).
// Past 700 the ratios leave a double's range, and the round is refused
// (the per-round statement stands) rather than stated as NaN.
TEST(ShufflePld, ALargeLocalEpsilonKeepsItsLosses) {
  for (const double eps0 : {40.0, 100.0}) {
    const auto round = ShuffledRoundPld(1000, eps0, 1e-3, 1e-12);
    ASSERT_TRUE(round.ok()) << round.error();
    EXPECT_LT(round->infinite, 1e-12) << eps0;
    EXPECT_LE(PldEpsilon(*round, 1e-6), eps0 + 1e-3) << eps0;
  }
  EXPECT_FALSE(ShuffledRoundPld(1000, 800, 1e-3, 1e-12).ok());
}

// Randomized response at eps0 composed 100 times has losses up to 100 eps0:
// its eps is found wherever they lie (it was searched in [0, 200] only, so
// a run past 200 was stated infinite), and is infinite only when the
// infinite mass is above delta.
TEST(ShufflePld, TheEpsilonIsFoundPastAnyFixedRange) {
  for (const double eps0 : {1.0, 3.0, 6.0}) {
    const double p = 1 / (1 + std::exp(-eps0));
    const std::pair<double, double> atoms[] = {{eps0, p}, {-eps0, 1 - p}};
    const Pld run = ComposePld(PldFromAtoms(atoms, 1e-3), 100, 0);
    // delta(eps) of k of 100 rounds losing eps0, summed exactly.
    const auto exact = [&](double eps) {
      double delta = 0;
      for (int k = 0; k <= 100; ++k) {
        const double loss = (2 * k - 100) * eps0;
        const double pk = std::exp(std::lgamma(101) - std::lgamma(k + 1) - std::lgamma(101 - k) +
                                   k * std::log(p) + (100 - k) * std::log1p(-p));
        if (loss > eps) delta += pk * -std::expm1(eps - loss);
      }
      return delta;
    };
    const double eps = PldEpsilon(run, 1e-6);
    ASSERT_TRUE(std::isfinite(eps)) << eps0;
    EXPECT_LE(exact(eps), 1e-6 * (1 + 1e-6)) << eps0;
    EXPECT_GT(exact(eps - 0.2), 1e-6) << eps0;  // within a grid step per round
  }
  Pld lost;
  lost.grid = 1e-3;
  lost.mass = {0.5};
  lost.infinite = 2e-6;
  EXPECT_EQ(PldEpsilon(lost, 1e-6), std::numeric_limits<double>::infinity());
  EXPECT_EQ(PldEpsilon(lost, 3e-6), 0);
}

}  // namespace
}  // namespace fedldp
