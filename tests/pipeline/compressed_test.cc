#include "fedldp/pipeline/compressed.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp {
namespace {

TEST(Compressed, ProjectionIsPublicGaussianWithVarianceOneOverQ) {
  const auto a =
      CompressedRandomizer::Create(ValueMechanismKind::kPiecewise, 1, 200, 20, 7).value();
  const auto b =
      CompressedRandomizer::Create(ValueMechanismKind::kPiecewise, 1, 200, 20, 7).value();
  EXPECT_EQ(a.projection(), b.projection());
  const auto m = audit::SampleMoments(a.projection());
  EXPECT_TRUE(audit::CheckMean(m, 0, 1.0 / 20).pass);
  // Gaussian: mu4 = 3 sigma^4.
  EXPECT_TRUE(audit::CheckVariance(m, 1.0 / 20, 3.0 / 400).pass);
  EXPECT_FALSE(CompressedRandomizer::Create(ValueMechanismKind::kPiecewise, 1, 10, 11, 1).ok());
  EXPECT_FALSE(CompressedRandomizer::Create(ValueMechanismKind::kPiecewise, 1, 10, 0, 1).ok());
}

TEST(Compressed, RecoveryIsThePseudoInverse) {
  const auto c = CompressedRandomizer::Create(ValueMechanismKind::kPiecewise, 1, 50, 8, 3).value();
  CounterRng rng(4);
  std::vector<double> y(8);
  for (auto& v : y) v = StandardNormal(rng);
  // Phi x-hat = y exactly (to rounding) ...
  const auto x = c.Recover(y);
  const auto back = c.Project(x);
  for (std::size_t a = 0; a < 8; ++a) EXPECT_NEAR(back[a], y[a], 1e-10);
  // ... and a vector in Phi's row space is recovered from its projection.
  std::vector<double> z(8), row_space(50, 0.0);
  for (auto& v : z) v = StandardNormal(rng);
  for (std::size_t a = 0; a < 8; ++a) {
    for (std::size_t j = 0; j < 50; ++j) row_space[j] += c.projection()[a * 50 + j] * z[a];
  }
  const auto again = c.Recover(c.Project(row_space));
  for (std::size_t j = 0; j < 50; ++j) EXPECT_NEAR(again[j], row_space[j], 1e-10);
}

TEST(Compressed, ProjectedEstimateIsUnbiased) {
  const std::size_t d = 40, q = 4;
  const auto c = CompressedRandomizer::Create(ValueMechanismKind::kPiecewise, 2, d, q, 9).value();
  std::vector<double> x(d);
  for (std::size_t j = 0; j < d; ++j) x[j] = 0.1 * std::sin(1.0 + j);  // |Phi x| < 1: no clipping
  const auto y = c.Project(x);
  for (double v : y) ASSERT_LT(std::fabs(v), 1.0);
  const std::size_t n = 200000;
  std::vector<std::vector<double>> contribution(q, std::vector<double>(n, 0.0));
  CounterRng rng(10);
  CompressedAggregator agg(c);
  for (std::size_t i = 0; i < n; ++i) {
    const auto report = c.Randomize(x, rng);
    ASSERT_TRUE(agg.Add(report));
    contribution[report.index[0]][i] = q * report.value[0];
  }
  for (std::size_t a = 0; a < q; ++a) {
    // q M(y_a) w.p. 1/q: variance q (Var_M + y^2) - y^2.
    const double var = q * (c.mechanism().Variance(y[a]) + y[a] * y[a]) - y[a] * y[a];
    const auto check = audit::CheckMean(audit::SampleMoments(contribution[a]), y[a], var);
    EXPECT_TRUE(check.pass) << a << ": " << check.reason;
    EXPECT_NEAR(agg.ProjectedEstimate()[a], y[a], 5 * std::sqrt(var / n));
  }
}

TEST(Compressed, ReportIsEpsLdpExactly) {
  for (double eps : {0.5, 2.0, 8.0}) {
    const auto c = CompressedRandomizer::Create(ValueMechanismKind::kDuchi, eps, 6, 3, 5).value();
    std::vector<std::vector<double>> likelihood;
    for (double scale : {-100.0, -1.0, 0.0, 0.3, 1.0, 100.0}) {
      std::vector<double> x(6);
      for (std::size_t j = 0; j < 6; ++j) x[j] = scale * (j % 2 ? 1 : -1);
      std::vector<double> l;
      for (std::uint32_t i = 0; i < 3; ++i) {
        for (double v : c.mechanism().Atoms()) l.push_back(c.Likelihood({{i}, {v}}, x));
      }
      likelihood.push_back(l);
    }
    EXPECT_TRUE(audit::CheckRatio(audit::WorstRatio(likelihood), eps).pass) << eps;
  }
}

}  // namespace
}  // namespace fedldp
