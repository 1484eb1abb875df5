// The rounded PrivUnit (random/exact_privunit.h): every report on its public
// grid for every class of input, the fast path agreeing with the exact wide
// one on the same words, and the cap's probability against its closed form
// (failing on a table built for another eps).
#include "fedldp/random/exact_privunit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fedldp/random/counter_rng.h"
#include "fedldp/random/normal.h"

namespace fedldp {
namespace {

constexpr std::size_t kCapDraws = FEDLDP_SANITIZED ? 60'000 : 200'000;

RoundedPrivUnit Make(double gamma, double eps) {
  auto r = RoundedPrivUnit::Create(gamma, eps);
  EXPECT_TRUE(r.ok()) << r.error();
  return std::move(r.value());
}

std::vector<std::vector<double>> Inputs() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> in{{0.0},
                                      {-3.0},
                                      {0, 0, 0, 0},
                                      {1, 2, 3},
                                      {1e-300, -2e-300, 5e-310},
                                      {1e300, -1e300, 1},
                                      {std::nan(""), inf, 2.0, -inf},
                                      {0.25, -0.5, 0, 0.125, 1e-20}};
  CounterRng rng(7);
  std::vector<double> wide(300);
  for (double& x : wide) x = Uniform01(rng) - 0.5;
  in.push_back(wide);
  return in;
}

TEST(RoundedPrivUnit, RejectsBadParameters) {
  EXPECT_FALSE(RoundedPrivUnit::Create(0.01, 1).ok());  // not a multiple of 2^-6
  EXPECT_FALSE(RoundedPrivUnit::Create(19.5, 1).ok());  // beyond the boxes
  EXPECT_FALSE(RoundedPrivUnit::Create(0.5, 0).ok());
  EXPECT_FALSE(RoundedPrivUnit::Create(0.5, 101).ok());
  EXPECT_FALSE(RoundedPrivUnit::Create(std::nan(""), 1).ok());
  EXPECT_TRUE(RoundedPrivUnit::Create(-2.25, 0.5).ok());
}

// UnitScaling: the factors put max |x_i| in [1/2, 1), non-finite entries read
// as 0, and the lanes' squared norm is the serial one to rounding (any length,
// not only multiples of the 8 lanes; exact where every square is).
TEST(UnitScaling, ScalesToTheUnitBinadeAndSumsTheSquares) {
  for (const auto& x : Inputs()) {
    const UnitScaling s = UnitScaling::Of(x);
    double serial = 0, largest = 0;
    for (double v : x) {
      const double y = std::isfinite(v) ? v * s.factors[0] * s.factors[1] : 0.0;
      serial += y * y;
      largest = std::max(largest, std::isfinite(v) ? std::fabs(v) : 0.0);
    }
    EXPECT_EQ(s.max_abs, largest);
    const double scaled = largest * s.factors[0] * s.factors[1];
    EXPECT_TRUE(largest == 0 ? scaled == 0 : scaled >= 0.5 && scaled < 1) << scaled;
    EXPECT_NEAR(s.SquaredNorm(x), serial, 1e-15 * serial * static_cast<double>(x.size()));
  }
  const std::vector<double> halves(13, 0.5);  // 13 = one lane block and 5 more
  EXPECT_EQ(UnitScaling::Of(halves).SquaredNorm(halves), 13 * 0.25);
}

// The scaling handed in is the one Sample computes itself: the same report.
TEST(RoundedPrivUnit, AScalingHandedInGivesTheSameReport) {
  const auto r = Make(1.5, 4);
  for (const auto& v : Inputs()) {
    std::vector<double> own(v.size()), given(v.size());
    CounterRng a(5), b(5);
    r.Sample(v, -1, 2.0, own, a);
    r.Sample(v, UnitScaling::Of(v), -1, 2.0, given, b);
    EXPECT_EQ(own, given);
  }
}

TEST(RoundedPrivUnit, EveryReportLiesOnTheGrid) {
  const auto r = Make(1.5, 4);
  for (double scale : {1.0, 3.7, 1e-8, 2e5}) {
    const double g = RoundedPrivUnit::Granularity(scale);
    EXPECT_LE(g, scale * 0x1p-10);
    EXPECT_GT(g, scale * 0x1p-12);
    CounterRng rng(11);
    for (const auto& v : Inputs()) {
      for (int sign : {1, -1}) {
        std::vector<double> out(v.size());
        r.Sample(v, sign, scale, out, rng);
        for (double o : out) {
          ASSERT_TRUE(std::isfinite(o));
          EXPECT_EQ(o / g, std::round(o / g)) << o << " is off the grid " << g;
        }
      }
    }
  }
}

TEST(RoundedPrivUnit, FastPathAgreesWithTheWidePath) {
  // Same words: the fast path's cells must be the exact ones the wide path
  // (GMP, 4 digits) finds, for every coordinate and class of input.
  for (double gamma : {-1.0, 0.5, 3.0}) {
    const auto r = Make(gamma, 2);
    for (const auto& v : Inputs()) {
      for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        std::vector<double> fast(v.size()), wide(v.size());
        CounterRng a(seed), b(seed);
        r.Sample(v, 1, 2.5, fast, a);
        r.SampleWide(v, 1, 2.5, wide, b);
        ASSERT_EQ(fast, wide) << "gamma " << gamma << ", seed " << seed;
      }
    }
  }
}

// The share of reports whose first coordinate (u = e_1, so w_1 = A) is in the
// cap, against p = q / (q + (1 - q) e^-eps): 5 standard errors plus the cap
// edge's rounding (A within G / 2 below gamma, density below 0.4).
double CapShare(const RoundedPrivUnit& r, std::size_t draws) {
  CounterRng rng(2026);
  const std::vector<double> v{1.0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<double> out(v.size());
  std::size_t in_cap = 0;
  for (std::size_t n = 0; n < draws; ++n) {
    r.Sample(v, 1, 1.0, out, rng);
    in_cap += out[0] >= r.gamma();
  }
  return static_cast<double>(in_cap) / static_cast<double>(draws);
}

TEST(RoundedPrivUnit, CapHasItsClosedFormProbability) {
  const double gamma = 0.5, eps = 1;
  const double q = NormalUpperTail(gamma);
  const double p = q / (q + (1 - q) * std::exp(-eps));
  const double n = static_cast<double>(kCapDraws);
  const double tolerance = 5 * std::sqrt(p * (1 - p) / n) + 0.4 * 0x1p-11;
  EXPECT_NEAR(CapShare(Make(gamma, eps), kCapDraws), p, tolerance);
  // A table for eps 1.1 moves p by 0.025, over 8 standard errors at 60,000.
  EXPECT_GT(std::fabs(CapShare(Make(gamma, 1.1), kCapDraws) - p), tolerance);
}

// Off u (u = e_1), w_i = Z_i: variance 1 + G^2 / 12 at scale 1, within 5
// standard errors (sqrt(2 / n)); a 4 % scale (variance 8 % off: 12 SE at
// the sanitizer's 42,000 values, 22 at 140,000) fails. It caught draws read
// before their box was set (an argument evaluated before the call).
TEST(RoundedPrivUnit, OffTheDirectionIsTheNormal) {
  const auto r = Make(0.5, 1);
  CounterRng rng(77);
  const std::vector<double> v{1.0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<double> out(v.size()), z;
  for (std::size_t n = 0; n < kCapDraws / 10; ++n) {
    r.Sample(v, 1, 1.0, out, rng);
    z.insert(z.end(), out.begin() + 1, out.end());
  }
  const auto variance = [&](double scale) {
    double sum = 0, squares = 0;
    for (double x : z) sum += x * scale, squares += x * x * scale * scale;
    const double n = static_cast<double>(z.size());
    return squares / n - (sum / n) * (sum / n);
  };
  const double g = RoundedPrivUnit::Granularity(1.0);
  const double tolerance = 5 * std::sqrt(2.0 / static_cast<double>(z.size()));
  EXPECT_NEAR(variance(1.0), 1 + g * g / 12, tolerance);
  EXPECT_GT(std::fabs(variance(1.04) - 1 - g * g / 12), tolerance);
}

TEST(RoundedPrivUnit, DeviationIsTiny) {
  const auto r = Make(2.0, 8);
  EXPECT_LT(r.DeviationPerReport(1 << 24), 0x1p-180);
  EXPECT_GT(r.DeviationPerReport(1 << 24), 0.0);
}

}  // namespace
}  // namespace fedldp
