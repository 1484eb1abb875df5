// Selections drawn by every selector, for every eps, against their exact law.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "fedldp/audit/selector_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/select/ranking.h"
#include "fedldp/select/selectors.h"

namespace fedldp {
namespace {

constexpr std::size_t kD = 20, kK = 4, kDraws = 200000;

// Ties, signs, a zero and a NaN: the documented tie rule decides.
std::vector<double> TestVector() {
  std::vector<double> r(kD);
  for (std::size_t j = 0; j < kD; ++j) r[j] = std::sin(3.0 * j) * (j % 3 ? 1 : -1);
  r[4] = r[9] = -r[2];
  r[11] = 0;
  r[13] = std::nan("");
  return r;
}

class SelectorLaw : public ::testing::TestWithParam<std::tuple<std::string, double>> {};
// The selectors whose law depends on epsilon (topk and uniform ignore it).
class SelectorEpsilon : public SelectorLaw {};

TEST_P(SelectorLaw, DrawsFollowTheExactProbabilities) {
  const auto [name, eps] = GetParam();
  const auto s = MakeSelector(name, eps, kD, kK).value();
  const auto r = TestVector();
  const auto verdict =
      audit::CheckChiSquare(audit::SelectionCounts(*s, r, kDraws, 17), audit::SelectionLaw(*s, r));
  EXPECT_TRUE(verdict.pass) << verdict.reason;
}

TEST_P(SelectorEpsilon, CheckRejectsTheSelectorBuiltWithAWrongEpsilon) {
  const auto [name, eps] = GetParam();
  const auto r = TestVector();
  const auto right = MakeSelector(name, eps, kD, kK).value();
  // At eps = 0.1 the laws of eps/2 and eps are close to uniform and to each
  // other: the test needs more draws to tell them apart.
  const std::size_t draws = eps < 0.5 ? 8 * kDraws : kDraws;
  for (double factor : {0.5, 2.0}) {
    const auto wrong = MakeSelector(name, factor * eps, kD, kK).value();
    EXPECT_FALSE(audit::CheckChiSquare(audit::SelectionCounts(*wrong, r, draws, 19),
                                       audit::SelectionLaw(*right, r))
                     .pass)
        << "factor " << factor;
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<std::string, double>>& info) {
  std::string name = std::get<0>(info.param);
  for (auto& c : name) c = c == '-' ? '_' : c;
  return name + "_eps" + std::to_string(static_cast<int>(std::get<1>(info.param) * 10)) + "tenths";
}

INSTANTIATE_TEST_SUITE_P(AllSelectors, SelectorLaw,
                         ::testing::Combine(::testing::Values("exp", "pe", "pe-published", "ps",
                                                              "topk", "uniform"),
                                            ::testing::Values(0.1, 0.5, 1.0, 2.0, 4.0, 8.0)),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(PrivateSelectors, SelectorEpsilon,
                         ::testing::Combine(::testing::Values("exp", "pe", "pe-published", "ps"),
                                            ::testing::Values(0.1, 0.5, 1.0, 2.0, 4.0, 8.0)),
                         CaseName);

TEST(PerturbedEncoding, ShortcutSamplerHasTheLawOfAlgorithmThree) {
  // Algorithm 3 literally: d Bernoulli flips, then a uniform member of S.
  const double eps = 1.0;
  const auto pe = PerturbedEncoding::CreatePublished(eps, kD, kK).value();
  const auto r = TestVector();
  const auto mask_order = Ranking(r);
  std::vector<unsigned char> top(kD, 0);
  for (std::size_t m = 0; m < kK; ++m) top[mask_order[m]] = 1;
  const double p = std::exp(eps) / (std::exp(eps) + 1);
  CounterRng rng(23);
  std::vector<std::uint64_t> counts(kD + 1, 0);
  for (std::size_t i = 0; i < kDraws; ++i) {
    std::vector<std::size_t> set;
    for (std::size_t j = 0; j < kD; ++j) {
      if (Bernoulli(rng, top[j] ? p : 1 - p)) set.push_back(j);
    }
    ++counts[set.empty() ? kD : set[UniformIndex(rng, set.size())]];
  }
  const auto verdict = audit::CheckChiSquare(counts, audit::SelectionLaw(pe, r));
  EXPECT_TRUE(verdict.pass) << verdict.reason;
}

}  // namespace
}  // namespace fedldp
