// Vector randomizers: validation, the exact identities (SRHT, PrivUnitG's
// parameters, the Gaussian's calibration), and inputs an adversary would send.
#include "fedldp/vector/vector_randomizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>
#include <sstream>

#include "fedldp/audit/vector_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/vector/baselines.h"
#include "fedldp/vector/fastprojunit.h"
#include "fedldp/vector/privunitg.h"
#include "fedldp/vector/srht.h"

namespace fedldp {
namespace {

double Norm(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

TEST(VectorRandomizerConfig, RefusesWhatNoRandomizerCanDo) {
  const auto refused = [](VectorRandomizerConfig c, const std::string& says) {
    const auto made = MakeVectorRandomizer(c);
    ASSERT_FALSE(made.ok()) << says;
    EXPECT_NE(made.error().find(says), std::string::npos) << made.error();
  };
  VectorRandomizerConfig ok;
  ok.dimension = 10;
  ASSERT_TRUE(MakeVectorRandomizer(ok).ok());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double eps : {0.0, -1.0, nan, HUGE_VAL, 101.0}) {
    auto c = ok;
    c.epsilon = eps;
    refused(c, "epsilon");
  }
  for (double clip : {0.0, -1.0, nan, HUGE_VAL}) {
    auto c = ok;
    c.clip = clip;
    refused(c, "clip");
  }
  auto c = ok;
  c.dimension = 0;
  refused(c, "dimension");
  c.dimension = kMaxVectorDimension + 1;
  refused(c, "dimension");
  c = ok;
  c.delta = 1e-6;
  refused(c, "takes no delta");
  c = ok;
  c.k = 3;
  refused(c, "k applies to fastprojunit, fastprojunit-corr and fastprojunit-seed only");
  c.mechanism = VectorMechanism::kFastProjUnit;
  c.k = 11;
  refused(c, "k must be in [1, d = 10]");
  for (double delta : {0.0, 1.0, -0.5, nan}) {
    c = ok;
    c.mechanism = VectorMechanism::kGaussian;
    c.delta = delta;
    refused(c, "needs a delta in (0, 1)");
  }
}

TEST(VectorMechanism, NamesRoundTrip) {
  // The named constants name registered randomizers.
  for (const VectorMechanism m :
       {VectorMechanism::kPrivUnitG, VectorMechanism::kFastProjUnit,
        VectorMechanism::kFastProjUnitCorr, VectorMechanism::kGaussian,
        VectorMechanism::kGaussianClassic, VectorMechanism::kDuchi, VectorMechanism()}) {
    const auto parsed = ParseVectorMechanism(m.name());
    ASSERT_TRUE(parsed.ok()) << m.name();
    EXPECT_EQ(*parsed, m);
    EXPECT_EQ(m.kind().name, m.name());
  }
  for (const auto& name : VectorMechanismNames()) {
    const auto m = ParseVectorMechanism(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(VectorMechanismName(*m), name);
  }
  EXPECT_FALSE(ParseVectorMechanism("privunit").ok());
}

// docs/vector-randomizers.md's table has a row for every registered
// randomizer, and every registered kind names itself.
TEST(VectorMechanism, EveryRegisteredNameIsInTheDocsTable) {
  std::ifstream in(std::string(FEDLDP_DOCS) + "/vector-randomizers.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (const VectorRandomizerKind* k : VectorRandomizerKinds()) {
    const std::string name(k->name);
    EXPECT_NE(text.str().find("| `" + name + "` |"), std::string::npos) << name;
    EXPECT_FALSE(k->summary.empty()) << name;
    VectorRandomizerConfig c;
    c.mechanism = ParseVectorMechanism(name).value();
    c.dimension = 4;
    if (k->traits.needs_delta) c.delta = 1e-6;
    EXPECT_EQ(MakeVectorRandomizer(c).value()->name(), name);
  }
}

TEST(VectorRandomizer, ClipsNonFiniteAndHugeInputsAndReportsStayFinite) {
  for (const auto& name : VectorMechanismNames()) {
    VectorRandomizerConfig c;
    c.mechanism = ParseVectorMechanism(name).value();
    c.dimension = 6;
    c.epsilon = 2;
    c.clip = 1.5;
    if (c.mechanism.traits().needs_delta) c.delta = 1e-6;
    const auto r = MakeVectorRandomizer(c).value();
    CounterRng rng(1);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::vector<double> x :
         std::vector<std::vector<double>>{{0, 0, 0, 0, 0, 0},
                                          {1e300, -1e300, 1e300, 0, 0, 1},
                                          {1e-310, 0, 0, 0, 0, -1e-310},
                                          {nan, INFINITY, -INFINITY, 0.5, 0, 0},
                                          {3, 4, 0, 0, 0, 0}}) {
      const auto out = r->Randomize(x, rng);
      EXPECT_TRUE(r->ValidateReport(out).ok()) << name << ": " << r->ValidateReport(out).error();
      std::vector<double> clipped(6);
      EXPECT_LE(r->ClipInto(x, clipped), 1.5 * (1 + 1e-15));
      EXPECT_LE(Norm(clipped), 1.5 * (1 + 1e-15));
    }
  }
}

// Parameters are checked by what they imply (issue 41): a randomizer is
// made only if its reports stay within 2^450 of their input, so sums and
// squares of reports stay finite (before: PrivUnitG at eps 1e-300 reported
// 1e304, FastProjUnit 4e303, Duchi 4e300). At every eps and clip, each
// registered randomizer is refused saying so, or its draws are that small.
// The denormals too, and a refusal names no inf or NaN (the Gaussian's
// calibration spun for ever at clip 4.9e-324; PrivUnitG's refusal at eps
// 5e-324 said its report "strays -nan"). A grid's step is a normal double
// (laplace-l1's step clip / 128 was 0 at clip 4.9e-324: every report 0, and
// the level inf / 0 overflowed an integer under UBSan).
TEST(VectorRandomizer, IsMadeOnlyIfItsReportsStaySummable) {
  std::size_t refused = 0, made = 0;
  for (const auto& name : VectorMechanismNames()) {
    for (const double eps : {4.9e-324, 1e-300, 1e-100, 1e-20, 1.0, 30.0}) {
      for (const double clip : {4.9e-324, 1e-300, 1e-100, 1.0, 1e100}) {
        VectorRandomizerConfig c;
        c.mechanism = ParseVectorMechanism(name).value();
        c.dimension = 4;
        c.epsilon = eps;
        c.clip = clip;
        if (c.mechanism.traits().needs_delta) c.delta = 1e-6;
        const auto r = MakeVectorRandomizer(c);
        if (!r.ok()) {
          ++refused;
          const bool said = r.error().find("2^450") != std::string::npos ||
                            r.error().find("too small") != std::string::npos ||
                            r.error().find("the Gaussian's sigma") != std::string::npos ||
                            r.error().find("trials of d normals") != std::string::npos;
          EXPECT_TRUE(said) << name << " " << eps << " " << clip << ": " << r.error();
          for (const char* word : {"inf", "nan"}) {
            EXPECT_EQ(r.error().find(word), std::string::npos) << word << " in " << r.error();
          }
          continue;
        }
        ++made;
        EXPECT_LE((*r)->WorstCaseSquaredError(), 0x1p900) << name << " " << eps << " " << clip;
        const auto grid = (*r)->Grid();
        if (grid) {
          EXPECT_TRUE(std::isnormal(grid->step)) << name << " " << eps << " " << clip;
        }
        CounterRng rng(7);
        const std::vector<double> x = {clip, 0, 0, 0};
        for (int draw = 0; draw < 20; ++draw) {
          const std::vector<double> report = (*r)->Randomize(x, rng);
          EXPECT_TRUE((*r)->ValidateReport(report).ok()) << name << " " << eps << " " << clip;
          for (const double v : report) {
            EXPECT_LE(std::abs(v), 0x1p450) << name << " " << eps << " " << clip;
          }
        }
      }
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(made, 0u);
  VectorRandomizerConfig tiny;
  tiny.dimension = 4;
  tiny.epsilon = 1e-300;
  const auto privunitg = MakeVectorRandomizer(tiny);
  ASSERT_FALSE(privunitg.ok());
  EXPECT_NE(privunitg.error().find("privunitg: at eps = 1e-300 and clip 1 a report strays"),
            std::string::npos)
      << privunitg.error();
}

TEST(VectorRandomizer, ValidatesReports) {
  const auto r = DuchiVectorRandomizer::Create(4, 2, 1).value();
  const double b = r.coordinate().bound();
  EXPECT_TRUE(r.ValidateReport(std::vector<double>{b, -b, b, b}).ok());
  EXPECT_FALSE(r.ValidateReport(std::vector<double>{b, -b, b}).ok());
  EXPECT_FALSE(r.ValidateReport(std::vector<double>{b, -b, b, 0.5}).ok());
  const auto g = PrivUnitG::Create(3, 1, 1).value();
  EXPECT_FALSE(g.ValidateReport(std::vector<double>{1, std::nan(""), 0}).ok());
  EXPECT_FALSE(g.ValidateReport(std::vector<double>{1, INFINITY, 0}).ok());
  const auto f = FastProjUnit::Create(100, 1, 1, 10, false).value();
  EXPECT_FALSE(f.ValidateProjected({1, std::vector<double>(9), std::nullopt}).ok());
  EXPECT_TRUE(f.ValidateProjected({1, std::vector<double>(10), std::nullopt}).ok());
}

TEST(VectorRandomizer, ClipScalesOntoTheBall) {
  const auto r = PrivUnitG::Create(2, 1, 2).value();
  std::vector<double> out(2);
  EXPECT_DOUBLE_EQ(r.ClipInto(std::vector<double>{3, 4}, out), 2);
  EXPECT_NEAR(out[0], 1.2, 1e-15);
  EXPECT_NEAR(out[1], 1.6, 1e-15);
  EXPECT_DOUBLE_EQ(r.ClipInto(std::vector<double>{0.3, 0.4}, out), 0.5);
  EXPECT_EQ(out[0], 0.3);
}

// PrivUnitG's parameters from the mathematics: the ratio is e^eps exactly,
// sigma = 1 / mu, and at large d the error per dimension matches the
// published optimum (NOTES.md: 6.33, 1.62, 0.435, 0.133).
TEST(PrivUnitGParameters, AreOptimalAndExactlyPrivate) {
  const double published[] = {6.33, 1.62, 0.435, 0.133};
  const double eps[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    const auto pr = PrivUnitGParameters::Optimal(eps[i], 1'000'000);
    EXPECT_NEAR(pr.WorstRatio() / std::exp(eps[i]), 1, 1e-12);
    EXPECT_NEAR(pr.sigma * pr.mu, 1, 1e-15);
    EXPECT_NEAR(pr.sigma * pr.sigma / published[i], 1, 0.004) << eps[i];
    // gamma is on the exact sampler's grid 2^-6 Z, the best point of it: a
    // step of 2^-6 either way costs more, and the continuous optimum (a step
    // of 1e-3 from it costs more) saves below 1e-4 of the error.
    EXPECT_EQ(pr.gamma * 64, std::round(pr.gamma * 64));
    const double best = pr.SecondMoment(1'000'000);
    for (double step : {-1.0 / 64, 1.0 / 64})
      EXPECT_GT(PrivUnitGParameters::ForGamma(pr.gamma + step, eps[i]).SecondMoment(1'000'000),
                best);
    double continuous = best;
    for (double g = pr.gamma - 1.0 / 64; g <= pr.gamma + 1.0 / 64; g += 1e-4)
      continuous =
          std::min(continuous, PrivUnitGParameters::ForGamma(g, eps[i]).SecondMoment(1'000'000));
    EXPECT_LT(best / continuous - 1, 1e-4);
    EXPECT_GE(best / continuous - 1, 0.0);
  }
  // p from its closed form against the ratio's definition.
  const auto pr = PrivUnitGParameters::ForGamma(1.3, 2.0);
  EXPECT_NEAR(pr.p * (1 - pr.q) / ((1 - pr.p) * pr.q), std::exp(2.0), 1e-12);
  // A wrong p breaks the ratio: the check catches it.
  auto wrong = pr;
  wrong.p += 0.01;
  EXPECT_GT(wrong.WorstRatio(), std::exp(2.0) * (1 + 1e-3));
}

// The floating-point allowance the accountant adds: PrivUnitG's sampler's
// proven total variation, FastProjUnit's that of PrivUnitG in k dimensions,
// none for a law drawn exactly (the Gaussians carry theirs in delta).
TEST(VectorRandomizer, StatesItsDeviationFromTheIdealLaw) {
  const auto make = [](VectorMechanism m, std::size_t d) {
    VectorRandomizerConfig c;
    c.mechanism = m;
    c.dimension = d;
    c.epsilon = 4;
    c.delta = m == VectorMechanism::kGaussian ? 1e-6 : 0.0;
    return MakeVectorRandomizer(c).value();
  };
  const auto small = make(VectorMechanism::kPrivUnitG, 100);
  const auto large = make(VectorMechanism::kPrivUnitG, 1 << 20);
  EXPECT_GT(small->deviation(), 0);
  EXPECT_LT(large->deviation(), 0x1p-190);
  EXPECT_GT(large->deviation(), small->deviation());  // grows with d
  const auto projected = make(VectorMechanism::kFastProjUnit, 1 << 20);
  const auto& inner = dynamic_cast<const FastProjUnit&>(*projected).inner();
  EXPECT_EQ(projected->deviation(), inner.deviation());
  EXPECT_EQ(make(VectorMechanism::kGaussian, 100)->deviation(), 0);
  EXPECT_EQ(make(VectorMechanism::kDuchi, 100)->deviation(), 0);
}

TEST(PrivUnitG, ErrorGrowsWithDimensionAsSigmaSquaredD) {
  for (double eps : {0.5, 1.0, 2.0, 4.0, 8.0}) {
    const auto r = PrivUnitG::Create(10000, eps, 1).value();
    const auto& pr = r.parameters();
    EXPECT_NEAR(r.SquaredError(1), pr.sigma * pr.sigma * 10000 + pr.sigma * pr.gamma - 1, 1e-9);
    EXPECT_EQ(r.WorstCaseSquaredError(), r.SquaredError(0));
  }
}

TEST(WalshHadamard, MatchesTheDefinition) {
  for (std::size_t n : {1, 2, 8, 4096, 8192}) {
    std::vector<double> v(n), fast;
    CounterRng rng(n);
    for (double& x : v) x = Uniform01(rng) - 0.5;
    fast = v;
    WalshHadamardUnnormalised(fast);
    double worst = 0;
    for (std::size_t i = 0; i < n; i += std::max<std::size_t>(1, n / 64)) {
      double sum = 0;  // (H v)_i = sum_j (-1)^popcount(i & j) v_j
      for (std::size_t j = 0; j < n; ++j) sum += (std::popcount(i & j) & 1 ? -1 : 1) * v[j];
      worst = std::max(worst, std::fabs(sum - fast[i]));
    }
    EXPECT_LT(worst, 1e-11) << n;
  }
}

// ||H D x|| = ||x|| to 1e-12 relative; a normalisation built with d instead of
// d' (a wrong constant) is caught.
double RotationNormError(std::size_t d, double mutant_scale) {
  CounterRng rng(d);
  const auto signs = DrawSigns(PaddedDimension(d), rng);
  const Srht w(d, &signs, {});
  std::vector<double> x(d), work(PaddedDimension(d));
  for (double& v : x) v = Uniform01(rng) - 0.5;
  w.Rotate(x, work);
  for (double& v : work) v *= mutant_scale;
  return std::fabs(Norm(work) / Norm(x) - 1);
}

TEST(Srht, RotationIsOrthogonal) {
  for (std::size_t d : {1, 8, 100, 10000, 300000}) {
    EXPECT_LT(RotationNormError(d, 1.0), 1e-12) << d;
    const double wrong =
        std::sqrt(static_cast<double>(PaddedDimension(d)) / static_cast<double>(d));
    if (PaddedDimension(d) != d) {
      EXPECT_GT(RotationNormError(d, wrong), 1e-3) << d;
    }
  }
}

TEST(Srht, BackwardIsTheAdjointAndRowsAreOrthogonal) {
  const std::size_t d = 1000, k = 37;
  CounterRng rng(3);
  const std::size_t padded = PaddedDimension(d);
  ASSERT_EQ(padded, 1024u);
  const auto signs = DrawSigns(padded, rng);
  const auto rows = DrawRows(padded, k, rng);
  ASSERT_EQ(rows.size(), k);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end());
  const Srht w(d, &signs, rows);
  std::vector<double> x(d), y(k), wx(k), wty(d), work(padded);
  for (double& v : x) v = Uniform01(rng) - 0.5;
  for (double& v : y) v = Uniform01(rng) - 0.5;
  w.Forward(x, wx, work);
  w.Backward(y, wty, work);
  double a = 0, b = 0;
  for (std::size_t i = 0; i < k; ++i) a += wx[i] * y[i];
  for (std::size_t i = 0; i < d; ++i) b += x[i] * wty[i];
  EXPECT_NEAR(a, b, 1e-12 * std::fabs(a) + 1e-12);
  // W W^T = (d'/k) I_k, up to the padding rows W^T drops: here on y's own rows
  // W^T y keeps its norm times sqrt(d'/k) when no padding is lost.
  const Srht full(padded, &signs, rows);
  std::vector<double> back(padded), again(k);
  full.Backward(y, back, work);
  full.Forward(back, again, work);
  for (std::size_t i = 0; i < k; ++i)
    EXPECT_NEAR(again[i], static_cast<double>(padded) / k * y[i], 1e-11);
}

TEST(Srht, RowsAreAUniformSubset) {
  // Each of 16 rows is drawn with probability k / 16 = 1/4.
  CounterRng rng(9);
  std::vector<std::uint64_t> counts(16, 0);
  const std::size_t n = 40000;
  for (std::size_t i = 0; i < n; ++i)
    for (auto r : DrawRows(16, 4, rng)) ++counts[r];
  for (auto c : counts) EXPECT_NEAR(static_cast<double>(c) / n, 0.25, 5 * std::sqrt(0.1875 / n));
}

TEST(Srht, RowsPastHalfAreAUniformSubset) {
  // k = 12 of 16 (the rows left out are drawn): each row with probability 3/4,
  // and each pair of rows together with probability (12 * 11) / (16 * 15).
  CounterRng rng(9);
  std::vector<std::uint64_t> counts(16, 0);
  std::uint64_t pair = 0;
  const std::size_t n = 40000;
  for (std::size_t i = 0; i < n; ++i) {
    const auto rows = DrawRows(16, 12, rng);
    ASSERT_EQ(rows.size(), 12u);
    ASSERT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    ASSERT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end());
    for (auto r : rows) ++counts[r];
    pair += std::binary_search(rows.begin(), rows.end(), 0u) &&
            std::binary_search(rows.begin(), rows.end(), 15u);
  }
  for (auto c : counts) EXPECT_NEAR(static_cast<double>(c) / n, 0.75, 5 * std::sqrt(0.1875 / n));
  const double p = 12.0 * 11 / (16 * 15);
  EXPECT_NEAR(static_cast<double>(pair) / n, p, 5 * std::sqrt(p * (1 - p) / n));
  // All rows, and a padded size that is not a multiple of 64.
  EXPECT_EQ(DrawRows(128, 128, rng).size(), 128u);
  const auto most = DrawRows(32, 31, rng);
  ASSERT_EQ(most.size(), 31u);
  EXPECT_LT(most.back(), 32u);
}

// The Gaussian's delta by numerical integration of the hockey-stick divergence
// between N(D, s^2) and N(0, s^2), against the closed form of Balle & Wang.
double IntegratedDelta(double sigma, double eps, double sensitivity) {
  const auto pdf = [&](double x, double mean) {
    const double z = (x - mean) / sigma;
    return std::exp(-0.5 * z * z) / (sigma * std::sqrt(2 * std::numbers::pi));
  };
  const double lo = -40 * sigma, hi = sensitivity + 40 * sigma;
  const int cells = 2'000'000;
  const double h = (hi - lo) / cells;
  double sum = 0;
  for (int i = 0; i <= cells; ++i) {
    const double x = lo + i * h;
    const double f = std::max(0.0, pdf(x, sensitivity) - std::exp(eps) * pdf(x, 0));
    sum += (i == 0 || i == cells ? 1 : (i % 2 ? 4 : 2)) * f;
  }
  return sum * h / 3;
}

TEST(Gaussian, AnalyticCalibrationIsTheSmallestSigmaForDelta) {
  for (double eps : {0.5, 1.0, 4.0}) {
    for (double delta : {1e-5, 1e-8}) {
      const double s = AnalyticGaussianSigma(eps, delta, 2.0);
      EXPECT_LE(GaussianDelta(s, eps, 2.0), delta);
      EXPECT_GT(GaussianDelta(s * (1 - 1e-9), eps, 2.0), delta);
      EXPECT_NEAR(IntegratedDelta(s, eps, 2.0) / delta, 1, 1e-6) << eps << " " << delta;
      // Never above the classic formula where that is proven (eps < 1).
      if (eps < 1) {
        EXPECT_LT(s, ClassicGaussianSigma(eps, delta, 2.0));
      }
    }
  }
  // Balle & Wang's example scale: eps = 1, delta = 1e-5, sensitivity 1.
  EXPECT_NEAR(AnalyticGaussianSigma(1, 1e-5, 1), 3.73, 0.01);
  EXPECT_NEAR(ClassicGaussianSigma(1, 1e-5, 1), 4.845, 0.001);
}

TEST(Gaussian, TheClassicFormulaStatesTheDeltaItReallyGives) {
  const auto small = GaussianRandomizer::Create(10, 0.5, 1e-6, 1, true).value();
  EXPECT_LE(small.delta(), 1e-6);
  const auto large = GaussianRandomizer::Create(10, 8, 1e-6, 1, true).value();
  EXPECT_EQ(large.delta(), GaussianDelta(large.sigma(), 8, large.sensitivity()) +
                               GaussianRandomizer::Allowance(10, 8));
  const auto analytic = GaussianRandomizer::Create(10, 8, 1e-6, 1, false).value();
  EXPECT_EQ(analytic.delta(), 1e-6);
  EXPECT_LT(analytic.sigma(), small.sigma());
}

TEST(FastProjUnit, DecodeOfEncodeIsRandomize) {
  const auto f = FastProjUnit::Create(300, 2, 1.5, 40, false).value();
  const auto x = audit::TestDirection(300, 1.0, 4);
  CounterRng a(8), b(8);
  const auto whole = f.Randomize(x, a);
  const auto report = f.Encode(x, b);
  EXPECT_TRUE(f.ValidateProjected(report).ok());
  std::vector<double> decoded(300);
  f.Decode(report, decoded);
  EXPECT_EQ(whole, decoded);
}

TEST(FastProjUnit, SharedSignsComeFromThePublicSeed) {
  const auto a = FastProjUnit::Create(100, 2, 1, 10, true, 77).value();
  const auto b = FastProjUnit::Create(100, 2, 1, 10, true, 77).value();
  const auto c = FastProjUnit::Create(100, 2, 1, 10, true, 78).value();
  const auto x = audit::TestDirection(100, 1.0, 4);
  CounterRng r1(1), r2(1), r3(1);
  EXPECT_EQ(a.Randomize(x, r1), b.Randomize(x, r2));
  EXPECT_NE(a.Randomize(x, r1), c.Randomize(x, r3));
}

}  // namespace
}  // namespace fedldp
