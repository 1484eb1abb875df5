// Piecewise mechanism (PM) of Wang et al., "Collecting and analyzing
// multidimensional data with local differential privacy", ICDE 2019, Alg. 2,
// implemented exactly on a public grid (issue 39).
//
// The paper's PM. Input t in [-1, 1]. With C = (e^(eps/2) + 1) / (e^(eps/2) - 1),
// l(t) = (C + 1)/2 t - (C - 1)/2 and r(t) = l(t) + C - 1, the output density is
// e^eps times higher on [l(t), r(t)] than on the rest of [-C, C]. Unbiased;
// Var[M(t)] = t^2 / (e^(eps/2) - 1) + (e^(eps/2) + 3) / (3 (e^(eps/2) - 1)^2).
//
// Why not as written. Drawn as l(t) + (C - 1) U on doubles, the set of
// outputs depends on t through rounding: 27 % of the outputs at t = 1 cannot
// occur at t = 0 (eps = 1, measured in issue 39), each ruling an input out.
//
// What runs: the same construction on integers. Integers J (input levels),
// w (window width, odd), N = 2J + w outputs and M = (N - 1) / 2:
//  1. The clipped input t goes to level j in {0, ..., 2J} by randomized
//     rounding of (t + 1) J (random/discrete.h): E[(j - J) / J] = t up to
//     the 2^-53 resolution of the rounding probability.
//  2. Output index i in {0, ..., N - 1}: with weights b for every index and
//     b + c for the w indices of the window [j, j + w - 1], i.e.
//     P[i | j] = (b + c [i in window]) / W, W = b N + c w. Drawn exactly: one
//     uniform integer below W (below b N it is an index of all N, the shift
//     by log2 b), else a uniform index of the window.
//  3. The output is grid value (i - M) h, h = W / (c w J), the same double for
//     every input (OutputGrid::Value).
// Privacy: P[i | j] / P[i | j'] <= (b + c) / b for any levels, and a mixture
// over levels (step 1) keeps the bound, so the program is eps'-LDP with
// eps' = ln(1 + c / b) <= eps: b = 2^k and c = floor(b (e^eps - 1)
// (1 - 2^-60)) (MakeIntegerExpRatio, random/discrete.h, with min_bits 24: c
// >= 2^24 where eps allows, so c / b is within 2^-24 of e^eps - 1 and W
// mostly below 2^64; c capped at 2^100, so eps' < eps only beyond eps ~ 52).
// Unbiased: the window of level j is centred on index j + (w - 1) / 2, i.e.
// on value (j - J) h; E[output | j] = (c w / W) (j - J) h = (j - J) / J.
// Matching the paper: w / N = 1 / (e^(eps/2) + 1) as PM's (C - 1) / (2 C), so
// w = 2 floor(J e^(-eps/2)) + 1, and J = max(2^12, 512 e^(eps/2) rounded up to
// a power of two), at most 2^20, keeps w >= 1023 up to eps ~ 14: the variance
// is the paper's to 0.1 % (the window's width is rounded to an integer;
// tests/mechanism).
// Every output is a public grid value, every input can produce every one of
// them, and the running time depends on the random words only.
#ifndef FEDLDP_MECHANISM_PIECEWISE_H_
#define FEDLDP_MECHANISM_PIECEWISE_H_

#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/random/discrete.h"

namespace fedldp {

class PiecewiseMechanism final : public ValueMechanism {
 public:
  static Result<PiecewiseMechanism> Create(double epsilon);

  std::string name() const override { return "pm"; }
  double epsilon() const override { return epsilon_; }
  // ln(1 + c / b) <= epsilon(): the bound the program meets exactly.
  double implemented_epsilon() const;
  Interval input_domain() const override { return {-1.0, 1.0}; }
  Interval output_domain() const override { return {-bound(), bound()}; }
  bool CanOutput(double y) const override { return grid_.IndexOf(y).has_value(); }
  std::optional<OutputGrid> Grid() const override { return grid_; }

  double Sample(double x, Rng& rng) const override;
  double Mean(double x) const override;
  double Variance(double x) const override;
  double Mass(double y, double x) const override;
  double Cdf(double y, double x) const override;

  // C: outputs lie in [-C, C].
  double bound() const { return grid_.Value(grid_.hi); }
  // The paper's variance at t (the continuous mechanism this one implements).
  double PaperVariance(double t) const;
  std::int64_t levels() const { return levels_; }
  std::int64_t window() const { return window_; }

 private:
  PiecewiseMechanism(double epsilon, std::int64_t levels, std::int64_t window, int shift,
                     Uint128 extra);
  // The two levels x may round to: floor((t + 1) J) and one more, the
  // latter with probability up.
  struct Levels {
    std::int64_t low;
    double up;
  };
  Levels LevelsOf(double x) const;
  // Weight of index i given level j: b + c [j <= i < j + w], as a fraction of W.
  long double Weight(std::int64_t i, std::int64_t j) const;
  // E[output^2 | level j].
  double SecondMoment(std::int64_t j) const;

  double epsilon_;
  std::int64_t levels_;  // J
  std::int64_t window_;  // w
  std::int64_t size_;    // N
  int shift_;            // b = 2^shift
  Uint128 extra_;        // c
  Uint128 total_;        // W
  OutputGrid grid_;
};

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_PIECEWISE_H_
