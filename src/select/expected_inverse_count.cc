#include <array>
#include <cmath>
#include <numbers>

#include "fedldp/select/selector.h"

namespace fedldp {
namespace {

constexpr int kNodes = 20;

struct GaussLegendre {
  std::array<double, kNodes> x, w;
  GaussLegendre() {
    // Newton's method on P_n from Chebyshev starting points.
    for (int i = 0; i < kNodes; ++i) {
      double z = std::cos(std::numbers::pi * (i + 0.75) / (kNodes + 0.5));
      double dp = 0;
      for (int it = 0; it < 100; ++it) {
        double p0 = 1, p1 = z;
        for (int n = 2; n <= kNodes; ++n) {
          const double p2 = ((2 * n - 1) * z * p1 - (n - 1) * p0) / n;
          p0 = p1;
          p1 = p2;
        }
        dp = kNodes * (z * p1 - p0) / (z * z - 1);
        const double dz = p1 / dp;
        z -= dz;
        if (std::fabs(dz) < 1e-16) break;
      }
      x[i] = z;
      w[i] = 2 / ((1 - z * z) * dp * dp);
    }
  }
};

}  // namespace

double ExpectedInverseCount(std::uint64_t a, double p, std::uint64_t b, double q) {
  static const GaussLegendre rule;
  const double da = static_cast<double>(a), db = static_cast<double>(b);
  // log f(u) = a log(1 - p u) + b log(1 - q u): concave and decreasing, so
  // panels of width ~2 / |(log f)'| keep the integrand's variation per panel
  // small, and the tail past u is at most f(u) / |(log f)'(u)|.
  auto log_f = [&](double u) {
    double s = 0;
    if (a) s += da * std::log1p(-p * u);
    if (b) s += db * std::log1p(-q * u);
    return s;
  };
  auto slope = [&](double u) {
    double s = 0;
    if (a) s += da * p / (1 - p * u);
    if (b) s += db * q / (1 - q * u);
    return s;
  };
  double u = 0, sum = 0;
  while (u < 1) {
    const double g = slope(u);
    const double h = g > 2 ? std::fmin(1 - u, 2 / g) : 1 - u;
    double panel = 0;
    for (int i = 0; i < kNodes; ++i)
      panel += rule.w[i] * std::exp(log_f(u + h / 2 * (1 + rule.x[i])));
    sum += panel * h / 2;
    u += h;
    if (u < 1 && std::exp(log_f(u)) / slope(u) < 1e-17 * sum) break;
  }
  return sum;
}

}  // namespace fedldp
