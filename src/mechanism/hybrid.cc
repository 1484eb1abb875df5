#include "fedldp/mechanism/hybrid.h"

#include <cmath>

namespace fedldp {

Result<HybridMechanism> HybridMechanism::Create(double epsilon) {
  auto pm = PiecewiseMechanism::Create(epsilon);
  // Said as hm's (before, `sample --mechanism hm` was refused as "pm: ...").
  if (!pm.ok()) return Error{"hm, of its PM part: " + pm.error()};
  auto duchi = TwoPointMechanism::CreateDuchi(epsilon);
  if (!duchi.ok()) return Error{"hm, of its Duchi part: " + duchi.error()};
  const double alpha = epsilon > kEpsilonStar ? -std::expm1(-epsilon / 2) : 0.0;
  return HybridMechanism(std::move(pm).value(), std::move(duchi).value(), alpha);
}

HybridMechanism::HybridMechanism(PiecewiseMechanism pm, TwoPointMechanism duchi, double alpha)
    : pm_(std::move(pm)), duchi_(std::move(duchi)), alpha_(alpha) {}

Interval HybridMechanism::output_domain() const {
  // Duchi's B = coth(eps/2) < PM's C = coth(eps/4), so the atoms lie inside.
  return alpha_ > 0 ? pm_.output_domain() : duchi_.output_domain();
}

bool HybridMechanism::CanOutput(double y) const {
  return duchi_.CanOutput(y) || (alpha_ > 0 && pm_.CanOutput(y));
}

double HybridMechanism::Sample(double x, Rng& rng) const {
  // alpha = 0 draws nothing for the branch, so HM below eps* is Duchi draw for draw.
  if (alpha_ > 0 && Uniform01(rng) < alpha_) return pm_.Sample(x, rng);
  return duchi_.Sample(x, rng);
}

double HybridMechanism::Mean(double x) const {
  return alpha_ * pm_.Mean(x) + (1 - alpha_) * duchi_.Mean(x);
}

double HybridMechanism::Variance(double x) const {
  // Mixture of laws with means m1, m2: second moments mix, then subtract the mean^2.
  const double m1 = pm_.Mean(x), m2 = duchi_.Mean(x), m = Mean(x);
  const double s1 = pm_.Variance(x) + m1 * m1, s2 = duchi_.Variance(x) + m2 * m2;
  return alpha_ * s1 + (1 - alpha_) * s2 - m * m;
}

double HybridMechanism::Mass(double y, double x) const {
  return alpha_ * pm_.Mass(y, x) + (1 - alpha_) * duchi_.Mass(y, x);
}

double HybridMechanism::Cdf(double y, double x) const {
  return alpha_ * pm_.Cdf(y, x) + (1 - alpha_) * duchi_.Cdf(y, x);
}

}  // namespace fedldp
