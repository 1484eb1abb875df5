// Laplace mechanism, the classical baseline, as the discrete Laplace on a
// public grid (issue 39). The paper form: input t in [-1, 1] (sensitivity 2),
// output t + Lap(b) with b = 2 / eps; Var = 2 b^2 = 8 / eps^2.
//
// Why not as written. t + b (-log U) on doubles outputs values that depend on
// t through rounding: 62 % of the outputs at t = 1 cannot occur at t = 0
// (eps = 1, measured in issue 39; Mironov, CCS 2012, attacks exactly this).
//
// What runs: Google DP's secure-noise construction with noise that is exact
// in integers.
//  1. Granularity g = 2^-k, k = max(0, 10 - floor(log2 b)), so that
//     b / g is in [2^10, 2^11) (or g = 1 for b >= 2^11); K = 1 / g.
//  2. The clipped t goes to the level j = randomized rounding of t K, an
//     integer in [-K, K] (exact: K is a power of two), E[j g] = t up to the
//     2^-53 resolution of the rounding probability.
//  3. Y from IntegerLaplace (random/integer_laplace.h): the discrete Laplace
//     written in integer weights whose adjacent ratios are at most R, with
//     ln R <= eps / (2K) (within 2^-32), drawn with one word (alias method).
//     It replaced CKS's exact sampler (random/discrete.h), which was 5.4x
//     slower than the formula on doubles; this is within 2x.
//  4. Output (j + Y) g, clamped to the grid (OutputGrid: step g, |m| <= 2^52).
// Privacy: levels differ by at most 2K, so P[y | j] / P[y | j'] <= R^(2K) =
// e^eps' with eps' <= eps, and the mixture over levels keeps it. Every grid
// value has positive probability under every input, and the running time
// depends on the random words only (the input enters as an addition).
// Var = g^2 (P_up (1 - P_up) + Var Y): 8 / eps^2 to a relative 1e-6.
// Epsilon below 2^-18 is refused (IntegerLaplace's smallest rate).
#ifndef FEDLDP_MECHANISM_LAPLACE_H_
#define FEDLDP_MECHANISM_LAPLACE_H_

#include <cstdint>

#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/random/integer_laplace.h"

namespace fedldp {

class LaplaceMechanism final : public ValueMechanism {
 public:
  static Result<LaplaceMechanism> Create(double epsilon);

  std::string name() const override { return "laplace"; }
  double epsilon() const override { return epsilon_; }
  // 2K ln R <= epsilon(): the bound the program meets exactly.
  double implemented_epsilon() const;
  Interval input_domain() const override { return {-1.0, 1.0}; }
  Interval output_domain() const override { return {grid_.Value(grid_.lo), grid_.Value(grid_.hi)}; }
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
  LaplaceMechanism(double epsilon, std::int64_t levels, IntegerLaplace noise);
  struct Levels {
    std::int64_t low;
    double up;
  };
  Levels LevelsOf(double x) const;

  double epsilon_;
  std::int64_t levels_;   // K = 1 / g
  IntegerLaplace noise_;  // in grid steps
  OutputGrid grid_;
};

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_LAPLACE_H_
