#include "fedldp/model/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fedldp {
namespace {

// For both losses (without clipping) and every label in [0, classes): each
// coordinate of the gradient against the central difference of the objective.
void ExpectGradientsMatchFiniteDifferences(const std::vector<double>& w,
                                           const std::vector<float>& x, int classes) {
  for (Loss loss : {Loss::kLogistic, Loss::kHinge}) {
    const LinearModel model{loss, 0.01, 1e9};
    for (int y = 0; y < classes; ++y) {
      std::vector<double> g(w.size());
      model.Gradient(w, x, y, g);
      for (std::size_t j = 0; j < w.size(); ++j) {
        auto wp = w, wm = w;
        wp[j] += 1e-6;
        wm[j] -= 1e-6;
        const double numeric = (model.Objective(wp, x, y) - model.Objective(wm, x, y)) / 2e-6;
        EXPECT_NEAR(g[j], numeric, 1e-6) << LossName(loss) << " y=" << y << " j=" << j;
      }
    }
  }
}

TEST(LinearModel, GradientMatchesFiniteDifferences) {
  ExpectGradientsMatchFiniteDifferences({0.3, -0.2, 0.7, 1.1}, {0.5f, -1.0f, 0.0f, 0.25f}, 2);
}

TEST(LinearModel, GradientIsClippedToTheMechanismDomain) {
  const std::vector<float> x = {50.0f, -50.0f, 0.1f};
  const std::vector<double> w = {0, 0, 0};
  const LinearModel model{Loss::kHinge, 1e-4, 1.0};
  std::vector<double> g(3);
  model.Gradient(w, x, 1, g);
  EXPECT_EQ(g[0], -1.0);
  EXPECT_EQ(g[1], 1.0);
  EXPECT_NEAR(g[2], -0.1, 1e-7);
}

TEST(LinearModel, NormalisingKeepsTheDirection) {
  const std::vector<float> x = {4.0f, -2.0f, 0.5f};
  const std::vector<double> w = {0, 0, 0};
  const LinearModel model{Loss::kHinge, 0.0, 1.0, GradientScaling::kNormalize};
  std::vector<double> g(3);
  model.Gradient(w, x, 1, g);  // raw gradient -x = (-4, 2, -0.5)
  EXPECT_DOUBLE_EQ(g[0], -1.0);
  EXPECT_DOUBLE_EQ(g[1], 0.5);
  EXPECT_DOUBLE_EQ(g[2], -0.125);
  const std::vector<float> small = {0.5f, 0.0f, 0.25f};  // scaled up as well
  model.Gradient(w, small, 1, g);
  EXPECT_DOUBLE_EQ(g[0], -1.0);
  EXPECT_DOUBLE_EQ(g[2], -0.5);
  EXPECT_FALSE(ParseGradientScaling("squash").ok());
}

TEST(LinearModel, PredictAndAccuracy) {
  Dataset d;
  d.dimension = 1;
  d.Append(std::vector<float>{1}, 1);
  d.Append(std::vector<float>{-1}, 0);
  d.Append(std::vector<float>{2}, 0);
  const std::vector<double> w = {1};
  EXPECT_NEAR(LinearModel::Accuracy(w, d, {}), 2.0 / 3, 1e-12);
  const std::vector<std::size_t> rows = {0, 1};
  EXPECT_EQ(LinearModel::Accuracy(w, d, rows), 1.0);
  EXPECT_FALSE(ParseLoss("tree").ok());
}

TEST(LinearModel, MulticlassGradientMatchesFiniteDifferences) {
  // Three classes of two features: w is class-major, w_k = w[2k, 2k + 2).
  const std::vector<float> x = {0.5f, -1.5f};
  ExpectGradientsMatchFiniteDifferences({0.3, -0.2, 0.7, 1.1, -0.4, 0.05}, x, 3);
  // The softmax loss at w = 0 is log K; its gradient sums to zero over classes.
  const std::vector<double> zero(6, 0.0);
  const LinearModel model{Loss::kLogistic, 0.0, 1e9};
  EXPECT_NEAR(model.Objective(zero, x, 1), std::log(3.0), 1e-12);
  std::vector<double> g(6);
  model.Gradient(zero, x, 1, g);
  EXPECT_NEAR(g[0] + g[2] + g[4], 0.0, 1e-12);
  EXPECT_NEAR(g[2], (1.0 / 3 - 1) * 0.5, 1e-12);
}

TEST(LinearModel, MulticlassPredictsTheTopScore) {
  Dataset d;
  d.dimension = 2;
  d.classes = 3;
  d.Append(std::vector<float>{1, 0}, 0);
  d.Append(std::vector<float>{0, 1}, 1);
  d.Append(std::vector<float>{-1, -1}, 2);
  d.Append(std::vector<float>{1, 0}, 2);
  EXPECT_EQ(LinearParameters(d), 6u);
  const std::vector<double> w = {1, 0, 0, 1, -1, -1};
  EXPECT_EQ(LinearModel::Predict(w, d.row(2)), 2);
  EXPECT_NEAR(LinearModel::Accuracy(w, d, {}), 0.75, 1e-12);
  d.classes = 2;
  EXPECT_EQ(LinearParameters(d), 2u);
}

}  // namespace
}  // namespace fedldp
