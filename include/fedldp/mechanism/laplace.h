// Laplace mechanism, the classical baseline: input t in [-1, 1] (sensitivity
// 2), output t + Lap(b) with b = 2 / eps. Unbiased, Var = 2 b^2 = 8 / eps^2,
// outputs anywhere on the real line.
//
// Floating-point caveat as for PM (Mironov, CCS 2012): kept as a baseline for
// simulations, not recommended for deployment.
#ifndef FEDLDP_MECHANISM_LAPLACE_H_
#define FEDLDP_MECHANISM_LAPLACE_H_

#include <cmath>
#include <limits>

#include "fedldp/mechanism/value_mechanism.h"

namespace fedldp {

class LaplaceMechanism final : public ValueMechanism {
 public:
  static Result<LaplaceMechanism> Create(double epsilon);

  std::string name() const override { return "laplace"; }
  double epsilon() const override { return epsilon_; }
  Interval input_domain() const override { return {-1.0, 1.0}; }
  Interval output_domain() const override {
    return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
  bool CanOutput(double y) const override { return std::isfinite(y); }

  double Sample(double x, Rng& rng) const override;
  double Variance(double) const override { return 2 * scale_ * scale_; }
  double Density(double y, double x) const override;
  double Cdf(double y, double x) const override;

  double scale() const { return scale_; }

 private:
  explicit LaplaceMechanism(double epsilon) : epsilon_(epsilon), scale_(2.0 / epsilon) {}

  double epsilon_;
  double scale_;
};

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_LAPLACE_H_
