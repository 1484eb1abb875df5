// Shuffled rounds composed exactly: the privacy-loss distribution (PLD) of
// the dominating pair of Feldman, McMillan & Talwar's clone analysis
// (shuffle_numerical.h), composed over rounds by convolution.
//
// One round of n shuffled eps0-LDP reports is, for two datasets that differ
// in one user, a post-processing of the pair (P, Q) over (K, C) of
// shuffle_numerical.h, the same post-processing for both. (P, Q) is then a
// dominating pair of the round, and the R-fold products dominate R rounds,
// adaptively chosen (Zhu, Dong & Wang, AISTATS 2022, Thm 10). The run is
// (eps, delta)-DP for every eps with
//   delta(eps) = E_P[(1 - e^(eps - L))_+],  L = sum of R independent copies
// of the round's loss log(P/Q)(K, C) under P (plus the probability that L
// is infinite). Q(k | c) = P(c + 1 - k | c) makes the pair symmetric: the
// loss under Q is distributed as -L under P's mirror, so (Q, P) has the same
// PLD and one direction suffices.
//
// Pessimistic throughout: a round's pair is put on a grid of step h through
// its delta at the grid points, from the unrounded losses, and the chords in
// e^eps between them, which lie above a symmetric pair's convex delta
// (Doroshenko et al.'s "connect the dots", PETS 2022; until 2026-12-06 every
// loss was rounded up, which adds about h / 2 to each round: 512 rounds at
// eps0 3.138 were stated (2.966, 1e-5) against 2.712 now), the mass outside
// the binomial windows and the far tails trimmed in composition count as
// infinite loss (each a full contribution to delta). The total eps is then
// never below the exact analysis's.
#ifndef FEDLDP_PRIVACY_SHUFFLE_PLD_H_
#define FEDLDP_PRIVACY_SHUFFLE_PLD_H_

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp {

// Losses (first + i) h with probability mass[i]; `infinite` more mass at +inf.
struct Pld {
  double grid = 1e-3;  // h
  std::int64_t first = 0;
  std::vector<double> mass;
  double infinite = 0;
};

// (loss, probability) atoms, each loss rounded up to the grid.
Pld PldFromAtoms(std::span<const std::pair<double, double>> atoms, double grid);

// The pair, on the grid through its delta at the grid points (connected,
// above), of a symmetric pair given by P's (loss, probability) atoms (only
// the positive losses are read: the rest follow by symmetry).
Pld SymmetricPldFromAtoms(std::span<const std::pair<double, double>> atoms, double grid);

// One round of n shuffled eps0-LDP reports, on the grid through its delta
// at the grid points (connected, above). `tolerance`: mass the binomial
// windows may leave out (counted as infinite loss). Refused where the exact
// sum is beyond reach (as NumericalShuffleEpsilon) and past eps0 =
// kMaxPldLocalEpsilon, whose likelihood ratios e^eps0 are past a double's.
inline constexpr double kMaxPldLocalEpsilon = 700;
// `reduction`: whose pair (shuffle_numerical.h; the variation-ratio pair
// differs only in its clone rate).
Result<Pld> ShuffledRoundPld(std::uint64_t n, double eps0, double grid, double tolerance,
                             ShuffleReduction reduction = kTightestShuffleBound);

// A round of m shuffled reports whose m users are drawn uniformly without
// replacement from N (q = m / N), in secret from the server: the PLD of a
// pair whose tradeoff is C_q(f) = min(f_q, f_q^-1)** with f = T(P, Q) the
// round's and f_q = q f + (1 - q) Id (Dong, Roth & Su, JRSS-B 2022, Thm
// 4.2: sampling without replacement under substitution; the round, a
// post-processing of the symmetric pair (P, Q) for every two neighbouring
// sets of m, is f-DP). For eps >= 0 its delta is the larger of
//   q delta_round(log(1 + (e^eps - 1) / q))                 (f_q^-1's side)
//   t delta_round(log(q e^eps / t)), t = 1 - (1 - q) e^eps > 0  (f_q's side),
// read off `round` (pessimistic there, so pessimistic here). A symmetric
// tradeoff is fixed by its delta on eps >= 0; the pair is built from it on
// the grid: the masses at losses j h >= 0 from the slopes of delta in e^eps
// between grid points (a chord of a convex curve lies above it, so delta
// only grows), the loss -j h with e^(-j h) times that mass, the rest at 0.
// `round` must be the PLD of a symmetric pair (ShuffledRoundPld's is);
// q = 1 returns it unchanged.
Pld SampledRoundPld(const Pld& round, double q);

// A round of Poisson participation: each of `users` users is drawn
// independently with probability q, in secret by the shuffler, which shows
// the m drawn users' reports shuffled, so m is known. Given m, the drawn
// users are a uniform m-subset of the N (Poisson sampling conditioned on
// its count), so with m shown the round is, for each m, a round of m
// shuffled reports drawn without replacement at rate m / N, which
// SampledRoundPld(ShuffledRoundPld(m), m / N) dominates; m does not depend
// on the data (substitution: the same N users), so the round's hockey-stick
// divergences are their mixture over m ~ Binomial(N, q), and so is its PLD
// (the components are told apart by m). m = 0 sends nothing (loss 0). The
// m >= 1 are taken in at most `buckets` blocks of consecutive m, each
// dominated by its fewest reports (a round of more is a post-processing of
// one of fewer: the extra clones add independent noise) at its largest rate
// (C_q only loses privacy as q grows); the binomial's tails, at most `tail`
// in all, count as infinite loss. Refused where a block's round is
// (ShuffledRoundPld's reasons).
Result<Pld> PoissonRoundPld(std::uint64_t users, double q, double eps0, double grid,
                            double tolerance, ShuffleReduction reduction = kTightestShuffleBound,
                            std::size_t buckets = 32, double tail = 1e-12);

// The PLD of the mixture: component i with probability weights[i] (which
// sum to at most 1; the rest counts as infinite loss), all on one grid.
Pld MixPld(std::span<const std::pair<double, Pld>> components);

// k reports, each (eps0, delta0)-DP, composed: the k-fold product of Kairouz,
// Oh & Viswanath's canonical pair (composition.h), which dominates any such
// reports. Loss +inf with probability 1 - (1 - delta0)^k, else (k - 2j) eps0
// with j ~ Binomial(k, 1 / (1 + e^eps0)), each rounded up once to the grid
// (mass below 1e-300 per atom counted as infinite). Refused where the
// support would exceed `max_support` grid points.
Result<Pld> ReportsPld(double eps0, double delta0, std::uint64_t k, double grid,
                       std::size_t max_support);

// The Gaussian mechanism of sensitivity 1 and noise sigma (N(1, sigma^2)
// against N(0, sigma^2), a symmetric pair: the loss is N(mu^2 / 2, mu^2)
// under P, mu = 1 / sigma), on the grid through its delta at the grid
// points (connected, above: each cell's exact P- and Q-masses). Losses past
// mu^2 / 2 + 10 mu count as infinite (about 1e-23 of P's mass).
Result<Pld> GaussianPld(double sigma, double grid);

// The PLD of a and b composed (independent, losses added); tail mass of at
// most `trim` moved to infinite loss. Runs in (nonzero masses of the
// sparser) x (support of the other).
Pld ConvolvePld(const Pld& a, const Pld& b, double trim);

// The grid points the PLD of `times` rounds of `round` spreads over once its
// tails are trimmed (12 standard deviations of the sum), about what each
// squaring of ComposePld multiplies by itself: a round whose loss spreads
// wide (eps0 = 11 with under one clone per round: losses 0 and 11 each
// likely) composed 512 times would take some 1e12 steps.
double ComposedWidth(const Pld& round, std::uint64_t times);
// Past this width a run's PLD is not composed (account run's and the
// accountant's rule): the per-round statements stand.
inline constexpr double kMaxComposedWidth = 5e4;

// R = `rounds` rounds of n shuffled eps0-LDP reports, each sampled at rate
// q (SampledRoundPld; q = 1: every client in every round; `poisson`: each of
// n / q clients drawn with probability q, PoissonRoundPld), composed: the one
// rule of account run and the accountant. None where the round has no PLD
// here or the composition would spread past kMaxComposedWidth (the
// per-round statements stand). `tolerance`: the round's windows; `trim`:
// the composition's tails.
std::optional<Pld> ShuffledRunPld(std::uint64_t n, double eps0, double q, std::uint64_t rounds,
                                  double grid, double tolerance, double trim,
                                  ShuffleReduction reduction = kTightestShuffleBound,
                                  bool poisson = false);

// One round of ShuffledRunPld: q = 1 the shuffled round, else sampled at
// rate q (without replacement, or `poisson`: of n / q clients), or why not.
Result<Pld> ShuffledRoundOfRunPld(std::uint64_t n, double eps0, double q, double grid,
                                  double tolerance, ShuffleReduction reduction, bool poisson);

// The PLD of `times` independent rounds of `round`. Tail mass of at most
// `trim` in all is moved to infinite loss to keep the support small.
Pld ComposePld(const Pld& round, std::uint64_t times, double trim);

// delta(eps) of a PLD, and the smallest eps (to 1e-7 above) whose delta is
// at most `delta`; +inf if none (the infinite mass is above `delta`).
double PldDelta(const Pld& pld, double eps);
double PldEpsilon(const Pld& pld, double delta);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_SHUFFLE_PLD_H_
