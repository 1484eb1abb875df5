#include "fedldp/mechanism/piecewise.h"

#include <cmath>

namespace fedldp {

Result<PiecewiseMechanism> PiecewiseMechanism::Create(double epsilon) {
  if (Status e = CheckEpsilon(epsilon); !e.ok()) return e;
  return PiecewiseMechanism(epsilon);
}

PiecewiseMechanism::PiecewiseMechanism(double epsilon) : epsilon_(epsilon) {
  half_ = std::exp(epsilon / 2);
  c_ = 1.0 / std::tanh(epsilon / 4);  // (e^(eps/2) + 1) / (e^(eps/2) - 1)
  p_center_ = half_ / (half_ + 1);
  // Mass p_center over length C - 1, the rest over length C + 1.
  density_high_ = p_center_ / (c_ - 1);
  density_low_ = (1 - p_center_) / (c_ + 1);
}

Interval PiecewiseMechanism::CenterInterval(double x) const {
  const double t = Clip(x);
  const double l = (c_ + 1) / 2 * t - (c_ - 1) / 2;
  return {l, l + c_ - 1};
}

double PiecewiseMechanism::Sample(double x, Rng& rng) const {
  const Interval center = CenterInterval(x);
  if (Uniform01(rng) < p_center_) return center.lo + (c_ - 1) * Uniform01(rng);
  // Uniform on [-C, l) U (r, C], total length C + 1: walk the left piece, then
  // continue on the right piece.
  const double v = (c_ + 1) * Uniform01(rng);
  const double left = center.lo + c_;
  return v < left ? -c_ + v : center.hi + (v - left);
}

double PiecewiseMechanism::Variance(double x) const {
  const double t = Clip(x);
  const double a = half_ - 1;
  return t * t / a + (half_ + 3) / (3 * a * a);
}

double PiecewiseMechanism::Density(double y, double x) const {
  if (!(y >= -c_ && y <= c_)) return 0.0;
  const Interval center = CenterInterval(x);
  return center.Contains(y) ? density_high_ : density_low_;
}

double PiecewiseMechanism::Cdf(double y, double x) const {
  if (y <= -c_) return 0.0;
  if (y >= c_) return 1.0;
  const Interval center = CenterInterval(x);
  // Integrate the piecewise-constant density from -C to y.
  const double below = std::fmin(y, center.lo) + c_;
  const double inside = std::fmax(0.0, std::fmin(y, center.hi) - center.lo);
  const double above = std::fmax(0.0, y - center.hi);
  return density_low_ * (below + above) + density_high_ * inside;
}

}  // namespace fedldp
