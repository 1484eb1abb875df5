// PrivUnitG sent as a seed (vector/seeded_privunit.h) against its
// mathematics: the constants from the derivation, the decoded report a
// function of the 16 bytes sent, every coordinate's mean and the squared
// error against the closed form, the cap share, the acceptance rate at
// inputs of every shape, and the ratio of an event's probability under u and
// -u against e^eps, which a wrong acceptance constant fails.
#include "fedldp/vector/seeded_privunit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fedldp/audit/vector_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/normal.h"
#include "fedldp/vector/fastprojunit.h"
#include "fedldp/vector/privunitg.h"

namespace fedldp {
namespace {

constexpr std::size_t kScale = FEDLDP_SANITIZED ? 4 : 1;

// Counts the words drawn: an encode draws 1 (the sphere's sign) + 3 a trial.
class CountingRng final : public Rng {
 public:
  explicit CountingRng(std::uint64_t seed) : inner_(seed) {}
  result_type operator()() override { return ++words_, inner_(); }
  std::uint64_t words() const { return words_; }

 private:
  CounterRng inner_;
  std::uint64_t words_ = 0;
};

TEST(SeededPrivUnitG, ConstantsAreTheDerivations) {
  for (std::size_t d : {1, 8, 1000, 1000000}) {
    for (double eps : {0.5, 1.0, 2.0, 4.0, 8.0}) {
      const auto r = SeededPrivUnitG::Create(d, eps, 2.0).value();
      const auto pu = PrivUnitG::Create(d, eps, 2.0).value();
      EXPECT_EQ(r.gamma(), pu.parameters().gamma);
      const double q = NormalUpperTail(r.gamma());
      // p' a multiple of 2^-64 at or above e^-eps, stated eps' within eps.
      const double p = r.off_cap_acceptance();
      EXPECT_EQ(std::ldexp(p, 64), std::floor(std::ldexp(p, 64)));
      EXPECT_GE(p, std::exp(-eps));
      const double stated = r.ImplementedPrivacy().log_ratio;
      EXPECT_LE(stated, eps);
      EXPECT_GT(stated, eps - 1e-6) << "d " << d << " eps " << eps;
      // eps' from its parts: ln(1 / p') and the acceptance's spread.
      const double slack = r.cap_share_slack();
      EXPECT_LT(slack, 1e-9);
      const double spread = std::log((p + (1 - p) * (q + slack)) / (p + (1 - p) * (q - slack)));
      EXPECT_NEAR(stated, -std::log(p) + spread, 1e-12);
      EXPECT_NEAR(r.acceptance(), q + p * (1 - q), 1e-15);
      EXPECT_EQ(r.max_trials(), static_cast<std::uint64_t>(std::ceil(64 * std::log(2.0) / p)));
      // PrivUnitG's error at the same gamma: the goal is 1.05x at most.
      EXPECT_NEAR(r.SquaredError(0) / pu.SquaredError(0), 1, 1e-6);
      EXPECT_NEAR(r.SquaredError(1.5) / pu.SquaredError(1.5), 1, 1e-6);
    }
  }
}

TEST(SeededPrivUnitG, RefusesWhatItCannotState) {
  EXPECT_FALSE(SeededPrivUnitG::Create(100, 20, 1).ok());     // 10^6 trials a report
  EXPECT_FALSE(SeededPrivUnitG::Create(100, 1e-13, 1).ok());  // below its own slack
  EXPECT_FALSE(SeededPrivUnitG::Create(0, 1, 1).ok());
  EXPECT_FALSE(SeededPrivUnitG::Create(10, 1, -1).ok());
  const auto big = SeededPrivUnitG::Create(10, 20, 1);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().find("privunitg"), std::string::npos) << big.error();
}

TEST(SeededPrivUnitG, TheReportIsSixteenBytesAndDecodesToRandomize) {
  static_assert(sizeof(SeedReport) == kSeedReportBytes);
  const auto r = SeededPrivUnitG::Create(300, 3, 1.0).value();
  std::vector<double> x(300, 0.01), a(300), b(300), c(300);
  CounterRng one(5), two(5);
  r.Randomize(x, a, one);
  const SeedReport seed = r.Encode(x, two);
  r.Decode(seed, b);
  EXPECT_EQ(a, b);
  // The decoded report depends on the seed alone.
  r.Decode(seed, c);
  EXPECT_EQ(b, c);
  r.Decode({seed.hi, seed.lo + 1}, c);
  EXPECT_NE(b, c);
}

// Mean, error and cap share at x = C u (no rounding to the sphere) and at
// half the radius (rounded without bias).
TEST(SeededPrivUnitG, MeansErrorAndCapShareMatchTheClosedForm) {
  for (std::size_t d : {8, 100, 1000}) {
    for (double eps : {1.0, 4.0}) {
      const double clip = 1.5;
      const auto r = SeededPrivUnitG::Create(d, eps, clip).value();
      const auto u = audit::TestDirection(d, 1.0, d + 7);
      const std::size_t n = (d <= 8 ? 40000 : d <= 100 ? 8000 : 2000) / kScale;
      for (double norm : {clip, clip / 2}) {
        std::vector<double> x(u);
        for (double& v : x) v *= norm;
        const auto s = audit::DrawVectorReports(r, x, n, d + (norm == clip), u, r.Cap()->threshold);
        const auto mean = audit::CheckCoordinateMeans(s, x);
        EXPECT_TRUE(mean.pass) << mean.reason;
        const auto err = audit::CheckSquaredError(s, r.SquaredError(norm), r.SquaredError(norm));
        EXPECT_TRUE(err.pass) << err.reason;
        if (norm == clip) {
          const auto cap = audit::CheckCapShare(s, r.Cap()->share);
          EXPECT_TRUE(cap.pass) << cap.reason;
        }
      }
    }
  }
}

// The acceptance rate A is what the privacy rests on: at inputs of every
// shape (a coordinate axis, dense, spiky, zero, huge, non-finite entries)
// the mean number of trials is 1 / A within 5 standard errors of a geometric
// count; a rate 10 % off is caught. Not scaled down under the sanitizers:
// telling 1 / A from 1.1 / A at 5 standard errors each side needs n > 10^4
// (1 - A) draws (A = 0.082 here), so n = 12,000 (at d = 100, a few seconds
// under ASan).
TEST(SeededPrivUnitG, AcceptanceRateIsTheSameAtEveryInput) {
  const std::size_t d = 100;
  const double eps = 4;
  const auto r = SeededPrivUnitG::Create(d, eps, 1.0).value();
  const double a = r.acceptance();
  std::vector<std::vector<double>> inputs(6, std::vector<double>(d, 0.0));
  inputs[0][3] = 1;                                      // an axis
  for (double& v : inputs[1]) v = 1 / std::sqrt(100.0);  // dense
  inputs[2][0] = 0.9, inputs[2][1] = -1e-310;            // spiky, with a subnormal entry
  // inputs[3]: zero
  for (double& v : inputs[4]) v = 1e300;  // huge (clipped)
  inputs[5][7] = std::numeric_limits<double>::quiet_NaN(), inputs[5][8] = 0.5;
  const std::size_t n = 12000;
  ASSERT_GT(static_cast<double>(n), 1e4 * (1 - a));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    CountingRng rng(100 + i);
    for (std::size_t k = 0; k < n; ++k) r.Encode(inputs[i], rng);
    const double trials = static_cast<double>(rng.words() - n) / 3 / static_cast<double>(n);
    const double se = std::sqrt((1 - a) / (a * a) / static_cast<double>(n));
    EXPECT_NEAR(trials, 1 / a, 5 * se) << "input " << i;
    EXPECT_GT(std::fabs(trials - 1.1 / a), 5 * se) << "input " << i;
  }
}

struct EventShares {
  double at_u = 0, at_minus_u = 0;
};

// The shares of reports with <R, u> >= C sigma' gamma at x = C u and at
// x = -C u: (q / A) and (p' q / A), so their ratio is 1 / p' = e^eps.
EventShares CapEventShares(const SeededPrivUnitG& r, std::size_t n, std::uint64_t seed) {
  const auto u = audit::TestDirection(r.dimension(), 1.0, seed);
  std::vector<double> x(u), minus(u);
  for (double& v : x) v *= r.clip();
  for (double& v : minus) v *= -r.clip();
  const double threshold = r.Cap()->threshold;
  const auto at = audit::DrawVectorReports(r, x, n, seed, u, threshold);
  const auto away = audit::DrawVectorReports(r, minus, n, seed + 1, u, threshold);
  return {static_cast<double>(at.in_cap) / static_cast<double>(n),
          static_cast<double>(away.in_cap) / static_cast<double>(n)};
}

// |ln(share ratio) - eps| in standard errors of the log ratio.
double RatioZ(const EventShares& s, std::size_t n, double eps) {
  const auto nn = static_cast<double>(n);
  const double se =
      std::sqrt((1 - s.at_u) / (nn * s.at_u) + (1 - s.at_minus_u) / (nn * s.at_minus_u));
  return std::fabs(std::log(s.at_u / s.at_minus_u) - eps) / se;
}

TEST(SeededPrivUnitG, EventRatioIsEToTheEpsAndAWrongConstantFails) {
  const std::size_t n = 40000 / kScale;
  for (double eps : {1.0, 2.0, 3.0}) {
    const auto r = SeededPrivUnitG::Create(8, eps, 1.0).value();
    const auto shares = CapEventShares(r, n, 11);
    const double q = NormalUpperTail(r.gamma());
    EXPECT_NEAR(shares.at_u, q / r.acceptance(), 5 * std::sqrt(0.25 / n));
    EXPECT_LT(RatioZ(shares, n, eps), 5) << "eps " << eps;
    // Off-cap acceptance e^(-1.25 eps) while claiming eps: the ratio shows it.
    const auto wrong =
        SeededPrivUnitG::WithAcceptance(8, eps, 1.0, r.gamma(), std::exp(-1.25 * eps));
    EXPECT_GT(RatioZ(CapEventShares(wrong, n, 11), n, eps), 5) << "eps " << eps;
  }
}

// FastProjUnit with its k-dimensional PrivUnitG sent as a seed: 8 + 16
// bytes; decoded as sent; the error exact at x = 0 and within its bracket at
// norm C, the means within the projection's bias bound.
TEST(FastProjUnitSeed, SendsTwentyFourBytesAndMatchesItsErrorBracket) {
  const std::size_t d = 100, k = 25;
  const double clip = 1.5, eps = 2;
  const auto r = FastProjUnit::Create(d, eps, clip, k, false, 0, true).value();
  EXPECT_EQ(r.name(), "fastprojunit-seed");
  EXPECT_TRUE(r.varying_draws());
  const auto inner = SeededPrivUnitG::Create(k, eps, 1.0).value();
  EXPECT_EQ(r.ImplementedPrivacy().log_ratio, inner.ImplementedPrivacy().log_ratio);
  EXPECT_FALSE(FastProjUnit::Create(d, eps, clip, k, true, 0, true).ok());

  const auto u = audit::TestDirection(d, 1.0, 3);
  std::vector<double> x(u), a(d), b(d);
  for (double& v : x) v *= clip;
  CounterRng one(8), two(8);
  r.Randomize(x, a, one);
  const ProjectedReport sent = r.Encode(x, two);
  ASSERT_TRUE(sent.candidate.has_value());
  EXPECT_TRUE(sent.z.empty());
  EXPECT_TRUE(r.ValidateProjected(sent).ok());
  EXPECT_EQ(sizeof(sent.seed) + kSeedReportBytes, 24u);
  r.Decode(sent, b);
  EXPECT_EQ(a, b);
  ProjectedReport unseeded = sent;
  unseeded.candidate.reset();
  EXPECT_FALSE(r.ValidateProjected(unseeded).ok());

  const std::size_t n = 8000 / kScale;
  const std::vector<double> zero(d, 0.0);
  const auto s0 = audit::DrawVectorReports(r, zero, n, 21);
  const auto err0 = audit::CheckSquaredError(s0, r.SquaredError(0), r.SquaredError(0));
  EXPECT_TRUE(err0.pass) << err0.reason;
  const auto mean0 = audit::CheckCoordinateMeans(s0, zero);
  EXPECT_TRUE(mean0.pass) << mean0.reason;
  const auto s = audit::DrawVectorReports(r, x, n, 22);
  const auto err =
      audit::CheckSquaredError(s, r.SquaredErrorLowerBound(clip), r.SquaredError(clip));
  EXPECT_TRUE(err.pass) << err.reason;
  const auto mean = audit::CheckCoordinateMeans(s, x, r.BiasBound(x));
  EXPECT_TRUE(mean.pass) << mean.reason;
}

}  // namespace
}  // namespace fedldp
