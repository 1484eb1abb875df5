// The baselines under the vector interface: the Gaussian mechanism and Duchi's
// two-point mechanism on every coordinate.
//
// Gaussian. R(x) = x + N(0, s^2 I) on the ball of radius C, whose replacement
// sensitivity is 2C. With the analytic calibration (Balle & Wang, "Improving
// the Gaussian mechanism for differential privacy", ICML 2018, Theorem 8) s is
// the smallest value with
//   delta(s) = Phi(D / (2 s) - eps s / D) - e^eps Phi(-D / (2 s) - eps s / D) <= delta,
// D = 2C, found by bisection to a relative 1e-12 and rounded up: the exact
// privacy curve of the Gaussian, so (eps, delta) holds for every eps > 0. The
// classic calibration s = D sqrt(2 ln(1.25 / delta)) / eps (Dwork & Roth,
// Theorem A.1, proven for eps < 1 only) is the formula Flower's LocalDpMod
// uses; fedldp offers it by name and states the delta it really gives at eps,
// delta(s) above, which exceeds the requested delta for larger eps.
// E||R(x) - x||^2 = d s^2.
//
// Duchi per coordinate. The l2 ball lies in [-C, C]^d; each coordinate goes
// through the two-point mechanism of two_point.h on [-C, C] with eps / d (basic
// composition: the honest cost of privatising all d of them), outputs
// +-C B with B = (e^(eps/d) + 1) / (e^(eps/d) - 1).
// E||R(x) - x||^2 = d C^2 B^2 - ||x||^2 for the mechanism as specified; the
// implemented thresholds (32-bit, see two_point.h) change each coordinate's
// variance by at most C^2 B^2 2^-30.
#ifndef FEDLDP_VECTOR_BASELINES_H_
#define FEDLDP_VECTOR_BASELINES_H_

#include "fedldp/mechanism/two_point.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

// delta(s) of the Gaussian mechanism with sensitivity `sensitivity` at eps.
double GaussianDelta(double sigma, double epsilon, double sensitivity);
// The analytic calibration: the smallest sigma with GaussianDelta <= delta.
double AnalyticGaussianSigma(double epsilon, double delta, double sensitivity);
// sensitivity sqrt(2 ln(1.25 / delta)) / eps.
double ClassicGaussianSigma(double epsilon, double delta, double sensitivity);

class GaussianRandomizer final : public VectorRandomizer {
 public:
  // eps in (0, 100], delta in (0, 1), clip > 0; classic: the Dwork-Roth formula.
  static Result<GaussianRandomizer> Create(std::size_t dimension, double epsilon, double delta,
                                           double clip, bool classic);

  std::string name() const override { return classic_ ? "gaussian-classic" : "gaussian"; }
  double epsilon() const override { return epsilon_; }
  // The exact delta at epsilon() of the noise used.
  double delta() const override { return delta_; }
  double sigma() const { return sigma_; }

  double SquaredError(double) const override;
  double WorstCaseSquaredError() const override { return SquaredError(0); }
  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override;
  using VectorRandomizer::Randomize;

 private:
  GaussianRandomizer(std::size_t dimension, double clip, double epsilon, double delta, double sigma,
                     bool classic)
      : VectorRandomizer(dimension, clip),
        epsilon_(epsilon),
        delta_(delta),
        sigma_(sigma),
        classic_(classic) {}
  double epsilon_, delta_, sigma_;
  bool classic_;
};

class DuchiVectorRandomizer final : public VectorRandomizer {
 public:
  static Result<DuchiVectorRandomizer> Create(std::size_t dimension, double epsilon, double clip);

  std::string name() const override { return "duchi"; }
  double epsilon() const override { return epsilon_; }
  const TwoPointMechanism& coordinate() const { return coordinate_; }

  double SquaredError(double norm) const override;
  double WorstCaseSquaredError() const override { return SquaredError(0); }
  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override;
  using VectorRandomizer::Randomize;
  // Every entry is +-C B.
  Status ValidateReport(std::span<const double> report) const override;

 private:
  DuchiVectorRandomizer(std::size_t dimension, double clip, double epsilon, TwoPointMechanism m)
      : VectorRandomizer(dimension, clip), epsilon_(epsilon), coordinate_(std::move(m)) {}
  double epsilon_;
  TwoPointMechanism coordinate_;
};

}  // namespace fedldp

#endif  // FEDLDP_VECTOR_BASELINES_H_
