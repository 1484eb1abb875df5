#include "fedldp/mechanism/laplace.h"

#include <cmath>

namespace fedldp {

Result<LaplaceMechanism> LaplaceMechanism::Create(double epsilon) {
  if (Status e = CheckEpsilon(epsilon); !e.ok()) return e;
  return LaplaceMechanism(epsilon);
}

double LaplaceMechanism::Sample(double x, Rng& rng) const {
  // Exponential magnitude from one word's top 53 bits, sign from its lowest bit.
  const std::uint64_t word = rng();
  const double magnitude = -scale_ * std::log(static_cast<double>((word >> 11) + 1) * 0x1.0p-53);
  return Clip(x) + ((word & 1) ? magnitude : -magnitude);
}

double LaplaceMechanism::Density(double y, double x) const {
  return std::exp(-std::fabs(y - Clip(x)) / scale_) / (2 * scale_);
}

double LaplaceMechanism::Cdf(double y, double x) const {
  const double z = (y - Clip(x)) / scale_;
  return z < 0 ? 0.5 * std::exp(z) : 1 - 0.5 * std::exp(-z);
}

}  // namespace fedldp
