// Vector randomizers against their mathematics, for d in {8, 100, 10^4} and
// eps in {0.5, 1, 2, 4, 8}: every coordinate's mean within 5 standard errors,
// E||R(x) - x||^2 against the closed form, PrivUnitG's share of reports in its
// cap against p, and FastProjUnit's bias against its bound. The mutants at the
// end show each check failing on a randomizer built with a wrong constant.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "fedldp/audit/vector_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/discrete.h"
#include "fedldp/random/normal.h"
#include "fedldp/vector/baselines.h"
#include "fedldp/vector/fastprojunit.h"
#include "fedldp/vector/privunitg.h"
#include "testing/continuous_mechanisms.h"

namespace fedldp {
namespace {

constexpr std::size_t kScale = FEDLDP_SANITIZED ? 4 : 1;

std::size_t Draws(std::size_t d) { return (d <= 8 ? 40000 : d <= 100 ? 8000 : 400) / kScale; }
std::size_t ProjectionK(std::size_t d) {
  return std::min<std::size_t>(1000, std::max<std::size_t>(2, d / 4));
}

using Grid = std::tuple<std::size_t, double>;
class VectorGrid : public ::testing::TestWithParam<Grid> {
 protected:
  std::size_t d() const { return std::get<0>(GetParam()); }
  double eps() const { return std::get<1>(GetParam()); }
  std::uint64_t seed() const { return d() * 100 + static_cast<std::uint64_t>(eps() * 10); }
};

// PrivUnitG at an input on the sphere of radius C (no rounding) and at half
// the radius (rounded without bias).
TEST_P(VectorGrid, PrivUnitG) {
  const double clip = 2.0;
  const auto r = PrivUnitG::Create(d(), eps(), clip).value();
  const auto& pr = r.parameters();
  // The cap-to-rest density ratio from (p, gamma) alone: q recomputed from gamma.
  const double q = NormalUpperTail(pr.gamma);
  EXPECT_LE(pr.p * (1 - q) / ((1 - pr.p) * q), std::exp(eps()) * (1 + 1e-12));
  const auto u = audit::TestDirection(d(), 1.0, seed());
  for (double norm : {clip, clip / 2}) {
    std::vector<double> x(u);
    for (double& v : x) v *= norm;
    const auto s = audit::DrawVectorReports(r, x, Draws(d()), seed() + (norm == clip), u,
                                            clip * pr.sigma * pr.gamma);
    const auto mean = audit::CheckCoordinateMeans(s, x);
    EXPECT_TRUE(mean.pass) << mean.reason;
    const double mse = r.SquaredError(norm);
    const auto err = audit::CheckSquaredError(s, mse, mse);
    EXPECT_TRUE(err.pass) << err.reason;
    if (norm == clip) {
      const auto cap = audit::CheckCapShare(s, pr.p);
      EXPECT_TRUE(cap.pass) << cap.reason;
    }
  }
}

// FastProjUnit: exact error at x = 0; at norm C the error within its bracket,
// the shrink along x within [1 - beta, 1], every coordinate's mean within
// the bias bound.
TEST_P(VectorGrid, FastProjUnit) {
  const double clip = 1.5;
  const std::size_t k = ProjectionK(d());
  for (bool shared : {false, true}) {
    const auto r = FastProjUnit::Create(d(), eps(), clip, k, shared, 5).value();
    const std::size_t n = Draws(d());
    const std::vector<double> zero(d(), 0.0);
    const auto s0 = audit::DrawVectorReports(r, zero, n, seed());
    const auto err0 = audit::CheckSquaredError(s0, r.SquaredError(0), r.SquaredError(0));
    EXPECT_TRUE(err0.pass) << err0.reason;
    const auto mean0 = audit::CheckCoordinateMeans(s0, zero);
    EXPECT_TRUE(mean0.pass) << mean0.reason;

    const auto u = audit::TestDirection(d(), 1.0, seed());
    std::vector<double> x(u);
    for (double& v : x) v *= clip;
    const auto s = audit::DrawVectorReports(r, x, n, seed() + 1, u, 0);
    const auto err =
        audit::CheckSquaredError(s, r.SquaredErrorLowerBound(clip), r.SquaredError(clip));
    EXPECT_TRUE(err.pass) << err.reason;
    const auto shrink = audit::CheckMeanWithin(s.along, clip * (1 - r.beta()), clip, "<R(x), x^>");
    EXPECT_TRUE(shrink.pass) << shrink.reason;
    const auto mean = audit::CheckCoordinateMeans(s, x, r.BiasBound(x));
    EXPECT_TRUE(mean.pass) << mean.reason;
  }
}

TEST_P(VectorGrid, Gaussian) {
  for (bool classic : {false, true}) {
    const auto r = GaussianRandomizer::Create(d(), eps(), 1e-6, 1.0, classic).value();
    const auto x = audit::TestDirection(d(), 0.8, seed());
    const auto s = audit::DrawVectorReports(r, x, Draws(d()), seed());
    const auto mean = audit::CheckCoordinateMeans(s, x);
    EXPECT_TRUE(mean.pass) << mean.reason;
    const auto err = audit::CheckSquaredError(s, r.SquaredError(0.8), r.SquaredError(0.8));
    EXPECT_TRUE(err.pass) << err.reason;
  }
}

TEST_P(VectorGrid, Duchi) {
  const auto r = DuchiVectorRandomizer::Create(d(), eps(), 1.0).value();
  const auto x = audit::TestDirection(d(), 0.9, seed());
  const auto s = audit::DrawVectorReports(r, x, Draws(d()), seed());
  const auto mean = audit::CheckCoordinateMeans(s, x);
  EXPECT_TRUE(mean.pass) << mean.reason;
  const double mse = r.SquaredError(0.9);
  const auto err = audit::CheckSquaredError(s, mse * (1 - 1e-8), mse * (1 + 1e-8));
  EXPECT_TRUE(err.pass) << err.reason;
}

INSTANTIATE_TEST_SUITE_P(DimensionsAndBudgets, VectorGrid,
                         ::testing::Combine(::testing::Values(8, 100, 10000),
                                            ::testing::Values(0.5, 1.0, 2.0, 4.0, 8.0)),
                         [](const auto& info) {
                           std::string name = "d";
                           name += std::to_string(std::get<0>(info.param));
                           name += "_eps";
                           name += std::to_string(static_cast<int>(std::get<1>(info.param) * 10));
                           return name;
                         });

// Every registered randomizer through the audit's generic checks
// (vector_checks.h's AuditVectorRandomizer: its implemented privacy, the
// means within its bias bound, the error within its bounds, the support),
// at every point of the grid: a randomizer added to the registry is covered
// here without a line naming it.
TEST_P(VectorGrid, EveryRegisteredRandomizerPassesTheAudit) {
  for (const auto& name : VectorMechanismNames()) {
    VectorRandomizerConfig c;
    c.mechanism = ParseVectorMechanism(name).value();
    c.dimension = d();
    c.epsilon = eps();
    c.clip = 1.5;
    if (c.mechanism.traits().needs_delta) c.delta = 1e-6;
    c.public_seed = seed();
    const auto r = MakeVectorRandomizer(c).value();
    const auto a = audit::AuditVectorRandomizer(*r, Draws(d()) / 4, seed(), 0);
    EXPECT_TRUE(a.pass) << name << ": " << a.note;
  }
}

// The projection's bias on a spiky input (two equal coordinates, the hardest
// for the normalisation), measured without privacy noise, within its bound.
TEST(FastProjUnitBias, MeasuredBiasIsWithinTheBound) {
  for (bool shared : {false, true}) {
    const auto r = FastProjUnit::Create(100, 4, 1.0, 25, shared, 3).value();
    std::vector<double> x(100, 0.0);
    x[0] = x[1] = std::sqrt(0.5);
    CounterRng rng(12);
    const auto bias = r.ProjectionBias(x, 20000 / kScale, rng);
    double worst = 0;
    for (double b : bias) worst = std::max(worst, std::fabs(b));
    EXPECT_LE(worst, r.BiasBound(x)) << "shared " << shared;
    EXPECT_LE(r.BiasBound(x), std::sqrt(r.beta()) + 1e-15);
  }
}

// A randomizer whose noise is `factor` times the true one's: a wrong constant.
class Mutant final : public VectorRandomizer {
 public:
  Mutant(const VectorRandomizer& r, double factor)
      : VectorRandomizer(r.dimension(), r.clip()), r_(r), factor_(factor) {}
  std::string name() const override { return "mutant"; }
  double epsilon() const override { return r_.epsilon(); }
  ExactPrivacy ImplementedPrivacy() const override { return r_.ImplementedPrivacy(); }
  double SquaredError(double n) const override { return r_.SquaredError(n); }
  double WorstCaseSquaredError() const override { return r_.WorstCaseSquaredError(); }
  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override {
    r_.Randomize(x, out, rng);
    for (double& v : out) v *= factor_;
  }

 private:
  const VectorRandomizer& r_;
  double factor_;
};

TEST(VectorMutants, PrivUnitGWithWrongConstantsIsCaught) {
  const std::size_t d = 8;
  const double clip = 1, eps = 2;
  const auto good = PrivUnitG::Create(d, eps, clip).value();
  const auto u = audit::TestDirection(d, 1.0, 1);
  const auto judge = [&](const PrivUnitGParameters& claimed, const PrivUnitGParameters& used) {
    const auto m = PrivUnitG::WithParameters(d, eps, clip, used);
    const auto s =
        audit::DrawVectorReports(m, u, 20000, 2, u, clip * claimed.sigma * claimed.gamma);
    const double mse = PrivUnitG::WithParameters(d, eps, clip, claimed).SquaredError(1);
    return std::tuple(audit::CheckCoordinateMeans(s, u).pass,
                      audit::CheckSquaredError(s, mse, mse).pass,
                      audit::CheckCapShare(s, claimed.p).pass);
  };
  const auto& pr = good.parameters();
  EXPECT_EQ(judge(pr, pr), std::tuple(true, true, true));
  auto sigma = pr;
  sigma.sigma *= 1.02;  // sigma 2 % off: the error check
  EXPECT_FALSE(std::get<1>(judge(pr, sigma)));
  sigma.sigma = pr.sigma * 1.3;  // the mean check
  EXPECT_FALSE(std::get<0>(judge(pr, sigma)));
  auto p = pr;
  p.p += 0.03;  // the cap share check
  EXPECT_FALSE(std::get<2>(judge(pr, p)));
  EXPECT_GT(p.WorstRatio(), std::exp(eps));
}

TEST(VectorMutants, BaselinesAndFastProjUnitWithWrongConstantsAreCaught) {
  const std::size_t d = 100;
  const auto x = audit::TestDirection(d, 1.0, 3);
  const std::vector<double> zero(d, 0.0);
  const auto gaussian = GaussianRandomizer::Create(d, 1, 1e-6, 1, false).value();
  const auto duchi = DuchiVectorRandomizer::Create(d, 50, 1).value();
  const auto fpu = FastProjUnit::Create(d, 4, 1, 25, false).value();
  for (const VectorRandomizer* r :
       std::initializer_list<const VectorRandomizer*>{&gaussian, &duchi, &fpu}) {
    const double mse = r->SquaredError(0);
    const auto s = audit::DrawVectorReports(Mutant(*r, 1.03), zero, 20000, 4);
    EXPECT_FALSE(audit::CheckSquaredError(s, mse, mse).pass) << r->name();
  }
  // FastProjUnit's shrink check catches an output 3 % too long: its mean
  // along x is about 1.03 against the bound 1, with a standard error of
  // 0.0048 at 20,000 draws (z near 6, missed by some seeds), 0.0028 at 60,000
  // (z near 11).
  const auto s = audit::DrawVectorReports(Mutant(fpu, 1.03), x, 60000, 5, x, 0);
  const auto along = audit::CheckMeanWithin(s.along, 1 - fpu.beta(), 1, "<R(x), x^>");
  EXPECT_FALSE(along.pass) << along.reason;
  // A biased Gaussian (mean 20 % short) fails the mean check.
  const auto sharp = GaussianRandomizer::Create(8, 8, 1e-6, 1, false).value();
  const auto x8 = audit::TestDirection(8, 1.0, 3);
  const auto g = audit::DrawVectorReports(Mutant(sharp, 0.8), x8, 20000, 6);
  EXPECT_FALSE(audit::CheckCoordinateMeans(g, x8).pass);
  EXPECT_TRUE(audit::CheckCoordinateMeans(audit::DrawVectorReports(sharp, x8, 20000, 6), x8).pass);
}

// Issue 39's support check: the Gaussians' reports and duchi's lie on their
// public support at any input, while the Gaussian as it was before issue 39
// (noise added in doubles) has nearly every report off the grid.
TEST(PublicSupport, HoldsForTheRepairAndCatchesNoiseAddedInDoubles) {
  const auto g = GaussianRandomizer::Create(16, 1, 1e-6, 1, false).value();
  const auto classic = GaussianRandomizer::Create(16, 4, 1e-6, 1, true).value();
  const auto duchi = DuchiVectorRandomizer::Create(16, 1, 1).value();
  const auto x = audit::TestDirection(16, 0.9, 3);
  const std::vector<double> zero(16, 0.0);
  for (const VectorRandomizer* r :
       std::initializer_list<const VectorRandomizer*>{&g, &classic, &duchi}) {
    for (const auto& input : {x, zero}) {
      const auto v = audit::CheckPublicSupport(*r, input, 2000, 4);
      EXPECT_TRUE(v.pass) << r->name() << ": " << v.reason;
    }
  }
  const testing::ContinuousGaussian before(g);
  const auto at_x = audit::CheckPublicSupport(before, x, 2000, 4);
  EXPECT_FALSE(at_x.pass);
  EXPECT_GT(at_x.value, 0.99) << at_x.reason;
  std::printf("gaussian before issue 39, d = 16, eps 1: %.1f %% of reports off the grid\n",
              100 * at_x.value);
}

// The same for PrivUnitG and FastProjUnit (its sent z), at x, at 0 and at a
// tiny and a huge input; PrivUnitG as it was (doubles) is caught.
TEST(PublicSupport, HoldsForPrivUnitGAndFastProjUnitAndCatchesDoubles) {
  const auto p = PrivUnitG::Create(16, 2, 1).value();
  const auto fpu = FastProjUnit::Create(16, 2, 1, 4, false).value();
  const auto x = audit::TestDirection(16, 0.9, 3);
  std::vector<double> tiny(x), huge(x);
  for (double& v : tiny) v *= 1e-300;
  for (double& v : huge) v *= 1e300;
  for (const auto& input : {x, std::vector<double>(16, 0.0), tiny, huge}) {
    const auto a = audit::CheckPublicSupport(p, input, 2000, 4);
    EXPECT_TRUE(a.pass) << a.reason;
    const auto b = audit::CheckPublicSupport(fpu, input, 2000, 4);  // its sent z
    EXPECT_TRUE(b.pass) << b.reason;
  }
  const testing::ContinuousPrivUnitG before(p);
  const auto at_x = audit::CheckPublicSupport(before, x, 2000, 4);
  EXPECT_FALSE(at_x.pass);
  EXPECT_GT(at_x.value, 0.99) << at_x.reason;
  std::printf("privunitg before issue 39, d = 16, eps 2: %.1f %% of reports off the grid\n",
              100 * at_x.value);
}

// The grid: every entry a multiple of g = 2^(floor(log2 sigma) - 10), a
// report with one entry moved by an ulp refused, and the error closed form
// d (sigma^2 + g^2 / 12).
TEST(GaussianGrid, ReportsAreOnTheGridAndValidated) {
  const auto g = GaussianRandomizer::Create(64, 2, 1e-5, 1, false).value();
  const auto grid = g.Grid().value();
  EXPECT_EQ(grid.step, std::ldexp(1.0, std::ilogb(g.sigma()) - 10));
  CounterRng rng(9);
  auto report = g.Randomize(audit::TestDirection(64, 0.5, 1), rng);
  EXPECT_TRUE(g.ValidateReport(report).ok());
  report[7] = std::nextafter(report[7], 100.0);
  EXPECT_FALSE(g.ValidateReport(report).ok());
  const double s = g.sigma();
  EXPECT_DOUBLE_EQ(g.SquaredError(0.5), 64 * (s * s + grid.step * grid.step / 12));
  EXPECT_EQ(g.sensitivity(), 2 * (1 + 0x1p-24));
  EXPECT_EQ(g.delta(), 1e-5);  // the allowance is inside the asked delta
}

}  // namespace
}  // namespace fedldp

namespace fedldp {
namespace {

// laplace-l1 (src/vector/laplace_l1.cc), reached through the registry alone.
// Its constants recomputed from the derivation there: K = 2^ceil(log2(64
// sqrt(d))), L = ceil(2 sqrt(d) K (1 + 2^-24)) + 2d, rate r = s / t <= eps / L.
struct LaplaceL1Constants {
  double levels, sensitivity;
  RationalRate rate;
};

LaplaceL1Constants LaplaceConstants(std::size_t d, double eps) {
  const double root = std::sqrt(static_cast<double>(d));
  const double levels = std::exp2(std::ceil(std::log2(64 * root)));
  const double sensitivity =
      std::ceil(2 * root * levels * (1 + 0x1p-24)) + 2 * static_cast<double>(d);
  return {levels, sensitivity, RationalRateBelow(eps / sensitivity).value()};
}

std::unique_ptr<VectorRandomizer> MakeLaplaceL1(std::size_t d, double eps, double clip) {
  VectorRandomizerConfig c;
  c.mechanism = ParseVectorMechanism("laplace-l1").value();
  c.dimension = d, c.epsilon = eps, c.clip = clip;
  return MakeVectorRandomizer(c).value();
}

// ln P[j | u] of one coordinate's level j at level input u: the randomized
// rounding of u mixed over the discrete Laplace at rate r.
double LogCoordinateMass(std::int64_t j, double u, double r) {
  const double low = std::floor(u), up = RoundUpProbability(u);
  const auto law = [r](double y) {
    return std::log(-std::expm1(-r) / (1 + std::exp(-r))) - r * std::fabs(y);
  };
  const double a = law(static_cast<double>(j) - low), b = law(static_cast<double>(j) - low - 1);
  return std::log((1 - up) * std::exp(a) + up * std::exp(b));
}

TEST(LaplaceL1, ConstantsAreTheDerivations) {
  for (std::size_t d : {1, 4, 16, 1000}) {
    for (double eps : {0.5, 2.0, 8.0}) {
      const auto r = MakeLaplaceL1(d, eps, 2);
      const auto k = LaplaceConstants(d, eps);
      EXPECT_EQ(r->Grid()->step, 2 / k.levels);
      EXPECT_DOUBLE_EQ(r->ImplementedPrivacy().log_ratio, k.sensitivity * k.rate.value());
      EXPECT_LE(r->ImplementedPrivacy().log_ratio, eps);
      EXPECT_GT(r->ImplementedPrivacy().log_ratio, eps * (1 - 1e-8));
      const double var = 2 * std::exp(-k.rate.value()) / std::pow(-std::expm1(-k.rate.value()), 2);
      const double g = 2 / k.levels, n = static_cast<double>(d);
      EXPECT_DOUBLE_EQ(r->SquaredErrorLowerBound(1), g * g * n * var);
      EXPECT_DOUBLE_EQ(r->SquaredError(1), g * g * n * (0.25 + var));
    }
  }
}

// A coordinate's levels at a fractional input against the exact law
// (chi-square over every level within 12 scales, the tails lumped).
TEST(LaplaceL1, ACoordinateFollowsItsExactLaw) {
  const double eps = 1, clip = 2;
  const auto r = MakeLaplaceL1(1, eps, clip);
  const auto k = LaplaceConstants(1, eps);
  const double g = clip / k.levels, x = 0.3 * clip, u = x / g;
  const auto width = static_cast<std::int64_t>(std::ceil(12 / k.rate.value()));
  const auto low = static_cast<std::int64_t>(std::floor(u)) - width;
  std::vector<double> probability(2 * static_cast<std::size_t>(width) + 3, 0.0);
  double inside = 0;
  for (std::size_t i = 1; i + 1 < probability.size(); ++i) {
    probability[i] =
        std::exp(LogCoordinateMass(low + static_cast<std::int64_t>(i) - 1, u, k.rate.value()));
    inside += probability[i];
  }
  probability.front() = probability.back() = (1 - inside) / 2;  // symmetric up to 2^-53
  std::vector<std::uint64_t> count(probability.size(), 0);
  CounterRng rng(7);
  for (int n = 0; n < 200000 / static_cast<int>(kScale); ++n) {
    const double y = r->Randomize(std::vector<double>{x}, rng)[0];
    const auto j = static_cast<std::int64_t>(std::llround(y / g)) - low + 1;
    ++count[static_cast<std::size_t>(
        std::clamp<std::int64_t>(j, 0, static_cast<std::int64_t>(count.size()) - 1))];
  }
  const auto v = audit::CheckChiSquare(count, probability);
  EXPECT_TRUE(v.pass) << v.reason;
}

// The exact worst log ratio of a report under two inputs, from the law:
// at the ends of the l1 diameter (x = C 1 / sqrt(d) and -x, levels without
// rounding) it is r 2 sqrt(d) K, within the rounding's share 2d / L below
// eps; at fractional inputs it stays below eps. The same computation with
// the noise calibrated to 2C (the l-infinity diameter, a wrong constant)
// exceeds eps.
TEST(LaplaceL1, ExactRatioMeetsEpsAndAWrongConstantFails) {
  const std::size_t d = 4;
  const double eps = 1, clip = 1;
  const auto k = LaplaceConstants(d, eps);
  const double g = clip / k.levels;
  const auto worst = [&](const std::vector<double>& x, const std::vector<double>& y, double r) {
    // Each coordinate's worst over levels far outside both inputs, summed.
    double total = 0;
    for (std::size_t i = 0; i < d; ++i) {
      double best = 0;
      for (std::int64_t j :
           {-static_cast<std::int64_t>(4 * k.levels), static_cast<std::int64_t>(4 * k.levels)}) {
        best = std::max(
            best, std::fabs(LogCoordinateMass(j, x[i] / g, r) - LogCoordinateMass(j, y[i] / g, r)));
      }
      total += best;
    }
    return total;
  };
  const std::vector<double> end(d, clip / 2), other(d, -clip / 2);  // sqrt(4) = 2
  const double at_ends = worst(end, other, k.rate.value());
  EXPECT_LE(at_ends, eps);
  EXPECT_GE(at_ends, eps * (1 - 1.0 / 32));
  const std::vector<double> a = {0.3, -0.41, 0.1234567, 0.2}, b = {-0.29, 0.5, -0.33, -0.1};
  EXPECT_LE(worst(a, b, k.rate.value()), eps);
  const double wrong = eps / (2 * k.levels + 2 * static_cast<double>(d));
  EXPECT_GT(worst(end, other, wrong), eps);
}

}  // namespace
}  // namespace fedldp
