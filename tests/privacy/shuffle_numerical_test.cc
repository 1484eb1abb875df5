#include "fedldp/privacy/shuffle_numerical.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fedldp/privacy/ldpfl_accounting.h"

namespace fedldp {
namespace {

// The analysis's divergence for small n by brute force: the joint law of
// (K, C) enumerated from its definition, binomials from Pascal's triangle.
double BruteForceDelta(std::uint64_t n, double eps0, double eps) {
  const double p = std::exp(-eps0), alpha = std::exp(eps0) / (1 + std::exp(eps0));
  std::vector<std::vector<double>> pascal{{1.0}};
  for (std::uint64_t r = 1; r < n + 1; ++r) {
    std::vector<double> row(r + 1, 1.0);
    for (std::uint64_t k = 1; k < r; ++k) row[k] = pascal[r - 1][k - 1] + pascal[r - 1][k];
    pascal.push_back(row);
  }
  double pq = 0, qp = 0;
  for (std::uint64_t c = 0; c < n; ++c) {
    const double weight = pascal[n - 1][c] * std::pow(p, c) * std::pow(1 - p, n - 1 - c);
    for (std::uint64_t k = 0; k <= c + 1; ++k) {
      double P = 0, Q = 0;
      for (std::uint64_t a = 0; a <= c; ++a) {
        const double pa = pascal[c][a] * std::pow(0.5, c);
        P += pa * ((k == a ? alpha : 0) + (k == a + 1 ? 1 - alpha : 0));
        Q += pa * ((k == a ? 1 - alpha : 0) + (k == a + 1 ? alpha : 0));
      }
      pq += std::max(0.0, weight * P - std::exp(eps) * weight * Q);
      qp += std::max(0.0, weight * Q - std::exp(eps) * weight * P);
    }
  }
  return std::max(pq, qp);
}

TEST(NumericalShuffle, ReproducesThePublishedExample) {
  // Feldman, McMillan & Talwar (FOCS 2021), Appendix E: n = 1e5, eps0 = 4,
  // delta = 1e-6 gives eps between 0.1675 and 0.1728 (steps of 100 in C).
  const auto b = NumericalShuffleEpsilon(100000, 4, 1e-6).value();
  EXPECT_GE(b.epsilon_lower, 0.1675);
  EXPECT_LE(b.epsilon_upper, 0.1728);
  EXPECT_LT(b.epsilon_upper - b.epsilon_lower, 1e-5);  // the exact sum: 0.16977
  EXPECT_NEAR(b.epsilon_upper, 0.16977, 1e-4);
  // Far below the closed form (Theorem 3.1: at most 0.538 as published).
  EXPECT_LT(b.epsilon_upper, FeldmanMcMillanTalwar(4, 1e5, 1e-6).epsilon);
}

TEST(NumericalShuffle, BracketsTheBruteForceDivergenceForSmallN) {
  for (const std::uint64_t n : {1u, 2u, 5u, 17u, 40u}) {
    for (const double eps0 : {0.5, 1.0, 3.0}) {
      for (const double eps : {0.0, 0.1, 0.4, eps0 / 2}) {
        const double exact = BruteForceDelta(n, eps0, eps);
        const auto bracket = ShuffleCloneDelta(n, eps0, eps, 1e-12);
        EXPECT_LE(bracket.lower, exact + 1e-14) << n << " " << eps0 << " " << eps;
        EXPECT_GE(bracket.upper, exact - 1e-14) << n << " " << eps0 << " " << eps;
        EXPECT_LT(bracket.upper - bracket.lower, 1e-11) << n << " " << eps0 << " " << eps;
      }
    }
  }
}

TEST(NumericalShuffle, OneReportIsRandomizedResponseAtEpsZero) {
  // n = 1: P = (alpha, 1 - alpha), Q = (1 - alpha, alpha), so delta(eps) =
  // alpha - e^eps (1 - alpha) and eps = ln((alpha - delta) / (1 - alpha)).
  const double eps0 = 2, delta = 1e-3, alpha = std::exp(eps0) / (1 + std::exp(eps0));
  const auto b = NumericalShuffleEpsilon(1, eps0, delta).value();
  const double expected = std::log((alpha - delta) / (1 - alpha));
  EXPECT_NEAR(b.epsilon_upper, expected, 2e-7);
  EXPECT_NEAR(b.epsilon_lower, expected, 2e-7);
  EXPECT_LE(b.epsilon_lower, b.epsilon_upper);
}

TEST(NumericalShuffle, MoreReportsHideBetterAndNeverCostMoreThanEpsZero) {
  double previous = 1e9;
  for (const std::uint64_t n : {10u, 100u, 1000u, 10000u}) {
    const auto b = NumericalShuffleEpsilon(n, 2, 1e-6).value();
    EXPECT_LE(b.epsilon_upper, 2);
    EXPECT_LT(b.epsilon_upper, previous) << n;
    previous = b.epsilon_upper;
  }
}

TEST(NumericalShuffle, RefusesWhatItCannotCompute) {
  EXPECT_FALSE(NumericalShuffleEpsilon(0, 1, 1e-6).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, 0, 1e-6).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, -1, 1e-6).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, std::nan(""), 1e-6).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, INFINITY, 1e-6).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, 1, 0).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, 1, 1).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, 1, 1e-13).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(100, 1, std::nan("")).ok());
  EXPECT_FALSE(NumericalShuffleEpsilon(1000000000, 1, 1e-6).ok());  // too many terms
}

}  // namespace
}  // namespace fedldp
