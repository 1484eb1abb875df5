#include "fedldp/privacy/shuffle_numerical.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "binomial_window.h"
#include "fedldp/base/bisect.h"

namespace fedldp {

namespace shuffle_internal {

// From the mode outward, until the mass beyond each end is at most
// tolerance / 2: past the mode the ratio r of successive pmf values falls
// monotonically, so the mass beyond a value v is at most v r / (1 - r).
void BinomialWindow(std::uint64_t trials, double p, double tolerance, Window& w) {
  const double n = static_cast<double>(trials);
  const auto mode =
      std::min<std::uint64_t>(trials, static_cast<std::uint64_t>(std::floor((n + 1) * p)));
  const double m = static_cast<double>(mode);
  const double at_mode = std::exp(std::lgamma(n + 1) - std::lgamma(m + 1) - std::lgamma(n - m + 1) +
                                  m * std::log(p) + (n - m) * std::log1p(-p));
  const double odds = p / (1 - p);
  std::vector<double>& pmf = w.pmf;
  pmf.clear();
  w.outside = 0;
  // Downward, stored reversed, then upward.
  double v = at_mode;
  for (std::uint64_t k = mode; k > 0; --k) {
    const double r = static_cast<double>(k) / (n - static_cast<double>(k) + 1) / odds;
    if (r < 1 && v * r / (1 - r) <= tolerance / 2) {
      w.outside += v * r / (1 - r);
      break;
    }
    v *= r;
    pmf.push_back(v);
  }
  std::reverse(pmf.begin(), pmf.end());
  w.first = mode - pmf.size();
  pmf.push_back(at_mode);
  v = at_mode;
  for (std::uint64_t k = mode; k < trials; ++k) {
    const double r = (n - static_cast<double>(k)) / (static_cast<double>(k) + 1) * odds;
    if (r < 1 && v * r / (1 - r) <= tolerance / 2) {
      w.outside += v * r / (1 - r);
      break;
    }
    v *= r;
    pmf.push_back(v);
  }
}

// An estimate of the terms one divergence sums: (window of C) x (window
// of A | C), both about 24 standard deviations wide.
double Terms(std::uint64_t n, double rate) {
  const double mean = static_cast<double>(n - 1) * rate;
  return (24 * std::sqrt(mean) + 1) * (12 * std::sqrt(mean) + 1);
}

}  // namespace shuffle_internal

namespace {

using shuffle_internal::BinomialWindow;
using shuffle_internal::kMaxTerms;
using shuffle_internal::Terms;
using shuffle_internal::Window;

std::string Text(double value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

}  // namespace

double CloneRate(ShuffleReduction bound, double eps0) {
  return bound == ShuffleReduction::kVariationRatio ? 2 / (std::exp(eps0) + 1) : std::exp(-eps0);
}

std::string ShuffleReductionKey(ShuffleReduction bound) {
  return bound == ShuffleReduction::kVariationRatio ? "variation-ratio" : "fmt";
}

Result<ShuffleReduction> ParseShuffleReduction(std::string_view key) {
  for (const auto bound : {ShuffleReduction::kClones, ShuffleReduction::kVariationRatio}) {
    if (key == ShuffleReductionKey(bound)) return bound;
  }
  std::string why = "no shuffle bound is called '";  // built in steps: GCC 12's -Wrestrict
  why.append(key).append("': ");
  why.append(ShuffleReductionKey(ShuffleReduction::kClones)).append(" or ");
  why.append(ShuffleReductionKey(ShuffleReduction::kVariationRatio));
  return Error{std::move(why)};
}

std::string ReductionName(ShuffleReduction bound) {
  return bound == ShuffleReduction::kVariationRatio ? "variation-ratio, Wang et al."
                                                    : "Feldman-McMillan-Talwar";
}

DeltaBracket ShuffleCloneDelta(std::uint64_t n, double eps0, double eps, double tolerance,
                               ShuffleReduction bound) {
  const double alpha = 1 / (1 + std::exp(-eps0));
  const double e = std::exp(eps);
  Window clones, halves;
  BinomialWindow(n - 1, CloneRate(bound, eps0), tolerance, clones);
  // Leaving mass out of A | C moves each divergence term by at most that
  // mass in P and e^eps times it in Q.
  const double half_tolerance = tolerance / (1 + e);
  double lower = 0, upper = clones.outside;
  for (std::size_t i = 0; i < clones.pmf.size(); ++i) {
    const double weight = clones.pmf[i];
    BinomialWindow(clones.first + i, 0.5, half_tolerance, halves);
    const std::vector<double>& b = halves.pmf;
    double pq = 0, qp = 0;
    for (std::size_t j = 0; j <= b.size(); ++j) {
      const double at = j < b.size() ? b[j] : 0;   // Bin(c, 1/2)(k)
      const double before = j > 0 ? b[j - 1] : 0;  // Bin(c, 1/2)(k - 1)
      const double p = alpha * at + (1 - alpha) * before;
      const double q = (1 - alpha) * at + alpha * before;
      pq += std::max(0.0, p - e * q);
      qp += std::max(0.0, q - e * p);
    }
    const double d = std::max(pq, qp);
    const double slack = (1 + e) * halves.outside;
    upper += weight * (d + slack);
    lower += weight * std::max(0.0, d - slack);
  }
  return {lower, std::min(1.0, upper)};
}

Result<NumericalShuffleBound> NumericalShuffleEpsilon(std::uint64_t n, double eps0, double delta,
                                                      ShuffleReduction bound) {
  if (n < 1) return Error{"the number of reports must be at least 1"};
  if (!(std::isfinite(eps0) && eps0 > 0)) {
    return Error{"the local epsilon must be a positive number, not " + Text(eps0)};
  }
  if (!(delta >= 1e-12 && delta < 1)) {
    return Error{"delta must be in [1e-12, 1) (below 1e-12 double rounding would matter), not " +
                 Text(delta)};
  }
  const double rate = CloneRate(bound, eps0);
  if (Terms(n, rate) > kMaxTerms) {
    return Error{"the expected clones, " + Text(std::round(static_cast<double>(n - 1) * rate)) +
                 ", are too many for the exact sum (about 2e5 at most); use the closed form"};
  }
  const double tolerance = 1e-6 * delta;
  const auto bisect = [&](auto holds) {  // the smallest eps in [0, eps0] where holds(eps)
    if (holds(0.0)) return 0.0;
    return Bisect(0.0, eps0, holds, 0, 1e-7).hi;
  };
  NumericalShuffleBound b;
  b.delta = delta;
  // Sound: the divergence's upper bound is at most delta there. (At eps0
  // the shuffled output is eps0-DP outright: post-processing.)
  b.epsilon_upper = bisect(
      [&](double eps) { return ShuffleCloneDelta(n, eps0, eps, tolerance, bound).upper <= delta; });
  // Below this the divergence's lower bound exceeds delta: no tighter eps
  // follows from the analysis.
  const double above = bisect(
      [&](double eps) { return ShuffleCloneDelta(n, eps0, eps, tolerance, bound).lower <= delta; });
  b.epsilon_lower = std::max(0.0, above - 1e-7);
  return b;
}

}  // namespace fedldp
