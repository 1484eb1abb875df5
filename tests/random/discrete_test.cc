// The exact integer samplers of random/discrete.h against their laws, each
// check shown to fail on a wrong constant.
#include "fedldp/random/discrete.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/integer_laplace.h"

namespace fedldp {
namespace {

constexpr std::size_t kDraws = 200000;

// Mean of kDraws Bernoulli outcomes against p (variance p (1 - p)).
template <typename Draw>
audit::Verdict FrequencyIs(double p, Draw&& draw) {
  std::vector<double> x(kDraws);
  for (double& v : x) v = draw() ? 1.0 : 0.0;
  return audit::CheckMean(audit::SampleMoments(x), p, p * (1 - p));
}

TEST(Discrete, BernoulliExpMinusHasProbabilityExpOfMinusGamma) {
  CounterRng rng(1);
  for (const auto& [num, den] : {std::pair<std::uint64_t, std::uint64_t>{0, 1},
                                 {3, 10},
                                 {1, 1},
                                 {27, 10},
                                 {1ull << 40, 1ull << 41}}) {
    const double gamma = static_cast<double>(num) / static_cast<double>(den);
    auto draw = [&, n = num, d = den] { return BernoulliExpMinus(rng, n, d); };
    if (gamma == 0) {  // certain: no variance for a z-score
      for (int i = 0; i < 1000; ++i) ASSERT_TRUE(draw());
      continue;
    }
    const auto right = FrequencyIs(std::exp(-gamma), draw);
    EXPECT_TRUE(right.pass) << gamma << ": " << right.reason;
    {
      const auto wrong = FrequencyIs(std::exp(-1.1 * gamma), draw);
      EXPECT_FALSE(wrong.pass) << gamma << ": " << wrong.reason;
    }
  }
}

TEST(Discrete, BernoulliRationalIsExact) {
  CounterRng rng(2);
  auto draw = [&] { return BernoulliRational(rng, 1, 3); };
  EXPECT_TRUE(FrequencyIs(1.0 / 3, draw).pass);
  EXPECT_FALSE(FrequencyIs(0.35, draw).pass);
}

// P[Y <= k] for P[Y = y] proportional to exp(-|y| rate).
double LaplaceCdf(double rate, std::int64_t k) {
  const double p = std::exp(-rate);
  if (k < 0) return std::exp(-rate * static_cast<double>(-k)) / (1 + p);
  return 1 - std::exp(-rate * static_cast<double>(k + 1)) / (1 + p);
}

// Pearson's test of integer draws against a distribution function: counts in
// the cells (c_{i-1}, c_i] with cuts every quarter of the scale 1 / rate (every
// integer where that is finer) from `first` to 6 scales, plus the tails.
template <typename T, typename Cdf>
audit::Verdict CellsFollow(const std::vector<T>& draws, double rate, int first, Cdf&& cdf) {
  std::vector<T> cuts;
  for (int i = first; i <= 24; ++i) {
    const auto c = static_cast<T>(std::floor(i / (4 * rate)));
    if (cuts.empty() || c > cuts.back()) cuts.push_back(c);
  }
  std::vector<std::uint64_t> counts(cuts.size() + 1, 0);
  for (const auto y : draws) ++counts[std::lower_bound(cuts.begin(), cuts.end(), y) - cuts.begin()];
  std::vector<double> p(counts.size());
  double below = 0;
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    const double at = cdf(cuts[i]);
    p[i] = at - below;
    below = at;
  }
  p.back() = 1 - below;
  return audit::CheckChiSquare(counts, p);
}

audit::Verdict LaplaceLawIs(double rate, const std::vector<std::int64_t>& draws) {
  return CellsFollow(draws, rate, -24, [rate](std::int64_t k) { return LaplaceCdf(rate, k); });
}

TEST(Discrete, DiscreteLaplaceFollowsItsLaw) {
  for (const auto& [s, t] :
       {std::pair<std::uint64_t, std::uint64_t>{1, 3}, {2, 3}, {7, 1}, {1ull << 30, 1ull << 41}}) {
    CounterRng rng(3 + s);
    std::vector<std::int64_t> draws(kDraws);
    for (auto& y : draws) y = DiscreteLaplace(rng, s, t);
    const double rate = static_cast<double>(s) / static_cast<double>(t);
    const auto right = LaplaceLawIs(rate, draws);
    EXPECT_TRUE(right.pass) << s << "/" << t << ": " << right.reason;
    const auto wrong = LaplaceLawIs(rate * 1.1, draws);
    EXPECT_FALSE(wrong.pass) << s << "/" << t << ": " << wrong.reason;
  }
}

// P[Y <= k] = 1 - exp(-rate (k + 1)).
audit::Verdict GeometricLawIs(double rate, const std::vector<std::uint64_t>& draws) {
  return CellsFollow(draws, rate, 0, [rate](std::uint64_t k) {
    return -std::expm1(-rate * static_cast<double>(k + 1));
  });
}

TEST(Discrete, DiscreteGeometricFollowsItsLaw) {
  for (const auto& [s, t] :
       {std::pair<std::uint64_t, std::uint64_t>{1, 3}, {7, 1}, {1ull << 30, 1ull << 41}}) {
    CounterRng rng(9 + s);
    std::vector<std::uint64_t> draws(kDraws);
    for (auto& y : draws) y = DiscreteGeometric(rng, s, t);
    const double rate = static_cast<double>(s) / static_cast<double>(t);
    EXPECT_TRUE(GeometricLawIs(rate, draws).pass) << s << "/" << t;
    EXPECT_FALSE(GeometricLawIs(rate * 1.1, draws).pass) << s << "/" << t;
  }
  // The rate below a target: never above, within 2^-29 of it down to 2^-22
  // (t = 2^52 at most), within 1 / t below that.
  for (double rate : {1e-12, 3e-7, 0.01, 1.0, 250.0}) {
    const RationalRate r = RationalRateBelow(rate).value();
    EXPECT_LE(r.value(), rate) << rate;
    EXPECT_GE(r.value(), std::min(rate * (1 - 0x1.0p-29), rate - 1.0 / r.t)) << rate;
  }
  EXPECT_FALSE(RationalRateBelow(1e-300).ok());
  EXPECT_FALSE(RationalRateBelow(0).ok());
}

// The integer Laplace's alias table realises its weights exactly: for each
// outcome, its own columns' thresholds plus what other columns hand it sum to
// 2^14 times its weight, as integers.
bool AliasIsExact(const IntegerLaplace::Table& t) {
  const std::uint64_t n = IntegerLaplace::kColumns, total = IntegerLaplace::kTotal;
  std::vector<Uint128> held(n, 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (t.threshold[i] > total) return false;
    held[i] += t.threshold[i];
    held[t.alias[i]] += total - t.threshold[i];
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    if (held[i] != static_cast<Uint128>(t.weight[i]) * n) return false;
  }
  return true;
}

constexpr double kTableRates[] = {0x1.0p-10, 1.0 / 1500, 0x1.0p-11, 0x1.0p-16};

TEST(IntegerLaplace, TableAndRatiosAreExact) {
  for (double rate : kTableRates) {
    const auto law = IntegerLaplace::Create(rate).value();
    auto table = law.table();
    std::uint64_t sum = 0;
    for (const auto w : table.weight) sum += w;
    EXPECT_EQ(sum, IntegerLaplace::kTotal) << rate;
    EXPECT_TRUE(AliasIsExact(table)) << rate;
    ++table.threshold[7];  // a wrong constant: caught
    EXPECT_FALSE(AliasIsExact(table)) << rate;
    // ln R <= rate, within 2^-30 of it.
    EXPECT_LE(law.LogRatio(), rate);
    EXPECT_GE(law.LogRatio(), rate * (1 - 0x1.0p-30));
    // Every adjacent ratio across three passes and zero is within R (to
    // the doubles' rounding), and the bound is met somewhere.
    const auto pass = static_cast<std::int64_t>(IntegerLaplace::kPass);
    double widest = 0;
    for (std::int64_t y = -2 * pass; y < 3 * pass; ++y) {
      const double step = std::fabs(std::log(law.Mass(y) / law.Mass(y + 1)));
      ASSERT_LE(step, law.LogRatio() * (1 + 1e-6) + 1e-12) << rate << " at " << y;
      widest = std::max(widest, step);
    }
    EXPECT_GE(widest, law.LogRatio() * (1 - 1e-3)) << rate;
  }
  EXPECT_FALSE(IntegerLaplace::Create(0x1.0p-9).ok());
  EXPECT_FALSE(IntegerLaplace::Create(0x1.0p-20).ok());
  EXPECT_FALSE(IntegerLaplace::Create(std::nan("")).ok());
}

TEST(IntegerLaplace, ClosedFormsMatchTheTable) {
  for (double rate : kTableRates) {
    const auto law = IntegerLaplace::Create(rate).value();
    // The discrete Laplace of rate ln R: variance 1 / (2 sinh^2(r / 2)), to
    // 1e-6 at the Laplace mechanism's rates (from 2^-11), 1e-4 below.
    const double sh = std::sinh(law.LogRatio() / 2), laplace = 1 / (2 * sh * sh);
    const double within = rate >= 0x1.0p-11 ? 1e-6 : 1e-4;
    EXPECT_NEAR(law.Variance(), laplace, within * laplace) << rate;
    // Mass over +-60 scales: total, variance, and the distribution function.
    const auto span = static_cast<std::int64_t>(60 / rate);
    double mass = 0, second = 0;
    for (std::int64_t y = -span; y <= span; ++y) {
      const double p = law.Mass(y);
      mass += p, second += p * static_cast<double>(y) * static_cast<double>(y);
    }
    EXPECT_NEAR(mass, 1.0, 1e-9) << rate;
    EXPECT_NEAR(second, law.Variance(), 1e-8 * law.Variance()) << rate;
    for (std::int64_t y : {-span, -40000l, -1l, 0l, 5l, 16382l, 16383l, 40000l}) {
      EXPECT_NEAR(law.Cdf(y) - law.Cdf(y - 1), law.Mass(y), 1e-12) << rate << " " << y;
    }
    EXPECT_NEAR(law.Cdf(-1) + law.Mass(0) + (1 - law.Cdf(0)), 1.0, 1e-15);
    EXPECT_NEAR(law.Cdf(-1), 1 - law.Cdf(0), 1e-15);  // symmetric
  }
}

TEST(IntegerLaplace, DrawsFollowTheLaw) {
  for (double rate : kTableRates) {
    const auto law = IntegerLaplace::Create(rate).value();
    CounterRng rng(11);
    std::vector<std::int64_t> draws(kDraws);
    for (auto& y : draws) y = law.Sample(rng);
    const auto right = CellsFollow(draws, rate, -24, [&law](std::int64_t k) { return law.Cdf(k); });
    EXPECT_TRUE(right.pass) << rate << ": " << right.reason;
    const auto wrong = LaplaceLawIs(rate * 1.1, draws);
    EXPECT_FALSE(wrong.pass) << rate << ": " << wrong.reason;
    // Beyond one pass: the tail's draws land where the law puts them.
    const auto pass = static_cast<std::int64_t>(IntegerLaplace::kPass);
    const double beyond = static_cast<double>(
        std::count_if(draws.begin(), draws.end(), [pass](std::int64_t y) { return y >= pass; }));
    const double p = 1 - law.Cdf(pass - 1);
    EXPECT_NEAR(beyond / kDraws, p, 5 * std::sqrt(p * (1 - p) / kDraws) + 1e-12) << rate;
  }
}

// Pearson's test of counts against Bin(n, p).
audit::Verdict BinomialLawIs(std::uint64_t n, double p, const std::vector<std::uint64_t>& counts) {
  std::vector<double> pmf(n + 1);
  for (std::uint64_t k = 0; k <= n; ++k) {
    const auto x = static_cast<double>(k), m = static_cast<double>(n);
    pmf[k] = std::exp(std::lgamma(m + 1) - std::lgamma(x + 1) - std::lgamma(m - x + 1) +
                      x * std::log(p) + (m - x) * std::log1p(-p));
  }
  return audit::CheckChiSquare(counts, pmf);
}

TEST(Discrete, BinomialDyadicFollowsItsLaw) {
  CounterRng rng(12);
  for (const auto& [n, p] : {std::pair<std::uint64_t, double>{10, 0.3},
                             {1000, 0.004},
                             {200, 0.5},
                             {50, 0.97},
                             {130, 1.0 / 3}}) {
    const auto numerator = static_cast<std::uint64_t>(std::ldexp(p, 53));  // p to 2^-53
    const double exact = std::ldexp(static_cast<double>(numerator), -53);
    std::vector<std::uint64_t> counts(n + 1, 0);
    for (std::size_t i = 0; i < kDraws; ++i) ++counts[BinomialDyadic(rng, n, numerator, 53)];
    const auto right = BinomialLawIs(n, exact, counts);
    EXPECT_TRUE(right.pass) << n << " " << p << ": " << right.reason;
    const auto wrong = BinomialLawIs(n, std::min(exact * 1.1, 1 - (1 - exact) / 1.1), counts);
    EXPECT_FALSE(wrong.pass) << n << " " << p << ": " << wrong.reason;
  }
  // Large n: mean n p and variance n p (1 - p), over 1e6 trials a draw.
  std::vector<double> large(2000);
  const std::uint64_t n = 1000000, numerator = 0x1.0p53 / 3;
  const double p = std::ldexp(static_cast<double>(numerator), -53);
  for (double& x : large) x = static_cast<double>(BinomialDyadic(rng, n, numerator, 53));
  const auto moments = audit::SampleMoments(large);
  const double var = 1e6 * p * (1 - p);
  EXPECT_TRUE(audit::CheckMean(moments, 1e6 * p, var).pass);
  EXPECT_FALSE(audit::CheckMean(moments, 1e6 * p * 1.001, var).pass);
  // Certain outcomes; a numerator of 2^bits is probability 1.
  EXPECT_EQ(BinomialDyadic(rng, 0, 5, 53), 0u);
  EXPECT_EQ(BinomialDyadic(rng, 77, 0, 53), 0u);
  EXPECT_EQ(BinomialDyadic(rng, 77, 8, 3), 77u);
}

TEST(Discrete, UniformIndex128IsUniformBeyond64Bits) {
  CounterRng rng(4);
  const Uint128 n = (Uint128{3} << 64) + 5;
  const Uint128 third = n / 3;
  std::vector<std::uint64_t> thirds(3, 0), low(8, 0);
  for (std::size_t i = 0; i < kDraws; ++i) {
    const Uint128 v = UniformIndex128(rng, n);
    ASSERT_TRUE(v < n);
    ++thirds[std::min<std::uint64_t>(2, static_cast<std::uint64_t>(v / third))];
    ++low[static_cast<std::size_t>(v % 8)];
  }
  EXPECT_TRUE(audit::CheckChiSquare(thirds, std::vector<double>(3, 1.0 / 3)).pass);
  EXPECT_TRUE(audit::CheckChiSquare(low, std::vector<double>(8, 1.0 / 8)).pass);
  // A generator that masked to 64 bits would never pass the thirds.
  EXPECT_FALSE(audit::CheckChiSquare(thirds, std::vector<double>{0.5, 0.25, 0.25}).pass);
  // Below 2^64 it is UniformIndex itself, draw for draw.
  CounterRng a(5), b(5);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(UniformIndex128(a, 1000), UniformIndex(b, 1000));
}

TEST(Discrete, RandomizedRoundingIsUnbiased) {
  EXPECT_EQ(RoundUpProbability(2.0), 0.0);
  EXPECT_EQ(RoundUpProbability(-1.75), 0.25);
  EXPECT_EQ(RoundUpProbability(0.1), std::ceil(0.1 * 0x1.0p53) * 0x1.0p-53);
  for (double u : {2.3, -1.75, 1e-9, 12345.999}) {
    CounterRng rng(6);
    const double low = std::floor(u);
    auto up = [&] {
      const std::int64_t r = RandomizedRound(u, rng);
      EXPECT_TRUE(r == low || r == low + 1);
      return r == low + 1;
    };
    const double p = RoundUpProbability(u);
    EXPECT_TRUE(FrequencyIs(p, up).pass) << u;
    if (p > 0.01) {
      EXPECT_FALSE(FrequencyIs(p + 0.01, up).pass) << u;
    }
  }
}

TEST(Discrete, IntegerExpRatioNeverExceedsEToTheEps) {
  for (double eps = 1e-20; eps <= 500; eps *= 1.3) {
    for (int bits : {24, 52}) {
      const auto r = MakeIntegerExpRatio(eps, bits);
      ASSERT_TRUE(r.ok()) << eps;
      const long double ratio = std::ldexp(static_cast<long double>(r->extra), -r->shift);
      const long double excess = std::expm1l(static_cast<long double>(eps));
      EXPECT_LE(ratio, excess) << eps;  // (b + c) / b <= e^eps
      // Within 2^-bits of e^eps unless b or c met its 2^100 cap.
      if (r->shift < 100 && r->extra < (Uint128{1} << 100)) {
        EXPECT_GE(ratio, excess * (1 - std::ldexp(1.0L, -bits))) << eps << " " << bits;
      }
      EXPECT_LE(r->LogRatio(), eps) << eps;
    }
  }
  EXPECT_FALSE(MakeIntegerExpRatio(1e-40, 24).ok());
}

}  // namespace
}  // namespace fedldp
