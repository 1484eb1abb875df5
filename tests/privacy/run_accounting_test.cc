// A client's privacy over a run: the per-round shuffle bound, the composition
// over rounds, the delta budget, and what is refused.
#include "fedldp/privacy/run_accounting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/privacy_record.h"
#include "fedldp/privacy/shuffle_pld.h"

namespace fedldp {
namespace {

// One round of n shuffled reports, stated at delta 1e-6.
RunPrivacyConfig OneShuffledRound(std::uint64_t n) {
  RunPrivacyConfig c;
  c.rounds = 1;
  c.shuffle = true;
  c.reports_per_round = n;
  c.delta = 1e-6;
  return c;
}

TEST(AccountRun, ShuffledRoundsComposeOptimallyWithinTheDeltaBudget) {
  RunPrivacyConfig c;
  c.local_epsilon = 4;
  c.rounds = 5;
  c.shuffle = true;
  c.reports_per_round = 10000;
  c.delta = 1e-6;
  const auto p = AccountRun(c).value();
  ASSERT_TRUE(p.shuffled);
  // Each round: the numerical bound at delta / (2 R).
  const auto round = NumericalShuffleEpsilon(10000, 4, 1e-7).value();
  EXPECT_EQ(p.round.epsilon_upper, round.epsilon_upper);
  EXPECT_EQ(p.round.delta, 1e-7);
  // Optimal composition of five (eps_r, 1e-7) rounds, within delta.
  EXPECT_LE(ComposedDelta(round.epsilon_upper, 1e-7, 5, p.total_points.epsilon), 1e-6);
  EXPECT_LE(p.total_points.epsilon, 5 * round.epsilon_upper * (1 + 1e-9));
  EXPECT_LT(p.total_points.epsilon, p.total_advanced.epsilon);
  // The rounds' privacy-loss distribution composed (shuffle_pld_test checks
  // it against exact sums): tighter, and the claim is the smaller of the two.
  EXPECT_LT(p.total_pld.epsilon, p.total_points.epsilon);
  EXPECT_EQ(p.total.epsilon, p.total_pld.epsilon);
  EXPECT_EQ(p.total.delta, 1e-6);
  EXPECT_NE(p.rule.find("privacy-loss distribution"), std::string::npos) << p.rule;
  EXPECT_LT(p.total.epsilon, p.local_basic.epsilon);  // the shuffler buys a lot
  EXPECT_NE(DescribeRunPrivacy(p).find("per round, shuffled with 10000 reports"),
            std::string::npos);
}

// The inverse: the eps0 it finds meets the target, and 0.1 % more does not.
TEST(LocalEpsilonForCentral, FindsTheLargestLocalBudgetWithinTheTarget) {
  RunPrivacyConfig c = OneShuffledRound(2000);
  for (double target : {0.3, 1.0, 2.5}) {
    const double eps0 = LocalEpsilonForCentral(c, target).value();
    c.local_epsilon = eps0;
    EXPECT_LE(AccountRun(c)->total.epsilon, target) << target;
    c.local_epsilon = eps0 * 1.001;
    EXPECT_GT(AccountRun(c)->total.epsilon, target) << target;
    EXPECT_GT(eps0, target) << target;  // the shuffler buys something at n = 2000
  }
  c.rounds = 4;  // more rounds, a smaller eps0 for the same target
  const double four = LocalEpsilonForCentral(c, 1.0).value();
  c.rounds = 1;
  EXPECT_LT(four, LocalEpsilonForCentral(c, 1.0).value());
  EXPECT_FALSE(LocalEpsilonForCentral(c, 1e-6).ok());
  // More reports never cost more: what holds for n' holds for n >= n'
  // (CalibrateToCentral relies on it).
  c.shuffle = true;
  for (double eps0 : {1.0, 3.0, 5.0}) {
    c.local_epsilon = eps0;
    double previous = std::numeric_limits<double>::infinity();
    for (std::uint64_t n : {100, 500, 1500, 2000, 2500, 8000, 40000}) {
      c.reports_per_round = n;
      const double total = AccountRun(c)->total.epsilon;
      EXPECT_LE(total, previous * (1 + 1e-9)) << eps0 << " " << n;
      previous = total;
    }
  }
  EXPECT_FALSE(LocalEpsilonForCentral(c, -1).ok());
  c.shuffle = false;
  EXPECT_FALSE(LocalEpsilonForCentral(c, 1.0).ok());
}

// The delta is met too: a report's floating-point allowance, (1 + e^eps)
// times its total variation tau, is added to delta, and a search on eps
// alone found eps0 where the allowance passed delta (a central target of 90
// over one round was calibrated to eps0 90, stated (90, 1)). Now the eps0
// found keeps delta within kAllowanceShare of the target, 0.1 % more does
// not, and eps0 stays at most 30 with the shuffler.
TEST(LocalEpsilonForCentral, TheFloatingPointAllowanceStaysWithinTheTargetDelta) {
  RunPrivacyConfig c = OneShuffledRound(1000);
  c.report_deviation = 1e-14;
  const double eps0 = LocalEpsilonForCentral(c, 20).value();
  c.local_epsilon = eps0;
  const RunPrivacy at = AccountRun(c).value();
  EXPECT_LE(at.total.epsilon, 20);
  EXPECT_LE(at.total.delta, 1e-6 * (1 + kAllowanceShare));
  c.local_epsilon = eps0 * 1.001;
  EXPECT_GT(AccountRun(c)->total.delta, 1e-6 * (1 + kAllowanceShare));
  c.report_deviation = 0;  // without an allowance the eps alone decides
  EXPECT_GT(LocalEpsilonForCentral(c, 20).value(), 2 * eps0);
  // A target above what 30 per report states: 30, not target / R.
  c.report_deviation = 3.6e-36;
  EXPECT_EQ(LocalEpsilonForCentral(c, 90).value(), 30);
  c.report_deviation = 1e-3;  // no eps0 keeps the allowance within delta
  EXPECT_FALSE(LocalEpsilonForCentral(c, 5).ok());
}

// Without the shuffler, the local total: the eps0 found meets it and 0.1 %
// more does not; one report is the target itself, and a Gaussian's delta0
// counts.
TEST(LocalEpsilonForTotal, CalibratesARunWithoutTheShufflerToo) {
  RunPrivacyConfig c;
  c.delta = 1e-6;
  for (const auto& [rounds, local_delta, target] :
       {std::tuple{1, 0.0, 2.0}, std::tuple{10, 0.0, 4.0}, std::tuple{400, 0.0, 8.0},
        std::tuple{50, 1e-9, 3.0}}) {
    c.rounds = rounds;
    c.local_delta = local_delta;
    const double eps0 = LocalEpsilonForTotal(c, target).value();
    c.local_epsilon = eps0;
    EXPECT_LE(AccountRun(c)->total.epsilon, target) << rounds;
    c.local_epsilon = eps0 * 1.001;
    EXPECT_GT(AccountRun(c)->total.epsilon, target) << rounds;
    if (rounds == 1) {
      EXPECT_EQ(eps0, target);
    } else if (rounds == 400) {
      EXPECT_GT(eps0, 1.5 * target / rounds);  // optimal beats basic by far
    }
  }
  EXPECT_FALSE(LocalEpsilonForTotal(c, 0).ok());
  // A target below the search's floor of 1e-3 a report is refused, naming it.
  const auto tiny = LocalEpsilonForTotal(c, 1e-4);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().find("no local epsilon >= 0.001"), std::string::npos) << tiny.error();
}

// Many rounds: the composed distribution stays the claim, and the total
// grows with eps0. Each round's leftover mass (infinite loss) adds up over
// the rounds; when every round could leave out 1e-3 delta, 512 rounds of
// 48,000 reports at eps0 1.4 spent the whole delta on it, the PLD gave no
// eps, and the looser point-wise composition (5.15) stood above eps0 3's
// PLD (4.37): the central calibration then chose eps0 1.4 for a target of 5.
TEST(AccountRun, OverManyRoundsTheTotalGrowsWithTheLocalEpsilon) {
  RunPrivacyConfig c;
  c.shuffle = true;
  c.reports_per_round = 48000;
  c.delta = 1e-5;
  for (std::uint64_t rounds : {8, 256, 512}) {
    c.rounds = rounds;
    double previous = 0;
    for (double eps0 : {1.4, 2.0, 3.0}) {
      c.local_epsilon = eps0;
      const auto p = AccountRun(c).value();
      EXPECT_NE(p.rule.find("privacy-loss distribution"), std::string::npos)
          << rounds << " rounds, eps0 " << eps0 << ": " << p.rule;
      EXPECT_GT(p.total.epsilon, previous) << rounds << " rounds, eps0 " << eps0;
      previous = p.total.epsilon;
    }
  }
  c.rounds = 512;
  c.local_epsilon = 1.4;
  EXPECT_LT(AccountRun(c)->total.epsilon, 1.25);         // 1.189 with the rounds' shares
  EXPECT_GT(LocalEpsilonForCentral(c, 5).value(), 3.3);  // 3.42 (1.40 before)
}

// 50 shuffled rounds of 2,000 at eps0 3, each sampling 0.1 of the clients.
RunPrivacyConfig SampledRun() {
  RunPrivacyConfig c;
  c.local_epsilon = 3;
  c.rounds = 50;
  c.shuffle = true;
  c.reports_per_round = 2000;
  c.sampling_rate = 0.1;
  c.delta = 1e-6;
  return c;
}

// Sampled rounds: each round's shuffle bound at delta / (2 q R) is amplified
// to (log(1 + q (e^eps_r - 1)), q delta_r) before R rounds compose.
TEST(AccountRun, SampledRoundsAreAmplifiedBeforeTheyCompose) {
  RunPrivacyConfig c = SampledRun();
  const auto p = AccountRun(c).value();
  const double delta_r = 1e-6 / (2 * 50 * 0.1);
  const auto round = NumericalShuffleEpsilon(2000, 3, delta_r).value();
  EXPECT_EQ(p.round.epsilon_upper, round.epsilon_upper);
  EXPECT_DOUBLE_EQ(p.round.delta, delta_r);
  // A wrong constant in the amplification (q^2, or no q) moves it past 1e-9.
  EXPECT_NEAR(p.subsampled.epsilon, std::log1p(0.1 * std::expm1(round.epsilon_upper)), 1e-12);
  EXPECT_DOUBLE_EQ(p.subsampled.delta, 0.1 * delta_r);
  EXPECT_LE(ComposedDelta(p.subsampled.epsilon, p.subsampled.delta, 50, p.total_points.epsilon),
            1e-6 * (1 + 1e-9));
  EXPECT_GT(
      ComposedDelta(p.subsampled.epsilon, p.subsampled.delta, 50, p.total_points.epsilon * 0.999),
      1e-6);
  // The claim: the amplified curve composed, far below the points (0.392 vs 2.626).
  EXPECT_EQ(p.total.epsilon, p.total_pld.epsilon);
  EXPECT_LT(p.total_pld.epsilon, 0.25 * p.total_points.epsilon);
  EXPECT_NE(p.rule.find("sampled without replacement"), std::string::npos) << p.rule;
  // The local lines count the q R = 5 reports a client sends in expectation.
  EXPECT_DOUBLE_EQ(p.local_basic.epsilon, 15);
  EXPECT_EQ(p.local_reports, 5u);
  // Amplification only helps: the same 50 rounds unsampled cost more, by
  // either rule.
  RunPrivacyConfig every = c;
  every.sampling_rate = 1;
  EXPECT_LT(p.total.epsilon, AccountRun(every)->total.epsilon);
  EXPECT_LT(p.total_points.epsilon, AccountRun(every)->total_points.epsilon);
  const std::string text = DescribeRunPrivacy(p);
  EXPECT_NE(text.find("per round, amplified by sampling 0.1 of the clients"), std::string::npos)
      << text;
  EXPECT_EQ(AccountRunArguments(c),
            "--local-epsilon 3 --rounds 50 --shuffle --reports-per-round 2000 --sampling-rate "
            "0.1 --delta 1e-06");
  // The inverse meets its target with sampling too.
  const double eps0 = LocalEpsilonForCentral(c, 1.0).value();
  c.local_epsilon = eps0;
  EXPECT_LE(AccountRun(c)->total.epsilon, 1.0);
  c.local_epsilon = eps0 * 1.001;
  EXPECT_GT(AccountRun(c)->total.epsilon, 1.0);
  // Refused: no shuffler (nothing is amplified), a rate outside (0, 1].
  c.shuffle = false;
  c.reports_per_round = 0;
  EXPECT_FALSE(AccountRun(c).ok());
  c.shuffle = true;
  c.reports_per_round = 2000;
  for (double q : {0.0, -0.1, 1.5, std::nan("")}) {
    c.sampling_rate = q;
    EXPECT_FALSE(AccountRun(c).ok()) << q;
  }
}

// Poisson participation: the round's PLD is PoissonRoundPld's (N = n / q
// clients), composed over the rounds; its per-round point is read off it;
// the statement and the calibration say so and are told apart from rounds
// of fixed size; near them in eps at large N (the count's spread is small).
// The eps0 calibrated to central eps 1: the run at it meets the target, and
// 0.1 % more breaks it.
double CalibratedToCentralOne(RunPrivacyConfig c) {
  const double eps0 = LocalEpsilonForCentral(c, 1.0).value();
  c.local_epsilon = eps0;
  EXPECT_LE(AccountRun(c)->total.epsilon, 1.0);
  c.local_epsilon = eps0 * 1.001;
  EXPECT_GT(AccountRun(c)->total.epsilon, 1.0);
  return eps0;
}

TEST(AccountRun, PoissonParticipationIsComposedFromItsMixture) {
  RunPrivacyConfig c = SampledRun();
  c.poisson = true;
  const RunPrivacy p = AccountRun(c).value();
  const Pld round = PoissonRoundPld(20000, 0.1, 3, 1e-3, 1e-3 * 1e-6 / 50).value();
  EXPECT_NEAR(p.subsampled.epsilon, PldEpsilon(round, 1e-6 / 100), 1e-6);
  EXPECT_DOUBLE_EQ(p.subsampled.delta, 1e-6 / 100);
  const Pld run = ComposePld(round, 50, 1e-3 * 1e-6);
  EXPECT_NEAR(p.total.epsilon, PldEpsilon(run, 1e-6), 1e-6);
  EXPECT_NE(p.rule.find("Poisson participation"), std::string::npos) << p.rule;
  RunPrivacyConfig fixed = c;
  fixed.poisson = false;
  const double fixed_total = AccountRun(fixed)->total.epsilon;
  EXPECT_NE(p.total.epsilon, fixed_total);
  EXPECT_NEAR(p.total.epsilon, fixed_total, 0.05 * fixed_total);
  EXPECT_NE(DescribeRunPrivacy(p).find("each client drawn with probability 0.1 (Poisson"),
            std::string::npos);
  EXPECT_EQ(AccountRunArguments(c),
            "--local-epsilon 3 --rounds 50 --shuffle --reports-per-round 2000 --sampling-rate "
            "0.1 --poisson --delta 1e-06");
  // The calibration meets its target, and is not the fixed rounds' (remembered apart).
  EXPECT_NE(CalibratedToCentralOne(c), LocalEpsilonForCentral(fixed, 1.0).value());
  // Refused: Poisson without a rate below 1.
  c.sampling_rate = 1;
  EXPECT_EQ(AccountRun(c).error(),
            "Poisson participation draws each client with the sampling rate: give one below 1");
}

// Random allocation: R rounds in epochs of t = 1 / q are stated as ceil(R / t)
// shuffled rounds of t n reports (a part epoch counted whole), the same
// figures those rounds get; it states less than sampling at the same rate,
// and the calibration keeps it apart from the fixed rounds'.
TEST(AccountRun, AnAllocatedRunIsStatedAsItsEpochsShuffledWhole) {
  RunPrivacyConfig c = SampledRun();  // 50 rounds of 2,000, q = 0.1, eps0 3
  c.allocation = true;
  c.rounds = 55;
  const RunPrivacy p = AccountRun(c).value();
  RunPrivacyConfig epochs = c;
  epochs.allocation = false;
  epochs.sampling_rate = 1;
  epochs.rounds = 6;
  epochs.reports_per_round = 20000;
  EXPECT_EQ(AllocatedEpochs(c).rounds, 6u);
  EXPECT_EQ(AllocatedEpochs(c).reports_per_round, 20000u);
  const RunPrivacy whole = AccountRun(epochs).value();
  EXPECT_EQ(p.total.epsilon, whole.total.epsilon);
  EXPECT_EQ(p.total.delta, whole.total.delta);
  EXPECT_EQ(p.round.epsilon_upper, whole.round.epsilon_upper);
  EXPECT_EQ(p.local_reports, 6u);
  EXPECT_EQ(p.epochs, 6u);
  EXPECT_EQ(p.epoch_reports, 20000u);
  EXPECT_EQ(p.config.rounds, 55u);
  EXPECT_NE(p.rule.find("random allocation (each epoch of 10 rounds, its order secret, as one "
                        "shuffle of its 20000 reports)"),
            std::string::npos)
      << p.rule;
  EXPECT_NE(DescribeRunPrivacy(p).find("a client in one round of every 10 of 55 rounds sends at "
                                       "most 6 reports"),
            std::string::npos)
      << DescribeRunPrivacy(p);
  RunPrivacyConfig sampled = c;
  sampled.allocation = false;
  EXPECT_LT(p.total.epsilon, AccountRun(sampled)->total.epsilon);
  EXPECT_EQ(AccountRunArguments(c),
            "--local-epsilon 3 --rounds 55 --shuffle --reports-per-round 2000 --sampling-rate "
            "0.1 --allocation --delta 1e-06");
  EXPECT_GT(CalibratedToCentralOne(c), LocalEpsilonForCentral(sampled, 1.0).value());
  // Refused: no epoch of whole rounds, Poisson beside it, or no rate below 1.
  c.sampling_rate = 0.3;
  EXPECT_EQ(AccountRun(c).error(),
            "random allocation needs a whole number of rounds per epoch: 1 / q = 3.33333");
  c.sampling_rate = 0.25;
  c.poisson = true;
  EXPECT_NE(AccountRun(c).error().find("without Poisson participation"), std::string::npos);
  c.poisson = false;
  c.sampling_rate = 1;
  EXPECT_NE(AccountRun(c).error().find("give a sampling rate below 1"), std::string::npos);
}

TEST(AccountRun, BeyondTheExactSumTheClosedFormCarriesTheRound) {
  RunPrivacyConfig c;
  c.local_epsilon = 1;
  c.rounds = 2;
  c.shuffle = true;
  c.reports_per_round = std::uint64_t{1} << 40;  // a window of clones past 4e6 values
  c.delta = 1e-6;
  const auto p = AccountRun(c).value();
  EXPECT_TRUE(p.closed_form);
  EXPECT_EQ(p.round.epsilon_upper, FeldmanMcMillanTalwar(1, 0x1p40, 2.5e-7).epsilon);
  EXPECT_NE(p.rule.find("closed-form shuffle bound per round"), std::string::npos) << p.rule;
  EXPECT_NE(DescribeRunPrivacy(p).find("closed form: the exact sum is out of reach"),
            std::string::npos);
  // 1e8 reports are within the sum's reach (in blocks), far below the closed form.
  c.reports_per_round = 100'000'000;
  const auto sum = AccountRun(c).value();
  EXPECT_FALSE(sum.closed_form);
  EXPECT_LT(sum.round.epsilon_upper, FeldmanMcMillanTalwar(1, 1e8, 2.5e-7).epsilon / 2);
}

TEST(AccountRun, WithoutTheShufflerReportsComposeLocally) {
  RunPrivacyConfig c;
  c.local_epsilon = 0.5;
  c.rounds = 200;
  c.delta = 1e-6;
  const auto p = AccountRun(c).value();
  EXPECT_FALSE(p.shuffled);
  EXPECT_DOUBLE_EQ(p.local_basic.epsilon, 100);
  EXPECT_EQ(p.local_basic.delta, 0);
  // 200 reports of 0.5: optimal composition beats 100 at delta 1e-6.
  EXPECT_LT(p.total.epsilon, 100);
  EXPECT_EQ(p.total.epsilon, p.local_optimal.epsilon);
  // Few reports: basic (with delta 0) is as good, and is the claim.
  c.rounds = 2;
  const auto few = AccountRun(c).value();
  EXPECT_EQ(few.total.epsilon, 1);
  EXPECT_EQ(few.total.delta, 0);
}

TEST(AccountRun, RefusesWhatIsNotProven) {
  RunPrivacyConfig c;
  c.local_epsilon = 1;
  c.local_delta = 1e-7;
  c.shuffle = true;
  c.reports_per_round = 10;
  EXPECT_FALSE(AccountRun(c).ok());  // no amplification proven for a Gaussian
  c.local_delta = 0;
  c.reports_per_round = 0;
  EXPECT_FALSE(AccountRun(c).ok());
  c.shuffle = false;
  c.reports_per_round = 10;
  EXPECT_FALSE(AccountRun(c).ok());
  c.reports_per_round = 0;
  for (double eps : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    c.local_epsilon = eps;
    EXPECT_FALSE(AccountRun(c).ok()) << eps;
  }
  c.local_epsilon = 1;
  c.rounds = 0;
  EXPECT_FALSE(AccountRun(c).ok());
  c.rounds = 1;
  for (double delta : {0.0, 1.0, 1e-13}) {
    c.delta = delta;
    EXPECT_FALSE(AccountRun(c).ok()) << delta;
  }
  // A round's share of delta too small for any bound is said as what the
  // user gave (before: "delta must be in [1e-12, 1) ..., not 5e-13").
  c.delta = 1e-6;
  c.shuffle = true;
  c.reports_per_round = 1000;
  c.rounds = 1'000'000;
  const auto tiny = AccountRun(c);
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.error().rfind("each round's share of delta, delta / (2 x rounds) = 5e-13", 0), 0u)
      << tiny.error();
  EXPECT_NE(tiny.error().find("give a larger delta or fewer rounds"), std::string::npos);
}

// A report within total variation tau of the ideal law (PrivUnitG's
// floating-point allowance) raises each delta by (1 + e^eps) n tau per step
// of n reports, added over the steps composed; no epsilon moves.
TEST(AccountRun, AReportsDeviationRaisesEachDeltaByItsCoupling) {
  constexpr double kTau = 1e-12;
  RunPrivacyConfig c;
  c.local_epsilon = 0.5;
  c.rounds = 200;
  c.delta = 1e-6;
  const auto ideal = AccountRun(c).value();
  c.report_deviation = kTau;
  const auto real = AccountRun(c).value();
  const double per_report = (1 + std::exp(0.5)) * kTau;
  EXPECT_DOUBLE_EQ(real.local.delta, per_report);
  EXPECT_DOUBLE_EQ(real.local_basic.delta, 200 * per_report);
  EXPECT_EQ(real.total.epsilon, ideal.total.epsilon);
  EXPECT_DOUBLE_EQ(real.total.delta, ideal.total.delta + 200 * per_report);
  EXPECT_DOUBLE_EQ(real.allowance, 200 * per_report);
  EXPECT_DOUBLE_EQ(real.total_advanced.delta, ideal.total_advanced.delta + 200 * per_report);

  // Shuffled: a round covers its n reports; the PLD's total all R n of them.
  c.local_epsilon = 4;
  c.rounds = 5;
  c.shuffle = true;
  c.reports_per_round = 10000;
  c.report_deviation = 0;
  const auto shuffled_ideal = AccountRun(c).value();
  c.report_deviation = kTau;
  const auto shuffled = AccountRun(c).value();
  const double eps_r = shuffled_ideal.round.epsilon_upper;
  const double round_allowance = (1 + std::exp(eps_r)) * 10000 * kTau;
  EXPECT_DOUBLE_EQ(shuffled.round.delta, shuffled_ideal.round.delta + round_allowance);
  EXPECT_DOUBLE_EQ(shuffled.total_points.delta,
                   shuffled_ideal.total_points.delta + 5 * round_allowance);
  ASSERT_EQ(shuffled.total.epsilon, shuffled_ideal.total_pld.epsilon);
  const double run_allowance = (1 + std::exp(shuffled.total.epsilon)) * 5 * 10000 * kTau;
  EXPECT_DOUBLE_EQ(shuffled.total.delta, 1e-6 + run_allowance);
  EXPECT_DOUBLE_EQ(shuffled.allowance, run_allowance);
  EXPECT_DOUBLE_EQ(shuffled.local.delta, (1 + std::exp(4.0)) * kTau);

  // Stated, and read back by `account run`.
  EXPECT_NE(DescribeRunPrivacy(shuffled).find("floating-point allowance"), std::string::npos);
  EXPECT_EQ(DescribeRunPrivacy(shuffled_ideal).find("floating-point allowance"), std::string::npos);
  EXPECT_NE(AccountRunArguments(c).find("--report-deviation 1e-12"), std::string::npos);
  EXPECT_EQ(AccountRunArguments(RunPrivacyConfig{}).find("--report-deviation"), std::string::npos);
  // None: the same figures to the bit.
  EXPECT_EQ(shuffled_ideal.allowance, 0);
  EXPECT_EQ(shuffled_ideal.total.delta, 1e-6);
  for (double tau : {-1e-30, 1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    c.report_deviation = tau;
    EXPECT_FALSE(AccountRun(c).ok()) << tau;
  }
}

}  // namespace
}  // namespace fedldp

namespace fedldp {
namespace {

// No cap on eps0: LDP-FL's per-weight report (21,840 weights at eps 5) is
// stated, with or without the shuffler, and a total beyond e^10 says it
// protects little; a total within it says nothing of the kind.
TEST(AccountRun, ALargeLocalEpsilonIsStatedWithAWarning) {
  RunPrivacyConfig c;
  c.local_epsilon = 21840 * 5.0;
  c.rounds = 5;
  c.delta = 1e-5;
  const RunPrivacy p = AccountRun(c).value();
  EXPECT_EQ(p.total.epsilon, 546000);
  EXPECT_EQ(p.total.delta, 0);
  EXPECT_EQ(MeaninglessWarning(p.total).rfind("warning: eps 546000 bounds", 0), 0u);
  EXPECT_NE(DescribeRunPrivacy(p).find("not a meaningful protection"), std::string::npos);
  c.shuffle = true;
  c.reports_per_round = 20;
  const auto shuffled = AccountRun(c);
  ASSERT_TRUE(shuffled.ok()) << shuffled.error();
  EXPECT_LE(shuffled->total.epsilon, 546000);
  EXPECT_TRUE(std::isfinite(shuffled->total.epsilon));
  c.local_epsilon = 150;
  c.shuffle = false;
  c.reports_per_round = 0;
  EXPECT_EQ(AccountRun(c)->total.epsilon, 750);
  c.local_epsilon = 2;
  EXPECT_EQ(MeaninglessWarning(AccountRun(c)->total), "");  // 10: at the line, not past it
  EXPECT_EQ(DescribeRunPrivacy(AccountRun(c).value()).find("warning"), std::string::npos);
}

}  // namespace
}  // namespace fedldp

namespace fedldp {
namespace {

// The record every result carries (issue 43, item 4): the accountant's
// statement, each line in its place.
TEST(PrivacyRecordOf, PutsEachLineOfTheStatementInItsPlace) {
  RunPrivacyConfig c;
  c.local_epsilon = 4;
  c.rounds = 8;
  c.shuffle = true;
  c.reports_per_round = 20000;
  c.delta = 1e-5;
  const RunPrivacy p = AccountRun(c).value();
  const PrivacyRecord r = PrivacyRecordOf(p, "privunitg", "floating point: x");
  EXPECT_EQ(r.local.epsilon, 4);
  EXPECT_EQ(r.per_round.epsilon, p.round.epsilon_upper);  // the shuffled round's bound
  EXPECT_EQ(r.total.epsilon, p.total.epsilon);
  EXPECT_EQ(r.total.delta, 1e-5);
  EXPECT_EQ(r.local_total.epsilon, 32);  // 8 reports at 4, trusting no one
  EXPECT_EQ(r.reports_per_round, 20000u);
  EXPECT_EQ(r.rounds, 8u);
  EXPECT_EQ(r.rule, p.rule);
  EXPECT_EQ(r.arguments, AccountRunArguments(c, "privunitg"));
  EXPECT_EQ(r.warning, "");
  c.shuffle = false;
  c.reports_per_round = 0;
  const PrivacyRecord local = PrivacyRecordOf(AccountRun(c).value(), "pm", "");
  EXPECT_EQ(local.per_round.epsilon, 4);
  EXPECT_EQ(local.total.epsilon, local.local_total.epsilon);
  EXPECT_EQ(local.reports_per_round, 0u);
  EXPECT_NE(local.warning, "");  // 32 > 10
  // LDP-FL per weight: a report is d eps; shuffled per column where it helps.
  const LdpFlPrivacy w = AccountLdpFl(0.5, 100, 2, 50000, 1e-5);
  const PrivacyRecord per_weight = PrivacyRecordOf(w, "twopoint", "");
  EXPECT_EQ(per_weight.local.epsilon, 50);
  EXPECT_EQ(per_weight.local_total.epsilon, 100);
  EXPECT_EQ(per_weight.total.epsilon, w.shuffled.epsilon);
  EXPECT_LT(per_weight.total.epsilon, 100);
  EXPECT_NE(per_weight.rule.find("shuffle bound per parameter column"), std::string::npos)
      << per_weight.rule;
  EXPECT_EQ(per_weight.arguments, "");
}

}  // namespace
}  // namespace fedldp
