// The Gaussian samplers against the normal law: moments, the probability
// integral transform binned for a chi-square test, and the tail beyond the
// ziggurat's r; each check is shown to fail on a sampler with a wrong constant.
#include "fedldp/random/normal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <vector>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/exact_normal.h"

namespace fedldp {
namespace {

constexpr std::size_t kDraws = FEDLDP_SANITIZED ? 1'000'000 : 4'000'000;

// Pearson's test of u (uniform on (0, 1] if the law is right) in `bins` bins.
audit::Verdict UniformBins(const std::vector<double>& u, std::size_t bins) {
  std::vector<std::uint64_t> counts(bins, 0);
  for (double v : u) ++counts[std::min(bins - 1, static_cast<std::size_t>(v * bins))];
  const std::vector<double> p(bins, 1.0 / bins);
  return audit::CheckChiSquare(counts, p);
}

struct NormalVerdicts {
  audit::Verdict mean, variance, law, tail;
};

// Samples (times `scale`, the mutant's wrong constant) against N(0, 1).
NormalVerdicts Judge(const std::vector<double>& z, double scale) {
  std::vector<double> s(z.size()), u(z.size());
  std::size_t beyond = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    s[i] = z[i] * scale;
    u[i] = NormalCdf(s[i]);
    beyond += std::fabs(s[i]) > 3.6541528853610088;
  }
  const auto m = audit::SampleMoments(s);
  const double p = 2 * NormalUpperTail(3.6541528853610088);
  const double n = static_cast<double>(z.size());
  const double tail_z = (beyond - n * p) / std::sqrt(n * p * (1 - p));
  return {audit::CheckMean(m, 0, 1),
          audit::CheckVariance(m, 1, 3),
          UniformBins(u, 1000),
          {std::fabs(tail_z) <= 5, "tail z = " + std::to_string(tail_z), tail_z}};
}

TEST(FillStandardNormal, FollowsTheNormalLaw) {
  CounterRng rng(2026);
  std::vector<double> z(kDraws);
  FillStandardNormal(z, rng);
  const auto v = Judge(z, 1.0);
  EXPECT_TRUE(v.mean.pass) << v.mean.reason;
  EXPECT_TRUE(v.variance.pass) << v.variance.reason;
  EXPECT_TRUE(v.law.pass) << v.law.reason;
  EXPECT_TRUE(v.tail.pass) << v.tail.reason;
}

TEST(FillStandardNormal, ChecksFailOnAWrongScale) {
  CounterRng rng(2027);
  std::vector<double> z(kDraws);
  FillStandardNormal(z, rng);
  // A ziggurat built for N(0, 1.02^2) (every layer's width 2 % off).
  const auto v = Judge(z, 1.02);
  EXPECT_FALSE(v.variance.pass);
  EXPECT_FALSE(v.law.pass);
  EXPECT_FALSE(Judge(z, 1.05).tail.pass);  // the tail's mass is 2.6e-4: a coarser mutant
  // A biased sampler fails the mean check.
  std::vector<double> shifted(z);
  for (double& x : shifted) x += 0.01;
  EXPECT_FALSE(Judge(shifted, 1.0).mean.pass);
}

TEST(ZigguratNormal, OneAtATimeFollowsTheNormalLaw) {
  CounterRng rng(7);
  std::vector<double> z(kDraws / 4);
  for (double& x : z) x = ZigguratNormal(rng);
  const auto v = Judge(z, 1.0);
  EXPECT_TRUE(v.mean.pass) << v.mean.reason;
  EXPECT_TRUE(v.variance.pass) << v.variance.reason;
  EXPECT_TRUE(v.law.pass) << v.law.reason;
}

TEST(FillStandardNormal, IsReproducibleFromTheSeed) {
  CounterRng a(11), b(11);
  std::vector<double> x(5000), y(5000);
  FillStandardNormal(x, a);
  FillStandardNormal(y, b);
  EXPECT_EQ(x, y);
}

// N(0, 1) conditioned on Z >= lo: mean m = phi(lo) / Q(lo), variance
// 1 + lo m - m^2, and Q(Z) / Q(lo) uniform.
struct TruncatedVerdicts {
  bool support;
  audit::Verdict mean, variance, law;
};
TruncatedVerdicts JudgeAbove(const std::vector<double>& z, double lo) {
  const double q = NormalUpperTail(lo);
  const double m = NormalDensity(lo) / q;
  const double var = 1 + lo * m - m * m;
  // E[(Z - m)^4] of the truncated normal, from its raw moments:
  // E Z^k = (k - 1) E Z^(k-2) + lo^(k-1) phi(lo) / q.
  const double e1 = m, e2 = 1 + lo * m;
  const double e3 = 2 * e1 + lo * lo * m;
  const double e4 = 3 * e2 + lo * lo * lo * m;
  const double fourth = e4 - 4 * m * e3 + 6 * m * m * e2 - 3 * m * m * m * m;
  bool support = true;
  std::vector<double> u(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    support = support && z[i] >= lo;
    u[i] = NormalUpperTail(z[i]) / q;
  }
  const auto mom = audit::SampleMoments(z);
  return {support, audit::CheckMean(mom, m, var), audit::CheckVariance(mom, var, fourth),
          UniformBins(u, 200)};
}

class NormalAboveTest : public ::testing::TestWithParam<double> {};

TEST_P(NormalAboveTest, FollowsTheTruncatedLaw) {
  const double lo = GetParam();
  CounterRng rng(static_cast<std::uint64_t>(1000 + 10 * lo));
  std::vector<double> z(kDraws / 10);
  for (double& x : z) x = NormalAbove(lo, rng);
  const auto v = JudgeAbove(z, lo);
  EXPECT_TRUE(v.support);
  EXPECT_TRUE(v.mean.pass) << v.mean.reason;
  EXPECT_TRUE(v.variance.pass) << v.variance.reason;
  EXPECT_TRUE(v.law.pass) << v.law.reason;
  // A sampler whose threshold is off by 0.02 fails (where the truncation
  // removes enough mass to tell: not at lo = -3, P[Z < -3] = 0.0013).
  if (lo < -1) return;
  const auto wrong = JudgeAbove(z, lo + 0.02);
  EXPECT_FALSE(wrong.support && wrong.mean.pass && wrong.law.pass);
  const auto low = JudgeAbove(z, lo - 0.02);
  EXPECT_FALSE(low.mean.pass && low.law.pass);
}

INSTANTIATE_TEST_SUITE_P(Thresholds, NormalAboveTest,
                         ::testing::Values(-3.0, 0.0, 0.49, 0.5, 1.5, 4.0, 9.0));

TEST(NormalBelow, IsTheMirrorOfNormalAbove) {
  CounterRng a(5), b(5);
  for (int i = 0; i < 1000; ++i) {
    const double x = NormalBelow(0.7, a);
    EXPECT_LE(x, 0.7);
    EXPECT_EQ(x, -NormalAbove(-0.7, b));
  }
}

TEST(NormalCdf, MatchesKnownValuesFarIntoTheTails) {
  EXPECT_NEAR(NormalCdf(0), 0.5, 1e-16);
  EXPECT_NEAR(NormalCdf(1.959963984540054), 0.975, 1e-15);
  // Q(10) = 7.619853024160527e-24: relative accuracy, not absolute.
  EXPECT_NEAR(NormalUpperTail(10) / 7.619853024160527e-24, 1, 1e-13);
  EXPECT_NEAR(NormalDensity(1), 0.24197072451914337, 1e-16);
}

// The exact normal, read as sign (box + U) 2^-6 with U's first word (the
// double nearest the word's midpoint): the same law checks as the ziggurat's,
// and they fail on a 2 % wrong scale.
TEST(ExactNormal, FollowsTheNormalLaw) {
  CounterRng rng(2028);
  std::vector<double> z(kDraws);
  for (double& x : z) {
    const ExactNormalDraw d = DrawExactNormal(rng);
    x = d.sign * (d.box + (static_cast<double>(d.first_word) + 0.5) * 0x1p-64) * 0x1p-6;
  }
  const auto v = Judge(z, 1.0);
  EXPECT_TRUE(v.mean.pass) << v.mean.reason;
  EXPECT_TRUE(v.variance.pass) << v.variance.reason;
  EXPECT_TRUE(v.law.pass) << v.law.reason;
  EXPECT_TRUE(v.tail.pass) << v.tail.reason;
  const auto mutant = Judge(z, 1.02);
  EXPECT_FALSE(mutant.variance.pass);
  EXPECT_FALSE(mutant.law.pass);
}

// Each box's share of accepted draws against its exact probability, 2 (Phi((j +
// 1) h) - Phi(j h)) for |Z| in box j (boxes past 4 pooled): a wrong weight
// in the table or a wrong acceptance constant moves some box's share.
TEST(ExactNormal, EveryBoxHasItsExactProbability) {
  constexpr int kShown = 256;  // |Z| < 4
  std::vector<double> p(kShown + 1);
  for (int j = 0; j < kShown; ++j) {
    p[j] = 2 * (NormalCdf((j + 1) * 0x1p-6) - NormalCdf(j * 0x1p-6));
  }
  p[kShown] = 2 * NormalUpperTail(4.0);
  std::vector<std::uint64_t> counts(kShown + 1, 0);
  CounterRng rng(2029);
  for (std::size_t i = 0; i < kDraws; ++i) {
    ++counts[std::min<std::uint32_t>(DrawExactNormal(rng).box, kShown)];
  }
  const auto v = audit::CheckChiSquare(counts, p);
  EXPECT_TRUE(v.pass) << v.reason;
  // A sampler whose boxes were 2 % wider (h = 1.02 2^-6) fails: a scale error
  // of 2 %, noncentrality about 2 n 0.02^2 = 800 at the sanitizers' 10^6.
  const double wide = 1.02 * 0x1p-6;
  for (int j = 0; j < kShown; ++j) p[j] = 2 * (NormalCdf((j + 1) * wide) - NormalCdf(j * wide));
  p[kShown] = 2 * NormalUpperTail(kShown * wide);
  EXPECT_FALSE(audit::CheckChiSquare(counts, p).pass);
}

// The box table: e^(-2^-13) bracketed within 2^-240 (the doubles round it:
// within an ulp of std::exp), and every cumulative interval narrower than
// the 2^-230 the allowance takes.
TEST(ExactNormal, TheBoxTableIsTight) {
  const ExactNormalTable t = InspectExactNormalTable();
  const double a = std::exp(-0x1p-13);
  EXPECT_LE(t.base_low, t.base_high);
  EXPECT_NEAR(t.base_low, a, 2e-16);
  EXPECT_NEAR(t.base_high, a, 2e-16);
  EXPECT_GT(t.widest, 0);
  EXPECT_LT(t.widest, 0x1p-230);
  std::printf("widest F_j interval: 2^%.1f\n", std::log2(t.widest));
  // A bucket marked as deciding its box alone is one the comparisons send
  // to that box at both of its ends, so at every U in it (they are monotone
  // in U); such buckets take most draws.
  EXPECT_EQ(t.sure_disagreements, 0);
  EXPECT_GT(t.sure_share, 0.95);
  std::printf("uniforms whose bucket decides the box: %.2f %%\n", 100 * t.sure_share);
}

// The rounded Gaussian's grid indices against the exact cell probabilities:
// bins of whole cells, each bin's probability a difference of Phi at cell
// boundaries (m +- 1/2) g - x, so the test is exact, not an approximation of
// a continuous law by a discrete one.
// Draws at `at` (by SampleMany, or one at a time), judged against the law at
// x with sigma.
audit::Verdict JudgeCells(const RoundedGaussian& r, double at, double x, double sigma,
                          std::size_t n, std::uint64_t seed, bool one_at_a_time = false) {
  const double g = r.granularity();
  std::vector<std::int64_t> edges;  // bin j: indices in [edges[j], edges[j + 1])
  for (int j = 0; j <= 80; ++j) edges.push_back(std::llround((x + sigma * (-4 + 0.1 * j)) / g));
  auto cdf = [&](std::int64_t m) {  // P[index < m]
    return NormalCdf(((static_cast<double>(m) - 0.5) * g - x) / sigma);
  };
  std::vector<double> p{cdf(edges.front())};
  for (std::size_t j = 0; j + 1 < edges.size(); ++j) p.push_back(cdf(edges[j + 1]) - cdf(edges[j]));
  p.push_back(1 - cdf(edges.back()));
  std::vector<std::uint64_t> counts(p.size(), 0);
  CounterRng rng(seed);
  std::vector<double> values(n, at);
  if (one_at_a_time) {
    for (double& v : values) v = r.Sample(at, rng);
  } else {
    r.SampleMany(values, rng);
  }
  for (const double v : values) {
    const auto m = static_cast<std::int64_t>(v / g);
    if (static_cast<double>(m) * g != v) return {false, "off the grid", v};
    const auto it = std::upper_bound(edges.begin(), edges.end(), m);
    ++counts[static_cast<std::size_t>(it - edges.begin())];
  }
  return audit::CheckChiSquare(counts, p);
}

TEST(RoundedGaussian, CellsFollowTheExactLawAndAMutantFails) {
  for (const double sigma : {0.75, 1.0, 3e-3}) {
    const auto r = RoundedGaussian::Create(sigma).value();
    const double x = 0.3 * sigma + 0.37 * r.granularity();  // off the grid
    const auto v = JudgeCells(r, x, x, sigma, kDraws / 2, 31);
    EXPECT_TRUE(v.pass) << sigma << ": " << v.reason;
  }
  const auto one = RoundedGaussian::Create(1.0).value();
  const auto single = JudgeCells(one, -0.2, -0.2, 1.0, kDraws / 4, 32, true);
  EXPECT_TRUE(single.pass) << single.reason;
  // Noise 2 % wider than it claims, or an input moved by 5 % of sigma (both
  // with noncentrality over 400 at the sanitizers' 500,000 draws).
  const auto wide = RoundedGaussian::Create(1.02).value();
  EXPECT_FALSE(JudgeCells(wide, 0.3, 0.3, 1.0, kDraws / 2, 31).pass);
  const auto right = RoundedGaussian::Create(1.0).value();
  EXPECT_FALSE(JudgeCells(right, 0.35, 0.3, 1.0, kDraws / 2, 31).pass);
}

TEST(RoundedGaussian, OutputsLieOnThePublicGrid) {
  const auto r = RoundedGaussian::Create(0.6).value();
  EXPECT_EQ(r.granularity(), 0x1p-11);  // 2^(floor(log2 0.6) - 10)
  CounterRng rng(5);
  for (const double x : {0.0, 1e-300, -0.123456789, 0.5, 7.25}) {
    for (int i = 0; i < 1000; ++i) {
      const double y = r.Sample(x, rng);
      ASSERT_EQ(std::ldexp(y, 11), std::nearbyint(std::ldexp(y, 11))) << x << " " << y;
    }
  }
  EXPECT_FALSE(RoundedGaussian::Create(0).ok());
  EXPECT_FALSE(RoundedGaussian::Create(-1).ok());
  EXPECT_FALSE(RoundedGaussian::Create(std::nan("")).ok());
  EXPECT_FALSE(RoundedGaussian::Create(HUGE_VAL).ok());
  EXPECT_FALSE(RoundedGaussian::Create(1e-305).ok());
}

// Digits in a given order (32-bit halves of the words, high first), so the
// rounding's arithmetic can be checked at chosen points: box 0 (a uniform of
// two zero digits, below F_0), accepted at once (a digit whose top 13 bits
// exceed 2j = 0), the sign digit (odd: negative), then U's digits.
class Script final : public Rng {
 public:
  explicit Script(const std::vector<std::uint32_t>& digits) {
    for (std::size_t i = 0; i < digits.size(); i += 2) {
      const std::uint64_t low = i + 1 < digits.size() ? digits[i + 1] : 0;
      words_.push_back((std::uint64_t{digits[i]} << 32) | low);
    }
  }
  result_type operator()() override {
    if (words_.empty()) throw std::runtime_error("the script ran out of words");
    const auto w = words_.front();
    words_.pop_front();
    return w;
  }
  std::size_t left() const { return words_.size(); }

 private:
  std::deque<std::uint64_t> words_;
};

std::int64_t ScriptedIndex(double x, std::uint32_t u0, bool negative,
                           const std::vector<std::uint32_t>& more, std::size_t expect_left = 0) {
  // The box pick's digit: bucket 0 (its top 14 bits), which box 0 holds
  // alone; its spare bits the first V's 13 bits (all ones: accepted at once)
  // and the sign. Then U's digits.
  std::vector<std::uint32_t> d{0x3ffeu | (negative ? 1u : 0u), u0};
  d.insert(d.end(), more.begin(), more.end());
  Script s(d);
  const auto r = RoundedGaussian::Create(1.0).value();  // g = 2^-10, sigma / g = 2^10
  const std::int64_t m = r.SampleIndex(x, s);
  EXPECT_EQ(s.left(), expect_left);
  return m;
}

// sigma = 1, box 0: the index is floor(x' / g + 2^10 Z + 1/2), Z = +-(U0 2^-32
// + U1 2^-64 + ...) 2^-6, so 2^10 Z = +-16 U; x' / g = x 2^74 exactly here.
TEST(RoundedGaussian, DecidesTheCellExactly) {
  constexpr std::uint32_t kHalf = 1u << 27;  // 16 U = 1/2 at U0 = 2^27
  // Decided by the first digit: 16 U0 2^-32 + 1/2 = 6 - 2^-28 + [0, 2^-28).
  EXPECT_EQ(ScriptedIndex(0, 5 * (kHalf << 1) + kHalf - 1, false, {}), 5);
  EXPECT_EQ(ScriptedIndex(0, 5 * (kHalf << 1) + kHalf, false, {}), 6);
  EXPECT_EQ(ScriptedIndex(0, 5 * (kHalf << 1) + kHalf - 1, true, {}), -5);  // -5 + 2^-28 - tail
  // x' / g = 2^-60: 1 - 2^-28 + 2^-60 + U1 2^-60 + ...: cell 1 from U1 = 2^32 - 1.
  EXPECT_EQ(ScriptedIndex(0x1p-70, kHalf - 1, false, {~0u - 1}), 0);
  EXPECT_EQ(ScriptedIndex(0x1p-70, kHalf - 1, false, {~0u}), 1);
  EXPECT_EQ(ScriptedIndex(0x1p-70, kHalf - 1, false, {~0u, 7, 7}, 1), 1);  // no more read
  // x' / g = 2^-64, U1 all ones: 1 - 2^-60 + 2^-64 + U2 2^-92: cell 1 from
  // U2 = 15 2^28, decided by the third digit.
  EXPECT_EQ(ScriptedIndex(0x1p-74, kHalf - 1, false, {~0u, 0xF0000000u - 1}), 0);
  EXPECT_EQ(ScriptedIndex(0x1p-74, kHalf - 1, false, {~0u, 0xF0000000u}), 1);
  // Negative: 2^-64 - U1 2^-60 - U2 2^-92 - ...: cell 0 up to U1 = 0, U2 = 2^28.
  const std::uint32_t edge = 1u << 28;
  EXPECT_EQ(ScriptedIndex(0x1p-74, kHalf, true, {0, edge - 1}), 0);
  EXPECT_EQ(ScriptedIndex(0x1p-74, kHalf, true, {0, edge + 1}), -1);
  // At U2 = 2^28 exactly every digit counts; the unread tail is positive almost
  // surely, so the cell is -1, and the eighth digit ends the reading.
  EXPECT_EQ(ScriptedIndex(0x1p-74, kHalf, true, {0, edge, 0, 0, 0, 0, 0}), -1);
  EXPECT_EQ(ScriptedIndex(0x1p-74, kHalf, true, {0, edge, 0, 0, 0, 0, 1}), -1);
}

}  // namespace
}  // namespace fedldp
