#include "clone_pair.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

namespace fedldp::shuffle_internal {

// From the mode outward, until the mass beyond each end is at most
// tolerance / 2: past the mode the ratio r of successive pmf values falls
// monotonically, so the mass beyond a value v is at most v r / (1 - r).
void BinomialWindow(std::uint64_t trials, double p, double tolerance, Window& w) {
  const double n = static_cast<double>(trials);
  const auto mode =
      std::min<std::uint64_t>(trials, static_cast<std::uint64_t>(std::floor((n + 1) * p)));
  const double m = static_cast<double>(mode);
  const double logs[] = {std::lgamma(n + 1), std::lgamma(m + 1), std::lgamma(n - m + 1),
                         m * std::log(p), (n - m) * std::log1p(-p)};
  const double at_mode = std::exp(logs[0] - logs[1] - logs[2] + logs[3] + logs[4]);
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
  // A few ulps of each log term, then about two a step from the mode.
  double magnitude = 8;
  for (const double l : logs) magnitude += std::abs(l);
  w.rounding = 4 * DBL_EPSILON * (magnitude + 2 * static_cast<double>(pmf.size()));
}

// Both windows about 24 standard deviations wide.
double Terms(std::uint64_t n, double rate) {
  const double mean = static_cast<double>(n - 1) * rate;
  return (24 * std::sqrt(mean) + 1) * (12 * std::sqrt(mean) + 1);
}

ClonePair PairOf(ShuffleReduction bound, double eps0) {
  return {CloneRate(bound, eps0), 1 / (1 + std::exp(-eps0)), 1 / (1 + std::exp(eps0))};
}

Result<ClonePair> CheckedPair(std::uint64_t n, ShuffleReduction bound, double eps0) {
  const ClonePair pair = PairOf(bound, eps0);
  const double others = static_cast<double>(n - 1);
  if (24 * std::sqrt(others * pair.rate * (1 - pair.rate)) > kMaxWindow) {
    return Error{"the expected clones, " + std::to_string(std::llround(others * pair.rate)) +
                 ", are too many to sum (their window would pass 4,000,000 values)"};
  }
  return pair;
}

namespace {

// P(M = m) = P(C = m - 1), from the window of the others' clones C.
double MassAt(const Window& others, std::uint64_t m) {
  return m > others.first && m - 1 - others.first < others.pmf.size()
             ? others.pmf[m - 1 - others.first]
             : 0.0;
}

}  // namespace

CloneBlocks BlocksOf(std::uint64_t n, const ClonePair& pair, double tolerance,
                     std::uint64_t width) {
  Window others;
  BinomialWindow(n - 1, pair.rate, tolerance, others);
  CloneBlocks out;
  out.outside = others.outside;
  out.rounding = others.rounding;
  const std::uint64_t first = others.first + 1;
  const std::uint64_t last = others.first + others.pmf.size();
  const std::uint64_t span = last - first + 1;
  if (width == 0) width = Terms(n, pair.rate) <= kMaxTerms ? 1 : (span + kBlocks - 1) / kBlocks;
  for (std::uint64_t lo = first; lo <= last; lo += width) {
    CloneBlock b{lo, std::min(last, lo + width - 1), 0.0};
    for (std::uint64_t m = b.lo; m <= b.hi; ++m) b.mass += MassAt(others, m);
    out.blocks.push_back(b);
  }
  return out;
}

DeltaBracket PrefixDivergence(std::uint64_t m, double a, double against, double e,
                              double tolerance) {
  // With t = b(k - 1) / b(k) = k / (c - k + 1), c = m - 1 (rising in k),
  // P(k) - e Q(k) = b(k) (big + small t): positive while t < big / -small.
  const double big = a - e * against, small = against - e * a;
  if (m == 0 || big <= 0) return {0, 0};
  const double c = static_cast<double>(m - 1);
  const double tau = big / -small;  // < 1: e >= 1 and a >= 1/2
  const auto t = [&](double k) { return k / (c - k + 1); };
  double k = std::min(c, std::floor(tau * (c + 1) / (1 + tau)));
  while (k + 1 <= c && big + small * t(k + 1) > 0) k += 1;
  while (k >= 0 && big + small * t(k) <= 0) k -= 1;
  if (k < 0) return {0, 0};
  double v = std::exp(std::lgamma(c + 1) - std::lgamma(k + 1) - std::lgamma(c - k + 1) -
                      c * std::log(2.0));
  double sum = 0, rest = 0, tk = t(k);
  std::uint64_t steps = 0;
  while (true) {
    sum += v * (big + small * tk);
    if (k == 0) break;
    v *= tk;  // b(k - 1)
    k -= 1;
    steps += 1;
    tk = t(k);
    // Every term left is below big b(j), j <= k, and the b(j) fall at
    // least by t(k) < 1 a step from b(k) = v down (checked every 16 steps:
    // the division is most of a step's cost).
    if (steps % 16 == 0 && big * v / (1 - tk) <= tolerance) {
      rest = big * v / (1 - tk);
      break;
    }
  }
  // Rounding: lgamma's few ulps of values up to c log c (b(k) moves by
  // their absolute error, relatively), then about an ulp a step.
  const double rounding =
      4 * DBL_EPSILON *
      (3 * std::lgamma(c + 1) + c * std::log(2.0) + 2 * static_cast<double>(steps) + 8);
  return {sum * (1 - rounding), (sum + rest) * (1 + rounding)};
}

}  // namespace fedldp::shuffle_internal
