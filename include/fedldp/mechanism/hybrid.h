// Hybrid mechanism (HM) of Wang et al., ICDE 2019, Section III-C.
//
// With alpha = 1 - e^(-eps/2) when eps > eps* = 0.61 (alpha = 0 otherwise),
// HM outputs PM(eps) with probability alpha and Duchi(eps) otherwise. Each
// branch is eps-LDP, so the mixture is: its law has atoms at +-B (Duchi's
// outputs, mass (1 - alpha) P_duchi) and PM's grid masses times alpha. Both
// branches are the exact ones of piecewise.h and two_point.h, so every output
// is public (the atoms or PM's grid); where an atom falls on the grid the
// masses add, and P[y | x] / P[y | x'] stays below the larger of the two
// branches' ratios.
// Unbiased; Var = alpha Var_PM + (1 - alpha) Var_Duchi.
// (Wang et al. give eps* ~ 0.61; NOTES.md quotes 0.60935.)
#ifndef FEDLDP_MECHANISM_HYBRID_H_
#define FEDLDP_MECHANISM_HYBRID_H_

#include "fedldp/mechanism/piecewise.h"
#include "fedldp/mechanism/two_point.h"

namespace fedldp {

class HybridMechanism final : public ValueMechanism {
 public:
  static constexpr double kEpsilonStar = 0.60935;

  static Result<HybridMechanism> Create(double epsilon);

  std::string name() const override { return "hm"; }
  double epsilon() const override { return pm_.epsilon(); }
  Interval input_domain() const override { return {-1.0, 1.0}; }
  Interval output_domain() const override;
  bool CanOutput(double y) const override;

  double Sample(double x, Rng& rng) const override;
  double Mean(double x) const override;
  double Variance(double x) const override;
  std::vector<double> Atoms() const override { return duchi_.Atoms(); }
  std::optional<OutputGrid> Grid() const override { return alpha_ > 0 ? pm_.Grid() : std::nullopt; }
  double Mass(double y, double x) const override;
  double Cdf(double y, double x) const override;

  // Probability of the PM branch.
  double alpha() const { return alpha_; }

 private:
  HybridMechanism(PiecewiseMechanism pm, TwoPointMechanism duchi, double alpha);

  PiecewiseMechanism pm_;
  TwoPointMechanism duchi_;
  double alpha_;
};

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_HYBRID_H_
