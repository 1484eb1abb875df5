#include "fedldp/privacy/ldpfl_accounting.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp {
namespace {

TEST(FeldmanMcMillanTalwar, MatchesTheTheoremAtAWorkedPoint) {
  // eps0 = 1, n = 1e5, delta = 1e-6, by hand: alpha = (e-1)/(e+1) = 0.462117,
  // 8 sqrt(e ln 4e6)/sqrt(n) = 0.162617, 8e/n = 0.000217; ln(1 + 0.462117 *
  // 0.162834) = 0.0725549.
  const auto b = FeldmanMcMillanTalwar(1, 1e5, 1e-6);
  ASSERT_TRUE(b.applies);
  EXPECT_NEAR(b.epsilon, 0.0725549, 1e-6);
  EXPECT_DOUBLE_EQ(b.delta, 1e-6);
}

TEST(FeldmanMcMillanTalwar, AppliesOnlyAboveItsThresholdAndAmplifies) {
  // Condition eps0 <= ln(n / (16 ln(2/delta))): n >= 16 ln(2/delta) e^eps0.
  const double delta = 1e-6, eps0 = 2;
  const double n_min = 16 * std::log(2 / delta) * std::exp(eps0);
  EXPECT_FALSE(FeldmanMcMillanTalwar(eps0, std::floor(n_min) - 1, delta).applies);
  EXPECT_TRUE(FeldmanMcMillanTalwar(eps0, std::ceil(n_min) + 1, delta).applies);
  EXPECT_NEAR(FeldmanMcMillanTalwar(eps0, 10, delta).min_reports, n_min, 1e-9 * n_min);
  double previous = eps0;
  for (double n : {1e4, 1e5, 1e6, 1e7}) {
    const auto b = FeldmanMcMillanTalwar(eps0, n, delta);
    ASSERT_TRUE(b.applies);
    EXPECT_LT(b.epsilon, previous);  // more reports, more amplification
    previous = b.epsilon;
  }
  // ~ 1 / sqrt(n) for large n: 100 times the reports, about a tenth of eps.
  const double ratio = FeldmanMcMillanTalwar(eps0, 1e7, delta).epsilon /
                       FeldmanMcMillanTalwar(eps0, 1e5, delta).epsilon;
  EXPECT_NEAR(ratio, 0.1, 0.01);
}

TEST(AdvancedComposition, IsTheDworkRothblumVadhanBound) {
  const auto g = AdvancedComposition(0.01, 1e-9, 100, 1e-6);
  EXPECT_NEAR(g.epsilon, 0.01 * std::sqrt(200 * std::log(1e6)) + 100 * 0.01 * std::expm1(0.01),
              1e-12);
  EXPECT_NEAR(g.delta, 100 * 1e-9 + 1e-6, 1e-18);
}

TEST(AccountLdpFl, PlainCompositionAndAnHonestShuffleStatement) {
  // The paper's MNIST setting: 21,840 weights, 10 rounds, 100 clients, eps 1.
  const auto p = AccountLdpFl(1, 21840, 10, 100);
  EXPECT_DOUBLE_EQ(p.per_round_ldp, 21840);
  EXPECT_DOUBLE_EQ(p.plain_composition, 218400);
  // 100 reports are far too few for Theorem 3.1, not for the numerical bound.
  EXPECT_FALSE(p.per_column.applies);
  ASSERT_TRUE(p.shuffle_applies) << p.why_not;
  EXPECT_LT(p.per_column_numerical.epsilon_upper, 1);
  EXPECT_LT(p.shuffled.epsilon, p.plain_composition);
  EXPECT_EQ(p.shuffled_rule, "optimal");
  EXPECT_LE(p.shuffled.delta, 1e-5);
  // The per-column claim is the numerical bound at delta / (2 k).
  const auto column = NumericalShuffleEpsilon(100, 1, 1e-5 / (2 * 21840 * 10)).value();
  EXPECT_EQ(p.per_column_numerical.epsilon_upper, column.epsilon_upper);
  EXPECT_NE(DescribeLdpFlPrivacy(p).find("would need n >= "), std::string::npos);
  // Many reports: both bounds apply, the numerical one is the smaller.
  const auto big = AccountLdpFl(1, 100, 1, 100000);
  ASSERT_TRUE(big.shuffle_applies);
  ASSERT_TRUE(big.per_column.applies);
  EXPECT_LT(big.per_column_numerical.epsilon_upper, big.per_column.epsilon);
  EXPECT_LT(big.shuffled.epsilon, big.plain_composition);
  EXPECT_LE(big.shuffled.delta, 1e-5);
  EXPECT_NE(DescribeLdpFlPrivacy(big).find("-DP per client"), std::string::npos);
  // Beyond the exact sum's reach, the closed form carries the statement.
  const auto huge = AccountLdpFl(1, 100, 1, std::size_t{1} << 40);
  ASSERT_TRUE(huge.shuffle_applies);
  EXPECT_EQ(huge.column_rule, "closed form");
  EXPECT_EQ(huge.column_epsilon, huge.per_column.epsilon);
}

}  // namespace
}  // namespace fedldp
