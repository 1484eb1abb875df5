#include "fedldp/privacy/fedsel_budget.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fedldp {
namespace {

TEST(FedSelBudget, SplitsAndComposesAsAlgorithmOne) {
  const auto b = MakeFedSelBudget(2.0, 2, 0.1, false).value();
  EXPECT_DOUBLE_EQ(b.epoch_epsilon, 1.0);
  EXPECT_DOUBLE_EQ(b.select_epsilon, 0.1);
  EXPECT_DOUBLE_EQ(b.value_epsilon, 0.9);
  EXPECT_DOUBLE_EQ(b.TotalPerClient(), 2.0);
  const auto c = MakeFedSelBudget(2.0, 2, 0.1, true).value();
  EXPECT_DOUBLE_EQ(c.value_epsilon, 1.0);
  EXPECT_DOUBLE_EQ(c.TotalPerClient(), 2.2);  // -C spends eps1 on top
  EXPECT_NE(c.Statement().find("total 2.2 per client"), std::string::npos) << c.Statement();
  EXPECT_FALSE(MakeFedSelBudget(0, 1, 0.1, false).ok());
  EXPECT_EQ(MakeFedSelBudget(1, 0, 0.1, false).error(),
            "epochs must be a whole number from 1 to 10000, got 0");  // the shared sentence
  EXPECT_FALSE(MakeFedSelBudget(1, 1, 1.0, false).ok());
}

TEST(FedSelBudget, BoundsEachEpochsShareNotTheTotal) {
  // 128 shuffled epochs at 4.9 per report spend 627.2 locally: allowed; an
  // epoch's share above 500 is not (exp overflows near 709).
  const auto b = MakeFedSelBudget(627.2, 128, 0.1, false);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_DOUBLE_EQ(b->epoch_epsilon, 4.9);
  const auto refused = MakeFedSelBudget(501, 1, 0.1, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("epsilon per epoch"), std::string::npos) << refused.error();
  EXPECT_FALSE(MakeFedSelBudget(INFINITY, 128, 0.1, false).ok());
}

TEST(FedSelBudget, HyperParameterFreeMuFollowsTheWrittenRule) {
  // mu = clamp(1 - sqrt(d ln d / m) / eps', 0, theta).
  const double floor_value = std::sqrt(123 * std::log(123.0) / 391);
  EXPECT_DOUBLE_EQ(HyperParameterFreeMu(2.0, 123, 391), std::min(0.2, 1 - floor_value / 2.0));
  EXPECT_DOUBLE_EQ(HyperParameterFreeMu(0.5, 123, 391), 0.0);     // too little: all to the value
  EXPECT_DOUBLE_EQ(HyperParameterFreeMu(8.0, 123, 100000), 0.2);  // plenty: capped at theta
  EXPECT_DOUBLE_EQ(HyperParameterFreeMu(8.0, 123, 100000, 0.3), 0.3);
}

}  // namespace
}  // namespace fedldp
