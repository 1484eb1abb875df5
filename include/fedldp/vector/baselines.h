// The baselines under the vector interface: the Gaussian mechanism and Duchi's
// two-point mechanism on every coordinate.
//
// Gaussian. R(x) = x + N(0, s^2 I) on the ball of radius C, whose replacement
// sensitivity is 2C. With the analytic calibration (Balle & Wang, "Improving
// the Gaussian mechanism for differential privacy", ICML 2018, Theorem 8) s is
// the smallest value with
//   delta(s) = Phi(D / (2 s) - eps s / D) - e^eps Phi(-D / (2 s) - eps s / D) <= delta,
// found by bisection to a relative 1e-12 and rounded up: the exact privacy
// curve of the Gaussian, so (eps, delta) holds for every eps > 0. The classic
// calibration s = D sqrt(2 ln(1.25 / delta)) / eps (Dwork & Roth, Theorem
// A.1, proven for eps < 1 only) is the formula Flower's LocalDpMod uses;
// fedldp offers it by name and states the delta it really gives at eps,
// delta(s) above, which exceeds the requested delta for larger eps.
//
// On real computers (issue 39). Each coordinate is output as the point of the
// public grid g Z nearest to x_i + s Z_i, with Z_i an exact normal and the
// rounding decided exactly (random/exact_normal.h, g = 2^(floor(log2 s) -
// 10)): post-processing of the Gaussian mechanism, so the curve above holds
// of the program, given two margins:
//  - the sensitivity D is 2C (1 + 2^-24), not 2C: the clipped input is
//    computed in doubles, with norm at most C (1 + (d + 8) 2^-53) <= C (1 +
//    2^-28) (vector_randomizer.h's ClipInto), and the sampler pre-rounds each
//    coordinate by at most g 2^-65; Create checks that 2C 2^-27 + sqrt(d) g
//    2^-64 <= 2C 2^-24;
//  - each draw is within total variation 2^-218 of the ideal, so delta gains
//    (1 + e^eps) d 2^-218 (under 2^-49 for every eps <= 100 and d <= 2^24).
//    The analytic calibration aims at delta minus this allowance, so the
//    stated delta is the one asked for; the classic states delta(s) plus it.
// E||R(x) - x||^2 = d (s^2 + g^2 / 12): rounding to the grid adds g^2 / 12
// per coordinate (a relative 8e-8) and leaves the mean x, both to within
// terms of order e^(-2 pi^2 s^2 / g^2) = e^(-2 pi^2 2^20) (Poisson
// summation), far below double precision.
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
#include "fedldp/random/exact_normal.h"
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
  // The exact delta at epsilon() of the noise used, with the allowance.
  double delta() const override { return delta_; }
  double sigma() const { return noise_.sigma(); }
  // The coordinate sampler: x_i to the grid point nearest x_i + sigma Z_i.
  const RoundedGaussian& noise() const { return noise_; }
  // D = 2C (1 + 2^-24), the sensitivity the noise is calibrated for.
  double sensitivity() const { return SensitivityFor(clip()); }
  static double SensitivityFor(double clip) { return 2 * clip * (1 + 0x1p-24); }
  // (1 + e^eps) d 2^-218: what the program's draws add to delta.
  static double Allowance(std::size_t dimension, double epsilon);

  std::optional<OutputGrid> Grid() const override;
  // No pure ratio bound (NaN); delta(sigma) at eps plus the allowance.
  ExactPrivacy ImplementedPrivacy() const override;
  double SquaredError(double) const override;
  double WorstCaseSquaredError() const override { return SquaredError(0); }
  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override;
  using VectorRandomizer::Randomize;

 private:
  GaussianRandomizer(std::size_t dimension, double clip, double epsilon, double delta,
                     RoundedGaussian noise, bool classic)
      : VectorRandomizer(dimension, clip),
        epsilon_(epsilon),
        delta_(delta),
        noise_(noise),
        classic_(classic) {}
  double epsilon_, delta_;
  RoundedGaussian noise_;
  bool classic_;
};

class DuchiVectorRandomizer final : public VectorRandomizer {
 public:
  static Result<DuchiVectorRandomizer> Create(std::size_t dimension, double epsilon, double clip);

  std::string name() const override { return "duchi"; }
  double epsilon() const override { return epsilon_; }
  const TwoPointMechanism& coordinate() const { return coordinate_; }
  // d times the worst log ratio of a coordinate's atoms' probabilities at
  // the ends of [-C, C] (its probabilities are linear in the input).
  ExactPrivacy ImplementedPrivacy() const override;

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
