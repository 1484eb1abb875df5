#include "fedldp/pipeline/flat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp {
namespace {

TEST(SampleWithoutReplacement, IsUniformOverSets) {
  // d = 5, k = 2: ten sets, each with probability 1/10, in both code paths.
  for (std::size_t k : {2, 4}) {
    CounterRng rng(k);
    std::map<std::vector<std::uint32_t>, std::uint64_t> counts;
    for (int i = 0; i < 100000; ++i) ++counts[SampleWithoutReplacement(5, k, rng)];
    std::vector<std::uint64_t> observed;
    for (const auto& [set, n] : counts) observed.push_back(n);
    const std::size_t sets = k == 2 ? 10 : 5;
    ASSERT_EQ(observed.size(), sets);
    const std::vector<double> p(sets, 1.0 / sets);
    const auto v = audit::CheckChiSquare(observed, p);
    EXPECT_TRUE(v.pass) << v.reason;
  }
  CounterRng rng(1);
  const auto big = SampleWithoutReplacement(1000000, 3, rng);  // Floyd path
  EXPECT_EQ(std::set<std::uint32_t>(big.begin(), big.end()).size(), 3u);
}

TEST(Flat, DefaultKFollowsWangEtAl) {
  EXPECT_EQ(FlatRandomizer::DefaultK(1, 10), 1u);
  EXPECT_EQ(FlatRandomizer::DefaultK(8, 10), 3u);
  EXPECT_EQ(FlatRandomizer::DefaultK(8, 2), 2u);
  EXPECT_FALSE(FlatRandomizer::Create(ValueMechanismKind::kPiecewise, 1, 10, 11).ok());
  EXPECT_FALSE(FlatRandomizer::Create(ValueMechanismKind::kPiecewise, 1, 0).ok());
  EXPECT_FALSE(FlatRandomizer::Create(ValueMechanismKind::kPiecewise, -1, 10).ok());
  EXPECT_FALSE(FlatRandomizer::Create(ValueMechanismKind::kTwoPoint, 1, 10).ok());
}

class FlatMath : public ::testing::TestWithParam<std::tuple<std::string, double>> {};

TEST_P(FlatMath, UnbiasedPerCoordinateWithClosedFormVariance) {
  const auto [name, eps] = GetParam();
  const std::size_t d = 6;
  const auto flat = FlatRandomizer::Create(ParseValueMechanism(name).value(), eps, d, 2).value();
  EXPECT_DOUBLE_EQ(flat.mechanism().epsilon(), eps / 2);
  const std::vector<double> x = {-1, -0.4, 0, 0.25, 0.9, 1};
  const std::size_t n = 200000;
  std::vector<std::vector<double>> contribution(d, std::vector<double>(n, 0.0));
  CounterRng rng(31);
  for (std::size_t i = 0; i < n; ++i) {
    const auto report = flat.Randomize(x, rng);
    ASSERT_TRUE(flat.Validate(report));
    for (std::size_t t = 0; t < report.index.size(); ++t) {
      contribution[report.index[t]][i] = flat.scale() * report.value[t];
    }
  }
  for (std::size_t j = 0; j < d; ++j) {
    const auto m = audit::SampleMoments(contribution[j]);
    const auto mean = audit::CheckMean(m, x[j], flat.CoordinateVariance(x[j]));
    EXPECT_TRUE(mean.pass) << j << ": " << mean.reason;
    // Large n and no rare outcome: the empirical 4th moment is a fair stand-in.
    const auto var = audit::CheckVariance(m, flat.CoordinateVariance(x[j]), m.fourth);
    EXPECT_TRUE(var.pass) << j << ": " << var.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, FlatMath,
                         ::testing::Combine(::testing::Values("pm", "hm", "duchi"),
                                            ::testing::Values(0.5, 2.0, 8.0)));

// Every report of Duchi-based flat with d = 4, k = 2: 6 sets x 4 sign patterns.
std::vector<SparseReport> AllDuchiReports(const FlatRandomizer& flat) {
  std::vector<SparseReport> all;
  const auto atoms = flat.mechanism().Atoms();
  for (std::uint32_t a = 0; a < 4; ++a) {
    for (std::uint32_t b = a + 1; b < 4; ++b) {
      for (double va : atoms) {
        for (double vb : atoms) all.push_back({{a, b}, {va, vb}});
      }
    }
  }
  return all;
}

double WorstFlatRatio(const FlatRandomizer& flat) {
  // Corners of the hypercube and the centre: the adversarial inputs.
  std::vector<std::vector<double>> likelihood;
  for (int corner = 0; corner < 17; ++corner) {
    std::vector<double> x(4);
    for (int j = 0; j < 4; ++j) x[j] = corner == 16 ? 0.0 : ((corner >> j) & 1 ? 1.0 : -1.0);
    std::vector<double> l;
    double total = 0;
    for (const auto& report : AllDuchiReports(flat)) {
      l.push_back(flat.Likelihood(report, x));
      total += l.back();
    }
    EXPECT_NEAR(total, 1.0, 1e-12);  // the enumeration is the whole law
    likelihood.push_back(l);
  }
  return audit::WorstRatio(likelihood);
}

TEST(Flat, ReportIsEpsLdpExactly) {
  for (double eps : {0.5, 2.0, 8.0}) {
    const auto flat = FlatRandomizer::Create(ValueMechanismKind::kDuchi, eps, 4, 2).value();
    const double worst = WorstFlatRatio(flat);
    EXPECT_TRUE(audit::CheckRatio(worst, eps).pass) << eps;
    EXPECT_NEAR(std::log(worst), eps, 1e-6);  // tight: both coordinates at opposite corners
    // Spending eps on each coordinate (a wrong constant) is caught.
    const auto wrong = FlatRandomizer::Create(ValueMechanismKind::kDuchi, 2 * eps, 4, 2).value();
    EXPECT_FALSE(audit::CheckRatio(WorstFlatRatio(wrong), eps).pass) << eps;
  }
}

TEST(Flat, AggregatorRejectsInvalidReportsAndEstimatesTheMean) {
  const auto flat = FlatRandomizer::Create(ValueMechanismKind::kPiecewise, 4, 3, 1).value();
  FlatAggregator agg(flat);
  EXPECT_FALSE(agg.Add({{5}, {0.0}}));           // index out of range
  EXPECT_FALSE(agg.Add({{0}, {100.0}}));         // outside PM's output domain
  EXPECT_FALSE(agg.Add({{0, 1}, {0.0, 0.0}}));   // wrong k
  EXPECT_FALSE(agg.Add({{0}, {std::nan("")}}));  // not a number
  EXPECT_EQ(agg.count(), 0u);
  CounterRng rng(2);
  const std::vector<double> x = {0.5, -0.5, 0.1};
  for (int i = 0; i < 300000; ++i) ASSERT_TRUE(agg.Add(flat.Randomize(x, rng)));
  const auto est = agg.Estimate();
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_NEAR(est[j], x[j], 5 * std::sqrt(flat.CoordinateVariance(x[j]) / agg.count()));
  }
}

}  // namespace
}  // namespace fedldp
