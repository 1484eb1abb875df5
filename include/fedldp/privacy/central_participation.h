// Central steps that use a record at random, in secret: random allocation
// (Feldman & Shenfeld, arXiv 2502.08202; the exact PLD of arXiv 2602.17284
// and its package PLD_accounting) and Poisson sampling. With allocation,
// each epoch uses a record in one of t steps drawn uniformly in secret
// (Poisson: its one step with probability q, below), each step a
// mechanism whose outputs on neighbouring datasets (add/remove: with and
// without the record) are dominated by a pair (A, B), A with the record.
// This is the central-DP setting of those papers (a Gaussian step of
// DP-SGD), not fedldp's shuffled reports, whose allocated epochs are one
// shuffle of all their reports (run_accounting.h); it is here so the PLD
// machinery can be checked against the published values on their own
// examples, and for a run whose steps are such mechanisms.
//
// One epoch is the pair (A_t, B^t) over t outputs, A_t = (1 / t) sum_i (A
// at step i, B elsewhere): its likelihood ratio is S / t, S = V_1 + ... +
// V_t with V_j = dA/dB of output j, and under B^t the V_j are independent,
// each of B's law of dA/dB. So both directions follow from B's law of S:
//   remove (A_t against B^t): the loss log(S / t) under A_t, whose law is B's
//     tilted by S / t;
//   add (B^t against A_t): the loss -log(S / t) under B^t;
// and delta(eps) is the larger of the two directions' (Zhu, Dong & Wang,
// AISTATS 2022). Epochs compose direction by direction.
//
// The step is given by its PLD (A's law of the loss, shuffle_pld.h, any of
// fedldp's, which dominate their mechanism in both directions), B's law
// following as e^-loss times A's (the rest at V = 0, and A's infinite mass
// a part of A that B never shows). B's law of V sits on the geometric grid
// e^(j h) of the PLD's step h, and S is summed by doubling, each sum of two
// grid values e^(i h) + e^(j h) given to the grid points around it in the
// shares that keep its mean (a mean-preserving spread of S under B, which
// with A as B's tilt is a post-processing the other way: the spread pair
// dominates, so every share is pessimistic in both directions, yet the
// value is not rounded up at every sum, which would add h per doubling).
// Tails of a partial sum are trimmed pessimistically: the outputs there
// are split into a part only A shows (loss +inf in the remove direction,
// its A-mass counted there) and one only B shows (its V counted as 0:
// S only falls, and S = 0 is an infinite loss in the add direction).
// Floating point: each direction's sums are run separately, every share
// biased by a bound on its rounding towards that direction's pessimistic
// side (up for remove, down for add) and every mass raised by a bound on
// its sum's rounding, so both directions' deltas only grow.
#ifndef FEDLDP_PRIVACY_CENTRAL_PARTICIPATION_H_
#define FEDLDP_PRIVACY_CENTRAL_PARTICIPATION_H_

#include <cstddef>
#include <cstdint>

#include "fedldp/base/status.h"
#include "fedldp/privacy/shuffle_pld.h"

namespace fedldp {

// A pair's PLD in both directions: remove (A against B) and add (B
// against A).
struct DirectionalPld {
  Pld remove, add;
};

// One epoch of 1-of-`steps` random allocation of the step whose PLD is
// `step`. `tail`: the mass the sums' trimming may move to infinite loss,
// in each direction. Refused for no steps, a step without a grid, a tail
// outside [0, 1e-3], or a step spread over more than kMaxAllocationSupport
// grid points (each sum takes the square of its support: about a minute
// there on one core).
inline constexpr std::size_t kMaxAllocationSupport = 50'000;
Result<DirectionalPld> AllocationEpochPld(const Pld& step, std::uint64_t steps, double tail);

// `times` independent copies of `pair` composed, direction by direction;
// `trim` as ComposePld's.
DirectionalPld ComposeDirectional(const DirectionalPld& pair, std::uint64_t times, double trim);

// delta(eps): the larger direction's.
double DirectionalDelta(const DirectionalPld& pair, double eps);

// A step run on the record with probability q, drawn in secret (Poisson
// sampling): the pair (q A + (1 - q) B, B) and its reverse, whose
// likelihood ratio is q V + 1 - q, put on the grid the same way.
Result<DirectionalPld> PoissonSampledPld(const Pld& step, double q);

// Gaussian steps of noise sigma and sensitivity 1 (DP-SGD's setting): each
// epoch uses the record in one of `steps` steps drawn in secret (random
// allocation; 1: in its one step), or, with sampling_rate q < 1, in its one
// step with probability q (Poisson); `epochs` such epochs composed.
struct GaussianStepsConfig {
  double sigma = 0;
  std::uint64_t steps = 1;
  double sampling_rate = 1;
  std::uint64_t epochs = 1;
  double delta = 1e-6;  // in [1e-12, 1)
  double grid = 2e-3;
  Status Validate() const;
};

// What the pair states at `delta`: the claim, the larger direction's eps,
// and each direction's.
struct CentralEpsilon {
  double epsilon = 0, remove = 0, add = 0;
};
// Refused, naming the grid that would do, where the epochs' composition
// would spread over more than kMaxStepsComposedWidth grid points
// (ComposedWidth; each squaring takes the square of its support: about a
// minute there on one core).
inline constexpr double kMaxStepsComposedWidth = 2.5e5;
Result<DirectionalPld> GaussianStepsPld(const GaussianStepsConfig& config);
Result<CentralEpsilon> GaussianStepsEpsilon(const GaussianStepsConfig& config);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_CENTRAL_PARTICIPATION_H_
