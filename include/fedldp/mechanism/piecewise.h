// Piecewise mechanism (PM) of Wang et al., "Collecting and analyzing
// multidimensional data with local differential privacy", ICDE 2019, Alg. 2.
//
// Input t in [-1, 1]. With C = (e^(eps/2) + 1) / (e^(eps/2) - 1),
// l(t) = (C + 1)/2 t - (C - 1)/2 and r(t) = l(t) + C - 1, the output density is
//   p = (e^eps - e^(eps/2)) / (2 e^(eps/2) + 2)   on [l(t), r(t)],
//   p / e^eps                                     on [-C, l(t)) U (r(t), C].
// Unbiased; Var[M(t)] = t^2 / (e^(eps/2) - 1) + (e^(eps/2) + 3) / (3 (e^(eps/2) - 1)^2).
//
// Outputs are doubles drawn with 53-bit uniforms. Like every floating-point
// continuous mechanism, the low-order bits of an output may carry information
// beyond the density (Mironov, CCS 2012); deployments that need protection
// against that should report a rounded value (not done here).
#ifndef FEDLDP_MECHANISM_PIECEWISE_H_
#define FEDLDP_MECHANISM_PIECEWISE_H_

#include "fedldp/mechanism/value_mechanism.h"

namespace fedldp {

class PiecewiseMechanism final : public ValueMechanism {
 public:
  static Result<PiecewiseMechanism> Create(double epsilon);

  std::string name() const override { return "pm"; }
  double epsilon() const override { return epsilon_; }
  Interval input_domain() const override { return {-1.0, 1.0}; }
  Interval output_domain() const override { return {-c_, c_}; }
  bool CanOutput(double y) const override { return y >= -c_ && y <= c_; }

  double Sample(double x, Rng& rng) const override;
  double Variance(double x) const override;
  double Density(double y, double x) const override;
  double Cdf(double y, double x) const override;

  // C: outputs lie in [-C, C].
  double bound() const { return c_; }
  // The high-probability interval [l(t), r(t)] for the clipped input t.
  Interval CenterInterval(double x) const;

 private:
  explicit PiecewiseMechanism(double epsilon);

  double epsilon_;
  double half_;      // e^(eps/2)
  double c_;         // C
  double p_center_;  // P[output in [l, r]] = e^(eps/2) / (e^(eps/2) + 1)
  double density_high_;
  double density_low_;
};

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_PIECEWISE_H_
