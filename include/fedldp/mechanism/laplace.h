// Laplace mechanism, the classical baseline, as the discrete Laplace on a
// public grid (issue 39). The paper form: input t in [-1, 1] (sensitivity 2),
// output t + Lap(b) with b = 2 / eps; Var = 2 b^2 = 8 / eps^2.
//
// Why not as written. t + b (-log U) on doubles outputs values that depend on
// t through rounding: 62 % of the outputs at t = 1 cannot occur at t = 0
// (eps = 1, measured in issue 39; Mironov, CCS 2012, attacks exactly this).
//
// What runs: Google DP's secure-noise construction with CKS's exact sampler.
//  1. Granularity g = 2^-k, k = max(0, 10 - floor(log2 b)), so that
//     b / g is in [2^10, 2^11) (or g = 1 for b >= 2^11); K = 1 / g.
//  2. The clipped t goes to the level j = randomized rounding of t K, an
//     integer in [-K, K] (exact: K is a power of two), E[j g] = t up to the
//     2^-53 resolution of the rounding probability.
//  3. Y ~ discrete Laplace, P[Y = y] proportional to exp(-|y| s / T)
//     (CKS Algorithm 2, random/discrete.h), with T = 2^q and
//     s = floor(eps T / (2K) (1 - 2^-50)); q <= 52 makes s about 2^30.
//  4. Output (j + Y) g, a grid value (OutputGrid: step g, |m| <= 2^52).
// Privacy: levels differ by at most 2K, so P[y | j] / P[y | j'] <=
// exp(2K s / T) = e^eps' with eps' <= eps, and the mixture over levels keeps
// it. Every grid value has positive probability under every input, and the
// running time depends on the random words only (the input enters as an
// addition). Var = g^2 (P_up (1 - P_up) + 2p / (1 - p)^2), p = exp(-s / T):
// 8 / eps^2 to a relative 1e-6.
#ifndef FEDLDP_MECHANISM_LAPLACE_H_
#define FEDLDP_MECHANISM_LAPLACE_H_

#include <cstdint>

#include "fedldp/mechanism/value_mechanism.h"

namespace fedldp {

class LaplaceMechanism final : public ValueMechanism {
 public:
  static Result<LaplaceMechanism> Create(double epsilon);

  std::string name() const override { return "laplace"; }
  double epsilon() const override { return epsilon_; }
  // 2K s / T <= epsilon(): the bound the program meets exactly.
  double implemented_epsilon() const;
  Interval input_domain() const override { return {-1.0, 1.0}; }
  Interval output_domain() const override {
    return {grid_.Value(grid_.lo), grid_.Value(grid_.hi)};
  }
  bool CanOutput(double y) const override { return grid_.IndexOf(y).has_value(); }
  std::optional<OutputGrid> Grid() const override { return grid_; }

  double Sample(double x, Rng& rng) const override;
  double Mean(double x) const override;
  double Variance(double x) const override;
  double Mass(double y, double x) const override;
  double Cdf(double y, double x) const override;

  // The paper's scale b = 2 / eps.
  double scale() const { return 2.0 / epsilon_; }
  double granularity() const { return grid_.step; }

 private:
  LaplaceMechanism(double epsilon, std::int64_t levels, std::uint64_t s, std::uint64_t t);
  struct Levels {
    std::int64_t low;
    double up;
  };
  Levels LevelsOf(double x) const;
  // P[Y = k] and P[Y <= k] of the discrete Laplace noise.
  double NoiseMass(std::int64_t k) const;
  double NoiseCdf(std::int64_t k) const;

  double epsilon_;
  std::int64_t levels_;   // K = 1 / g
  std::uint64_t s_, t_;   // the noise's exp(-|y| s / t)
  double rate_;           // s / t
  OutputGrid grid_;
};

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_LAPLACE_H_
