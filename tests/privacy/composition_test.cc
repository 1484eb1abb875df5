// Optimal composition against its definition: the hockey-stick divergence of
// the k-fold product of the canonical (eps, delta) pair, enumerated outcome by
// outcome for small k; the theorem's grid form; and its order against the
// advanced and basic rules.
#include "fedldp/privacy/composition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fedldp {
namespace {

// sum over the 4^k outcomes of max(0, P - e^eps_g Q) for the product of k
// canonical pairs (P, Q) of an (eps, delta)-DP mechanism.
double BruteForce(double eps, double delta, int k, double eps_g) {
  const double e = std::exp(eps);
  const double p[4] = {delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0};
  const double q[4] = {0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta};
  double total = 0;
  int outcomes = 1;
  for (int i = 0; i < k; ++i) outcomes *= 4;
  for (int o = 0; o < outcomes; ++o) {
    double P = 1, Q = 1;
    for (int i = 0, rest = o; i < k; ++i, rest /= 4) P *= p[rest % 4], Q *= q[rest % 4];
    total += std::max(0.0, P - std::exp(eps_g) * Q);
  }
  return total;
}

TEST(ComposedDelta, IsTheDivergenceOfTheCanonicalProduct) {
  for (int k : {1, 2, 3, 6}) {
    for (double eps : {0.1, 0.7, 2.0}) {
      for (double delta : {0.0, 1e-3}) {
        for (double eps_g : {0.0, 0.05, eps, 1.3 * eps, k * eps / 2, k * eps}) {
          EXPECT_NEAR(ComposedDelta(eps, delta, k, eps_g), BruteForce(eps, delta, k, eps_g), 1e-13)
              << k << " " << eps << " " << delta << " " << eps_g;
        }
      }
    }
  }
  // The check fails on a wrong constant: eps 1 % off.
  EXPECT_GT(std::fabs(ComposedDelta(0.7, 0, 6, 0.7) - BruteForce(0.707, 0, 6, 0.7)), 1e-4);
}

TEST(ComposedDelta, MatchesTheTheoremOnItsGrid) {
  // Kairouz, Oh & Viswanath, Theorem 3.3: ((k - 2i) eps, 1 - (1 - delta)^k (1 - delta_i)).
  const int k = 20;
  const double eps = 0.3, delta = 1e-6;
  for (int i = 0; i <= k / 2; ++i) {
    double delta_i = 0;
    for (int l = 0; l < i; ++l) {
      const double binom =
          std::exp(std::lgamma(k + 1) - std::lgamma(l + 1) - std::lgamma(k - l + 1));
      delta_i += binom * (std::exp((k - l) * eps) - std::exp((k - 2 * i + l) * eps));
    }
    delta_i /= std::pow(1 + std::exp(eps), k);
    const double expected = 1 - std::pow(1 - delta, k) * (1 - delta_i);
    EXPECT_NEAR(ComposedDelta(eps, delta, k, (k - 2 * i) * eps), expected, 1e-12) << i;
  }
}

TEST(OptimalComposition, IsNeverWorseThanAdvancedOrBasic) {
  for (std::uint64_t k : {1u, 10u, 100u, 10000u}) {
    for (double eps : {0.01, 0.1, 1.0}) {
      const auto opt = OptimalComposition(eps, 0, k, 1e-6).value();
      const auto adv = AdvancedComposition(eps, 0, static_cast<double>(k), 1e-6);
      EXPECT_LE(opt.epsilon, adv.epsilon * (1 + 1e-9)) << k << " " << eps;
      EXPECT_LE(opt.epsilon, static_cast<double>(k) * eps * (1 + 1e-9));
      EXPECT_LE(ComposedDelta(eps, 0, k, opt.epsilon), 1e-6);
      // Rounded up, not down: slightly less eps breaks delta (unless it is 0).
      if (opt.epsilon > 0) {
        EXPECT_GT(ComposedDelta(eps, 0, k, opt.epsilon * (1 - 1e-8)), 1e-6);
      }
    }
  }
  // 10,000 mechanisms of eps = 0.01 at delta 1e-6: advanced gives 5.26 + 1.01
  // = 6.26, optimal 4.886, basic 100.
  const auto opt = OptimalComposition(0.01, 0, 10000, 1e-6).value();
  EXPECT_NEAR(opt.epsilon, 4.8855, 1e-3);
  EXPECT_NEAR(AdvancedComposition(0.01, 0, 10000, 1e-6).epsilon, 6.262, 1e-3);
}

TEST(OptimalComposition, RefusesWhatCannotHold) {
  EXPECT_FALSE(OptimalComposition(0, 0, 10, 1e-6).ok());
  EXPECT_FALSE(OptimalComposition(1, 0, 0, 1e-6).ok());
  EXPECT_FALSE(OptimalComposition(1, 0, 2'000'000, 1e-6).ok());
  EXPECT_FALSE(OptimalComposition(1, 0, 10, 0).ok());
  // 10 mechanisms with delta 1e-6 leave about 1e-5 whatever eps.
  const auto low = OptimalComposition(1, 1e-6, 10, 5e-6);
  ASSERT_FALSE(low.ok());
  EXPECT_NE(low.error().find("below what 10 mechanisms"), std::string::npos) << low.error();
}

}  // namespace
}  // namespace fedldp
