// The accountant: one kind of step states what `account run` states; mixed
// steps compose soundly (checked against the exact privacy-loss
// distribution of pure reports) and no looser than basic composition.
#include "fedldp/privacy/accountant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fedldp/privacy/shuffle_pld.h"

namespace fedldp {
namespace {

AccountedStep Direct(double eps0, double delta0 = 0, double tau = 0) {
  return {.local_epsilon = eps0, .local_delta = delta0, .report_deviation = tau};
}
AccountedStep Shuffled(double eps0, std::uint64_t n, double q = 1, double tau = 0) {
  return {
      .local_epsilon = eps0, .reports_per_round = n, .sampling_rate = q, .report_deviation = tau};
}
AccountedStep Poisson(double eps0, std::uint64_t n, double q) {
  AccountedStep s = Shuffled(eps0, n, q);
  s.poisson = true;
  return s;
}

// Recorded step by step, one kind: the total, rule and allowance are
// AccountRun's for the same configuration, to the last bit.
TEST(Accountant, OneKindOfStepIsWhatAccountRunStates) {
  const std::vector<std::pair<AccountedStep, std::uint64_t>> runs = {
      {Direct(2), 5},
      {Direct(0.5, 1e-7), 40},
      {Shuffled(4, 10000), 6},
      {Shuffled(3, 60000, 0.05), 50},
      {Shuffled(2, 2000, 1, 1e-13), 3},
      {Poisson(3, 6000, 0.1), 20},
      {Direct(150), 4}};
  for (const auto& [step, times] : runs) {
    Accountant a;
    for (std::uint64_t i = 0; i < times; ++i) ASSERT_TRUE(a.Record(step).ok());
    ASSERT_EQ(a.groups().size(), 1u);
    EXPECT_EQ(a.steps(), times);
    const AccountedTotal t = a.Total(1e-5).value();
    const RunPrivacy p = AccountRun(step.Run(times, 1e-5)).value();
    EXPECT_EQ(t.total.epsilon, p.total.epsilon) << p.rule;
    EXPECT_EQ(t.total.delta, p.total.delta) << p.rule;
    EXPECT_EQ(t.rule, p.rule);
    EXPECT_EQ(t.allowance, p.allowance);
    ASSERT_TRUE(t.run.has_value());
    EXPECT_EQ(DescribeAccountedTotal(a, t), DescribeRunPrivacy(p));
  }
}

TEST(Accountant, RecordingInPiecesIsRecordingAtOnce) {
  Accountant pieces, once;
  ASSERT_TRUE(pieces.Record(Shuffled(4, 5000), 3).ok());
  ASSERT_TRUE(pieces.Record(Shuffled(4, 5000), 2).ok());
  ASSERT_TRUE(once.Record(Shuffled(4, 5000), 5).ok());
  EXPECT_EQ(pieces.Total(1e-6)->total.epsilon, once.Total(1e-6)->total.epsilon);
  EXPECT_EQ(Accountant().Total(1e-6)->total.epsilon, 0.0);  // nothing spent
}

// delta(eps) of k1 reports at eps a and k2 at eps b (pure), exactly: the
// losses (k1 - 2 j1) a + (k2 - 2 j2) b with binomial j's.
double ExactDelta(double a, int k1, double b, int k2, double eps) {
  const auto pmf = [](int k, int j, double e) {
    return std::exp(std::lgamma(k + 1.0) - std::lgamma(j + 1.0) - std::lgamma(k - j + 1.0) -
                    j * std::log1p(std::exp(e)) - (k - j) * std::log1p(std::exp(-e)));
  };
  double delta = 0;
  for (int j1 = 0; j1 <= k1; ++j1) {
    for (int j2 = 0; j2 <= k2; ++j2) {
      const double loss = (k1 - 2 * j1) * a + (k2 - 2 * j2) * b;
      if (loss > eps) delta += pmf(k1, j1, a) * pmf(k2, j2, b) * -std::expm1(eps - loss);
    }
  }
  return delta;
}

// Mixed pure reports: the convolved total holds exactly (its eps's exact
// delta is within delta) and is tight (at most a grid step per report
// above the exact least eps), and beats basic composition.
TEST(Accountant, MixedReportsComposeByTheirExactLossDistribution) {
  struct Case {
    double a;
    int k1;
    double b;
    int k2;
    double delta;
  };
  for (const Case c :
       {Case{1.0, 10, 0.25, 40, 1e-6}, Case{2.0, 3, 0.5, 8, 1e-5}, Case{0.1, 100, 1.5, 2, 1e-8}}) {
    Accountant acc;
    ASSERT_TRUE(acc.Record(Direct(c.a), c.k1).ok());
    ASSERT_TRUE(acc.Record(Direct(c.b), c.k2).ok());
    const AccountedTotal t = acc.Total(c.delta).value();
    ASSERT_TRUE(t.pld.has_value());
    EXPECT_EQ(t.total.epsilon, t.pld->epsilon);
    EXPECT_LE(ExactDelta(c.a, c.k1, c.b, c.k2, t.total.epsilon), c.delta);
    const double slack = 2e-3;  // each group's losses rounded up once
    EXPECT_GT(ExactDelta(c.a, c.k1, c.b, c.k2, t.total.epsilon - slack), c.delta);
    EXPECT_LT(t.total.epsilon, t.basic.epsilon);
    EXPECT_LE(t.total.epsilon, c.k1 * c.a + c.k2 * c.b);
  }
}

// Many shuffled rounds of two budgets compose by their PLD whenever account
// run would compose each (one rule, kMaxComposedWidth): 256 rounds at eps0 4
// were refused before by a cruder rule (2 x 256 x 4 / grid over 2e6 points),
// leaving the basic total.
TEST(Accountant, ManyShuffledRoundsComposeByThePldAsAccountRunDoes) {
  Accountant acc;
  ASSERT_TRUE(acc.Record(Shuffled(4, 48000), 256).ok());
  ASSERT_TRUE(acc.Record(Shuffled(3, 48000), 256).ok());
  const AccountedTotal t = acc.Total(1e-5).value();
  ASSERT_TRUE(t.pld.has_value());
  EXPECT_EQ(t.total.epsilon, t.pld->epsilon);
  EXPECT_LT(t.total.epsilon, t.basic.epsilon);
}

// k canonical pairs composed are the optimal composition of composition.h:
// never below it, and within one grid step of it.
TEST(ReportsPld, IsTheOptimalCompositionOnTheGrid) {
  for (const auto& [eps0, delta0, k] :
       {std::tuple{1.0, 0.0, 20}, std::tuple{0.3, 1e-8, 200}, std::tuple{3.0, 1e-6, 7}}) {
    const Pld p = ReportsPld(eps0, delta0, k, 1e-3, 2'000'000).value();
    for (const double eps : {0.5, 2.0, 5.0}) {
      const double exact = ComposedDelta(eps0, delta0, k, eps);
      EXPECT_GE(PldDelta(p, eps), exact * (1 - 1e-9)) << eps0 << " " << k << " " << eps;
      EXPECT_LE(PldDelta(p, eps), ComposedDelta(eps0, delta0, k, eps - 1e-3) * (1 + 1e-9) + 1e-15);
    }
  }
  EXPECT_FALSE(ReportsPld(100, 0, 1000, 1e-3, 2'000'000).ok());  // beyond the support
}

// Shuffled rounds beside direct reports: the convolved total is offered and
// beats basic composition; sampled rounds too (their C_q curve, as account
// run composes them).
TEST(Accountant, ShuffledAndSampledRoundsBesideDirectReports) {
  Accountant mixed;
  ASSERT_TRUE(mixed.Record(Shuffled(4, 60000), 20).ok());
  ASSERT_TRUE(mixed.Record(Direct(0.5), 2).ok());
  const AccountedTotal t = mixed.Total(1e-5).value();
  ASSERT_TRUE(t.pld.has_value());
  EXPECT_LT(t.total.epsilon, t.basic.epsilon);
  EXPECT_EQ(t.per_group.size(), 2u);
  EXPECT_NE(DescribeAccountedTotal(mixed, t).find("20 shuffled rounds of 60000 reports"),
            std::string::npos);

  Accountant sampled;
  ASSERT_TRUE(sampled.Record(Shuffled(4, 3000, 0.05), 100).ok());
  ASSERT_TRUE(sampled.Record(Direct(1), 1).ok());
  const AccountedTotal s = sampled.Total(1e-5).value();
  ASSERT_TRUE(s.pld.has_value());
  const double first = AccountRun(Shuffled(4, 3000, 0.05).Run(100, 5e-6))->total.epsilon;
  EXPECT_DOUBLE_EQ(s.basic.epsilon, first + 1.0);
  EXPECT_DOUBLE_EQ(s.basic.delta, 5e-6 + 0.0);
  EXPECT_LT(s.total.epsilon, s.basic.epsilon);
  EXPECT_EQ(s.total.epsilon, s.pld->epsilon);
  // The sampled rounds alone: the accountant's PLD is account run's.
  Accountant alone;
  ASSERT_TRUE(alone.Record(Shuffled(4, 3000, 0.05), 100).ok());
  EXPECT_NEAR(alone.Total(1e-5)->total.epsilon,
              AccountRun(Shuffled(4, 3000, 0.05).Run(100, 1e-5))->total.epsilon, 1e-6);
}

// Poisson rounds beside direct reports convolve their mixture's PLD: the
// convolved total is below basic composition and names the rate drawn; the
// fixed-size rounds at the same rate compose to a different total.
TEST(Accountant, PoissonRoundsBesideDirectReports) {
  Accountant mixed, fixed;
  ASSERT_TRUE(mixed.Record(Poisson(4, 3000, 0.05), 100).ok());
  ASSERT_TRUE(mixed.Record(Direct(1), 1).ok());
  ASSERT_TRUE(fixed.Record(Shuffled(4, 3000, 0.05), 100).ok());
  ASSERT_TRUE(fixed.Record(Direct(1), 1).ok());
  const AccountedTotal t = mixed.Total(1e-5).value();
  ASSERT_TRUE(t.pld.has_value());
  EXPECT_LT(t.total.epsilon, t.basic.epsilon);
  EXPECT_DOUBLE_EQ(t.basic.epsilon,
                   AccountRun(Poisson(4, 3000, 0.05).Run(100, 5e-6))->total.epsilon + 1.0);
  EXPECT_NE(t.total.epsilon, fixed.Total(1e-5)->total.epsilon);
  EXPECT_NE(DescribeAccountedTotal(mixed, t).find("each client drawn with probability 0.05"),
            std::string::npos);
}

// A deviation's allowance is (1 + e^eps) times the reports covered, on top.
TEST(Accountant, ADeviationAddsItsCouplingToTheMixedTotal) {
  Accountant a;
  ASSERT_TRUE(a.Record(Direct(1, 0, 1e-12), 10).ok());
  ASSERT_TRUE(a.Record(Direct(0.5), 10).ok());
  const AccountedTotal t = a.Total(1e-6).value();
  ASSERT_TRUE(t.pld.has_value());
  EXPECT_DOUBLE_EQ(t.allowance, (1 + std::exp(t.total.epsilon)) * 10 * 1e-12);
  EXPECT_DOUBLE_EQ(t.total.delta, 1e-6 + t.allowance);
}

TEST(Accountant, RefusesWhatAccountRunRefusesAndKeepsWhatItHad) {
  Accountant a;
  ASSERT_TRUE(a.Record(Direct(1), 2).ok());
  EXPECT_FALSE(a.Record(Direct(-1)).ok());
  EXPECT_FALSE(a.Record(Direct(1), 0).ok());
  EXPECT_FALSE(a.Record(Shuffled(1, 100, 1.5)).ok());
  EXPECT_FALSE(a.Record(Direct(1), 2'000'000).ok());  // past the rounds' limit
  EXPECT_FALSE(a.Record({.local_epsilon = 1, .local_delta = 1e-6, .reports_per_round = 10}).ok());
  EXPECT_EQ(a.steps(), 2u);
  EXPECT_FALSE(a.Total(0).ok());
  EXPECT_FALSE(a.Total(1).ok());
}

}  // namespace
}  // namespace fedldp
