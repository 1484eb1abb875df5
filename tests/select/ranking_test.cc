#include "fedldp/select/ranking.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp {
namespace {

std::vector<double> VectorWithTies(std::size_t d, std::uint64_t seed) {
  CounterRng rng(seed);
  std::vector<double> r(d);
  // Few distinct magnitudes and both signs: many ties.
  for (auto& v : r) v = (static_cast<double>(UniformIndex(rng, 5)) - 2) * 0.25;
  return r;
}

TEST(Ranking, OrdersByMagnitudeThenLowerIndex) {
  const std::vector<double> r = {0.5,
                                 -2.0,
                                 2.0,
                                 0.0,
                                 -0.5,
                                 std::numeric_limits<double>::quiet_NaN(),
                                 -std::numeric_limits<double>::infinity()};
  // |r| = .5 2 2 0 .5 (NaN->0) inf
  const std::vector<std::size_t> expected = {6, 1, 2, 0, 4, 3, 5};
  EXPECT_EQ(Ranking(r), expected);
  for (std::size_t m = 0; m < r.size(); ++m) EXPECT_EQ(ElementAtPosition(r, m), expected[m]);
}

TEST(Ranking, LinearTimeSelectionAgreesWithTheSort) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const auto r = VectorWithTies(50 + seed, seed);
    const auto ranking = Ranking(r);
    for (std::size_t m = 0; m < r.size(); ++m) ASSERT_EQ(ElementAtPosition(r, m), ranking[m]);
    for (std::size_t k : {std::size_t{1}, std::size_t{7}, r.size()}) {
      const auto mask = TopKMask(r, k);
      for (std::size_t m = 0; m < r.size(); ++m) ASSERT_EQ(mask[ranking[m]], m < k ? 1 : 0);
    }
  }
}

TEST(Ranking, RandomTieBreakingIsUniformWithinTheGroup) {
  // |r| = 3, then five 1s (positions 1..5), then 0.
  const std::vector<double> r = {1, 0, -1, 3, 1, 1, -1};
  for (std::size_t position : {std::size_t{1}, std::size_t{4}}) {
    CounterRng rng(position);
    std::vector<std::uint64_t> counts(r.size(), 0);
    for (int i = 0; i < 70000; ++i) ++counts[RandomElementAtPosition(r, position, rng)];
    const std::vector<double> p = {0.2, 0, 0.2, 0, 0.2, 0.2, 0.2};
    const auto v = audit::CheckChiSquare(counts, p);
    EXPECT_TRUE(v.pass) << v.reason;
  }
  CounterRng rng(9);
  EXPECT_EQ(RandomElementAtPosition(r, 0, rng), 3u);
  EXPECT_EQ(RandomElementAtPosition(r, 6, rng), 1u);
}

TEST(Ranking, RadixPathAgreesWithTheSortOnLargeVectors) {
  // Above 2^15 dimensions the threshold is found by radix; check positions
  // across the ranking, with heavy ties and with magnitudes spread over many
  // exponents (many buckets) or packed into one bucket.
  CounterRng rng(11);
  std::vector<double> spread(100000), packed(70000);
  for (auto& v : spread) v = StandardNormal(rng) * std::exp(3 * StandardNormal(rng));
  for (auto& v : packed) v = 1.0 + static_cast<double>(UniformIndex(rng, 50)) * 1e-12;
  const std::vector<double> ties = VectorWithTies(40000, 3);
  const std::vector<const std::vector<double>*> cases = {&spread, &packed, &ties};
  for (const auto* r : cases) {
    const auto ranking = Ranking(*r);
    const std::size_t d = r->size();
    for (std::size_t m : {std::size_t{0}, std::size_t{1}, std::size_t{17}, d / 10, d / 2, d - 1}) {
      ASSERT_EQ(ElementAtPosition(*r, m), ranking[m]) << m;
    }
    const auto mask = TopKMask(*r, r->size() / 10);
    for (std::size_t m = 0; m < r->size(); ++m) {
      ASSERT_EQ(mask[ranking[m]], m < r->size() / 10 ? 1 : 0);
    }
  }
}

}  // namespace
}  // namespace fedldp
