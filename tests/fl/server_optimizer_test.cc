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
    optimizer.Step<float>(x, estimate);
    models.push_back(x[0]);
  }
  return models;
}

// Adam's or Yogi's settings in the tests below.
ServerOptimizerConfig Adaptive(ServerOptimizerKind kind) { return {kind, 0.01, 0.9, 0.99, 1e-2}; }

// Adds the one-coordinate model x after `round`, returning what is released.
float Averaged(IterateAverage& average, int round, float x) {
  const std::vector<float> model = {x};
  std::vector<float> out(1);
  average.Add<float>(round, model);
  average.Release<float>(model, out);
  return out[0];
}

// Relative float precision on models of size ~1.
constexpr double kTol = 1e-6;

TEST(ServerOptimizer, FedAvgAtRateOneIsTheEstimateBitForBit) {
  ServerOptimizerConfig c;
  ASSERT_TRUE(c.is_identity());
  ServerOptimizer optimizer(c, 3);
  std::vector<float> x = {1.0f, -2.0f, 3.5f};
  const std::vector<float> estimate = {1e-30f, 7.25f, -3.0e7f};
  optimizer.Step<float>(x, estimate);
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
  EXPECT_EQ(Averaged(ema, 1, 4.0f), 4.0f);
  EXPECT_NEAR(Averaged(ema, 2, 8.0f), 0.75 * 4 + 0.25 * 8, kTol);
  EXPECT_NEAR(Averaged(ema, 3, 0.0f), 0.75 * 5, kTol);
}

TEST(IterateAverage, TailAveragesTheLastRoundsUniformly) {
  // 10 rounds, tail 0.3: rounds 8, 9 and 10 are averaged.
  IterateAverage tail({IterateAveragingKind::kTail, 0.9, 0.3}, 10);
  EXPECT_EQ(tail.first_round(), 8);
  for (int t = 1; t < 8; ++t) {
    EXPECT_EQ(Averaged(tail, t, static_cast<float>(t)), static_cast<float>(t));
  }
  EXPECT_EQ(Averaged(tail, 8, 8.0f), 8.0f);
  EXPECT_NEAR(Averaged(tail, 9, 10.0f), 9.0, kTol);
  EXPECT_NEAR(Averaged(tail, 10, 15.0f), 11.0, kTol);
  EXPECT_EQ(IterateAverage({IterateAveragingKind::kTail, 0.9, 1.0}, 5).first_round(), 1);
  EXPECT_EQ(IterateAverage({IterateAveragingKind::kTail, 0.9, 1e-9}, 5).first_round(), 5);
}

// tail * rounds rounded up, at least one; a product one rounding above a
// whole number is that number (0.7 * 10 is 7.000000000000001 in doubles,
// which a plain ceil took for 8).
TEST(IterateAverage, TailRoundsRoundUpAllButARoundingAbove) {
  EXPECT_EQ(TailRounds(0.7, 10), 7);
  EXPECT_EQ(TailRounds(0.3, 10), 3);
  EXPECT_EQ(TailRounds(0.35, 10), 4);
  EXPECT_EQ(TailRounds(0.5, 15), 8);
  EXPECT_EQ(TailRounds(0.3, 101), 31);
  EXPECT_EQ(TailRounds(1e-9, 5), 1);
  EXPECT_EQ(TailRounds(1.0, 5), 5);
  EXPECT_EQ(IterateAverage({IterateAveragingKind::kTail, 0.9, 0.7}, 10).first_round(), 4);
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
  EXPECT_EQ(Averaged(none, 1, 1.0f), 1.0f);
  EXPECT_EQ(Averaged(none, 2, -3.0f), -3.0f);
  EXPECT_EQ(IterateAveragingConfig{}.Validate().error(), "");
  EXPECT_FALSE((IterateAveragingConfig{IterateAveragingKind::kEma, 1.0, 0.5}).Validate().ok());
  EXPECT_FALSE((IterateAveragingConfig{IterateAveragingKind::kTail, 0.5, 0.0}).Validate().ok());
  EXPECT_FALSE((IterateAveragingConfig{IterateAveragingKind::kTail, 0.5, NAN}).Validate().ok());
}

// Rounds 1..rounds of a 3-weight double model from `learner`'s state, each
// round's estimate a fixed function of the round: the models and releases.
std::vector<double> RunLearner(ServerLearner& learner, std::vector<double>& x, int from, int to) {
  std::vector<double> trace;
  for (int t = from; t <= to; ++t) {
    const std::vector<double> estimate = {x[0] + 0.5 * t, x[1] - 1.0 / t, 0.25 * t * t};
    learner.Step<double>(t, x, estimate);
    std::vector<double> released(3);
    learner.Release<double>(x, released);
    trace.insert(trace.end(), x.begin(), x.end());
    trace.insert(trace.end(), released.begin(), released.end());
  }
  return trace;
}

// A deployed server's restart: the state after round 3, restored into a new
// learner, goes on exactly as the learner that never stopped.
TEST(ServerLearner, ARestoredStateGoesOnExactlyAsIfNeverStopped) {
  for (const auto kind : {ServerOptimizerKind::kFedAvg, ServerOptimizerKind::kMomentum,
                          ServerOptimizerKind::kAdam, ServerOptimizerKind::kYogi}) {
    for (const auto averaging :
         {IterateAveragingKind::kNone, IterateAveragingKind::kEma, IterateAveragingKind::kTail}) {
      const ServerOptimizerConfig o{kind, kind == ServerOptimizerKind::kFedAvg ? 0.5 : 0.1, 0.8,
                                    0.9, 1e-2};
      const IterateAveragingConfig a{averaging, 0.7, 0.5};  // tail: rounds 4 to 7
      ServerLearner whole(o, a, 7, 3);
      std::vector<double> x_whole = {1, 2, 3};
      const auto expected = RunLearner(whole, x_whole, 1, 7);
      ServerLearner first(o, a, 7, 3);
      std::vector<double> x = {1, 2, 3};
      RunLearner(first, x, 1, 3);
      const std::vector<double> after3 = x;
      const std::vector<double> state = first.State();
      ServerLearner second(o, a, 7, 3);
      ASSERT_TRUE(second.Restore(state).ok()) << second.Restore(state).error();
      const auto rest = RunLearner(second, x, 4, 7);
      EXPECT_TRUE(std::equal(rest.begin(), rest.end(), expected.end() - rest.size()))
          << ServerOptimizerName(kind) << " " << static_cast<int>(averaging);
      // Without the state (moments, or an average begun), it would not.
      if (kind != ServerOptimizerKind::kFedAvg || averaging == IterateAveragingKind::kEma) {
        ServerLearner fresh(o, a, 7, 3);
        std::vector<double> y = after3;
        EXPECT_NE(RunLearner(fresh, y, 4, 7), rest);
      }
    }
  }
  // fedavg at lr 1 without averaging keeps nothing.
  EXPECT_TRUE(ServerLearner({}, {}, 5, 3).State().empty());
}

TEST(ServerLearner, RestoreRefusesAStateItCannotHaveWritten) {
  const ServerOptimizerConfig adam{ServerOptimizerKind::kAdam, 0.1, 0.9, 0.99, 1e-3};
  const IterateAveragingConfig ema{IterateAveragingKind::kEma, 0.9, 0.5};
  const auto refusal = [&](std::vector<double> state, const IterateAveragingConfig& a) {
    ServerLearner learner(adam, a, 5, 2);
    const Status s = learner.Restore(state);
    return s.ok() ? std::string() : s.error();
  };
  // m (2), v (2), then the average: count 1 and the mean (2).
  EXPECT_EQ(refusal({0.1, 0.2, 1e-6, 1e-6, 1, 3, 4}, ema), "");
  EXPECT_EQ(refusal({0.1, 0.2, 1e-6, 1e-6, 0}, ema), "");
  EXPECT_EQ(refusal({0.1, 0.2, 1e-6, 1e-6}, {}), "");
  EXPECT_NE(refusal({0.1, 0.2, 1e-6}, {}), "");                    // too short
  EXPECT_NE(refusal({0.1, NAN, 1e-6, 1e-6}, {}), "");              // m not finite
  EXPECT_NE(refusal({0.1, 0.2, 0, 1e-6}, {}), "");                 // v not positive
  EXPECT_NE(refusal({0.1, 0.2, 1e-6, 1e-6, 1}, {}), "");           // an average unasked for
  EXPECT_NE(refusal({0.1, 0.2, 1e-6, 1e-6, 6, 3, 4}, ema), "");    // more models than rounds
  EXPECT_NE(refusal({0.1, 0.2, 1e-6, 1e-6, 1.5, 3, 4}, ema), "");  // not a count
  EXPECT_NE(refusal({0.1, 0.2, 1e-6, 1e-6, 1, 3}, ema), "");       // a mean too short
  EXPECT_NE(refusal({0.1, 0.2, 1e-6, 1e-6, 1, 3, INFINITY}, ema), "");
  EXPECT_NE(refusal({0.1, 0.2, 1e-6, 1e-6}, ema), "");  // no count
}

// A deployed round closed without enough reports: the model stays, and the
// average counts the round (D = 0 would let momentum carry the model on).
TEST(ServerLearner, ARoundWithoutAnEstimateKeepsTheModelAndAveragesIt) {
  ServerLearner learner({ServerOptimizerKind::kMomentum, 1, 0.9, 0.99, 1e-3},
                        {IterateAveragingKind::kTail, 0.9, 1.0}, 3, 1);
  std::vector<double> x = {0};
  learner.Step<double>(1, x, std::vector<double>{2.0});
  EXPECT_EQ(x[0], 2.0);
  learner.Step<double>(2, x, {});
  EXPECT_EQ(x[0], 2.0);
  learner.Step<double>(3, x, std::vector<double>{2.0});
  EXPECT_NEAR(x[0], 2.0 + 0.9 * 2.0, 1e-12);  // m = 0.9 m + 0: the momentum resumes
  std::vector<double> released(1);
  learner.Release<double>(x, released);
  EXPECT_NEAR(released[0], (2.0 + 2.0 + 3.8) / 3, 1e-12);
}

}  // namespace
}  // namespace fedldp
