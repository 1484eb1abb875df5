#include "fedldp/fl/server_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fedldp {
namespace {

// Steps the one-coordinate model x through estimates x + d for each d of
// `pseudo_gradients`, returning the models after each round.
std::vector<double> Walk(const ServerOptimizerConfig& c, double x0,
                         const std::vector<double>& pseudo_gradients) {
  ServerOptimizer optimizer(c, 1);
  std::vector<float> x = {static_cast<float>(x0)};
  std::vector<double> models;
  for (const double d : pseudo_gradients) {
    const std::vector<float> estimate = {static_cast<float>(x[0] + d)};
    optimizer.Step(x, estimate);
    models.push_back(x[0]);
  }
  return models;
}

// Adam's or Yogi's settings in the tests below.
ServerOptimizerConfig Adaptive(ServerOptimizerKind kind) { return {kind, 0.01, 0.9, 0.99, 1e-2}; }

// Relative float precision on models of size ~1.
constexpr double kTol = 1e-6;

TEST(ServerOptimizer, FedAvgAtRateOneIsTheEstimateBitForBit) {
  ServerOptimizerConfig c;
  ASSERT_TRUE(c.is_identity());
  ServerOptimizer optimizer(c, 3);
  std::vector<float> x = {1.0f, -2.0f, 3.5f};
  const std::vector<float> estimate = {1e-30f, 7.25f, -3.0e7f};
  optimizer.Step(x, estimate);
  EXPECT_EQ(x, estimate);
}

TEST(ServerOptimizer, FedAvgStepsTheLearningRateTowardsTheEstimate) {
  ServerOptimizerConfig c;
  c.learning_rate = 0.25;
  const auto x = Walk(c, 1.0, {2.0, -4.0});
  EXPECT_NEAR(x[0], 1.5, kTol);
  EXPECT_NEAR(x[1], 1.5 + 0.25 * -4.0, kTol);
}

// FedAvgM: m_t = b1 m_{t-1} + D_t, x_t = x_{t-1} + lr m_t.
TEST(ServerOptimizer, MomentumAccumulatesPseudoGradientsGeometrically) {
  ServerOptimizerConfig c;
  c.kind = ServerOptimizerKind::kMomentum;
  c.learning_rate = 0.5;
  c.beta1 = 0.8;
  const auto x = Walk(c, 0.0, {1.0, 1.0, -2.0});
  const double m1 = 1, m2 = 0.8 * m1 + 1, m3 = 0.8 * m2 - 2;
  EXPECT_NEAR(x[0], 0.5 * m1, kTol);
  EXPECT_NEAR(x[1], 0.5 * (m1 + m2), kTol);
  EXPECT_NEAR(x[2], 0.5 * (m1 + m2 + m3), kTol);
}

// Adam (Reddi et al. 2021, Algorithm 2), from m_0 = 0 and v_0 = tau^2.
TEST(ServerOptimizer, AdamMatchesReddiEtAlsUpdate) {
  const ServerOptimizerConfig c = Adaptive(ServerOptimizerKind::kAdam);
  const auto x = Walk(c, 0.0, {0.5, -0.25});
  const double m1 = 0.1 * 0.5, v1 = 0.99 * 1e-4 + 0.01 * 0.25;
  const double x1 = 0.01 * m1 / (std::sqrt(v1) + 1e-2);
  EXPECT_NEAR(x[0], x1, kTol * 1e-2);
  const double m2 = 0.9 * m1 + 0.1 * -0.25, v2 = 0.99 * v1 + 0.01 * 0.0625;
  EXPECT_NEAR(x[1], x1 + 0.01 * m2 / (std::sqrt(v2) + 1e-2), kTol * 1e-2);
}

// Yogi: v moves by (1 - b2) D^2 towards D^2, additively.
TEST(ServerOptimizer, YogiMovesVTowardsTheSquaredPseudoGradientAdditively) {
  const ServerOptimizerConfig c = Adaptive(ServerOptimizerKind::kYogi);
  const auto x = Walk(c, 0.0, {0.5, 0.001});
  // v_0 = 1e-4 < D_1^2 = 0.25: v grows by 0.01 * 0.25.
  const double m1 = 0.05, v1 = 1e-4 + 0.01 * 0.25;
  const double x1 = 0.01 * m1 / (std::sqrt(v1) + 1e-2);
  EXPECT_NEAR(x[0], x1, kTol * 1e-2);
  // v_1 > D_2^2 = 1e-6: v shrinks by 0.01 * 1e-6 (Adam's would shrink by ~1 %).
  const double m2 = 0.9 * m1 + 0.1 * 0.001, v2 = v1 - 0.01 * 1e-6;
  EXPECT_NEAR(x[1], x1 + 0.01 * m2 / (std::sqrt(v2) + 1e-2), kTol * 1e-2);
}

TEST(ServerOptimizer, RefusesBadSettingsByName) {
  const auto refusal = [](auto change) {
    ServerOptimizerConfig c;
    change(c);
    return c.Validate().error();
  };
  EXPECT_EQ(ServerOptimizerConfig{}.Validate().error(), "");
  EXPECT_NE(refusal([](auto& c) { c.learning_rate = 0; }).find("server learning rate"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& c) { c.learning_rate = NAN; }).find("server learning rate"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& c) { c.beta1 = 1; }).find("server beta1 must be in [0, 1)"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& c) { c.beta2 = -0.1; }).find("server beta2"), std::string::npos);
  EXPECT_NE(refusal([](auto& c) { c.tau = 0; }).find("server tau"), std::string::npos);
  EXPECT_NE(refusal([](auto& c) { c.tau = INFINITY; }).find("server tau"), std::string::npos);
  EXPECT_EQ(ServerOptimizerNames(),
            (std::vector<std::string>{"fedavg", "momentum", "adam", "yogi"}));
  EXPECT_EQ(ServerOptimizerName(ServerOptimizerKind::kYogi), "yogi");
}

TEST(IterateAverage, EmaWeighsTheNewIterateOneMinusDecay) {
  IterateAverage ema({IterateAveragingKind::kEma, 0.75, 0.5}, 10);
  EXPECT_EQ(ema.Add(1, std::vector<float>{4.0f})[0], 4.0f);
  EXPECT_NEAR(ema.Add(2, std::vector<float>{8.0f})[0], 0.75 * 4 + 0.25 * 8, kTol);
  EXPECT_NEAR(ema.Add(3, std::vector<float>{0.0f})[0], 0.75 * 5, kTol);
}

TEST(IterateAverage, TailAveragesTheLastRoundsUniformly) {
  // 10 rounds, tail 0.3: rounds 8, 9 and 10 are averaged.
  IterateAverage tail({IterateAveragingKind::kTail, 0.9, 0.3}, 10);
  EXPECT_EQ(tail.first_round(), 8);
  for (int t = 1; t < 8; ++t) {
    EXPECT_EQ(tail.Add(t, std::vector<float>{static_cast<float>(t)})[0], static_cast<float>(t));
  }
  EXPECT_EQ(tail.Add(8, std::vector<float>{8.0f})[0], 8.0f);
  EXPECT_NEAR(tail.Add(9, std::vector<float>{10.0f})[0], 9.0, kTol);
  EXPECT_NEAR(tail.Add(10, std::vector<float>{15.0f})[0], 11.0, kTol);
  EXPECT_EQ(IterateAverage({IterateAveragingKind::kTail, 0.9, 1.0}, 5).first_round(), 1);
  EXPECT_EQ(IterateAverage({IterateAveragingKind::kTail, 0.9, 1e-9}, 5).first_round(), 5);
}

TEST(DescribeServer, NamesTheOptimiserItsSettingsAndWhatIsReleased) {
  EXPECT_EQ(DescribeServer({}, {}, 10),
            "server: fedavg (lr 1: the round's estimate is the new model); releases the last "
            "model");
  EXPECT_EQ(DescribeServer({ServerOptimizerKind::kYogi, 0.01, 0.9, 0.99, 0.001},
                           {IterateAveragingKind::kTail, 0.9, 0.3}, 10),
            "server: yogi (lr 0.01, beta1 0.9, beta2 0.99, tau 0.001); releases the mean of the "
            "models of rounds 8 to 10");
}

TEST(IterateAverage, NoneReleasesTheIterate) {
  IterateAverage none({}, 3);
  EXPECT_EQ(none.Add(1, std::vector<float>{1.0f})[0], 1.0f);
  EXPECT_EQ(none.Add(2, std::vector<float>{-3.0f})[0], -3.0f);
  EXPECT_EQ(IterateAveragingConfig{}.Validate().error(), "");
  EXPECT_FALSE((IterateAveragingConfig{IterateAveragingKind::kEma, 1.0, 0.5}).Validate().ok());
  EXPECT_FALSE((IterateAveragingConfig{IterateAveragingKind::kTail, 0.5, 0.0}).Validate().ok());
  EXPECT_FALSE((IterateAveragingConfig{IterateAveragingKind::kTail, 0.5, NAN}).Validate().ok());
}

}  // namespace
}  // namespace fedldp
