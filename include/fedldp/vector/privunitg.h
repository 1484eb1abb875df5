// PrivUnitG (Asi, Feldman & Talwar, "Optimal algorithms for mean estimation
// under local differential privacy", ICML 2022), with the unbiased rounding of
// short vectors to the sphere of PrivUnit2 (Bhowmick et al. 2018).
//
// On the unit sphere. For a unit u, draw g ~ N(0, I_d) and, with probability p,
// a ~ N(0, 1) conditioned on a >= gamma, otherwise on a < gamma; the report is
//   z = sigma (g - <g, u> u + a u).
// w = z / sigma has density phi_d(w) p / q on the cap {<w, u> >= gamma} and
// phi_d(w) (1 - p) / (1 - q) off it, q = P[N(0, 1) >= gamma], so the likelihood
// ratio of any report under two inputs is at most p (1 - q) / ((1 - p) q); p is
// set so that this is e^eps exactly:
//   p = e^eps q / (1 - q + e^eps q).
// E[a] = mu = phi(gamma) (p / q - (1 - p) / (1 - q)), so sigma = 1 / mu makes
// E[z] = u. With E[a^2] = 1 + gamma mu,
//   E||z||^2 = sigma^2 (d - 1 + 1 + gamma mu) = sigma^2 d + sigma gamma.
// gamma (and with it q, p, mu, sigma) is the free parameter: Optimal() picks the
// gamma that minimises E||z||^2 for the given d, a grid over [-4, 19] refined
// by golden section, then the better neighbour on the grid 2^-6 Z.
//
// On real computers (issue 39) the report is the point of a public grid
// nearest to the real C sigma z, with every random variable sampled exactly
// and the rounding decided exactly: random/exact_privunit.h, whose sampler
// draws a from the cap-weighted normal directly (ratio e^eps exactly, no q
// computed in doubles), within a proven total variation Deviation().
//
// On the ball of radius C. x with ||x|| <= C is rounded to u = x / ||x|| with
// probability (1 + ||x|| / C) / 2 and to -x / ||x|| otherwise (e_1 stands for
// the direction of x = 0), so E[C u] = x; the report is C z(u). The rounding
// only picks which unit vector is privatised, so the guarantee is unchanged,
// and E||C z - x||^2 = C^2 (sigma^2 d + sigma gamma) - ||x||^2: largest at
// x = 0.
#ifndef FEDLDP_VECTOR_PRIVUNITG_H_
#define FEDLDP_VECTOR_PRIVUNITG_H_

#include "fedldp/random/exact_privunit.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

struct PrivUnitGParameters {
  double gamma = 0;  // the cap's threshold, in units of sigma
  double q = 0;      // P[N(0, 1) >= gamma]
  double p = 0;      // probability of drawing a in the cap
  double mu = 0;     // E[a]
  double sigma = 0;  // 1 / mu, the report's scale

  // The parameters fixed by gamma and eps (p from the ratio, sigma from mu).
  static PrivUnitGParameters ForGamma(double gamma, double epsilon);
  // The gamma minimising sigma^2 d + sigma gamma.
  static PrivUnitGParameters Optimal(double epsilon, std::size_t dimension);
  // p (1 - q) / ((1 - p) q): the worst-case likelihood ratio of the reports.
  double WorstRatio() const;
  // E||z||^2 for a unit input, sigma^2 d + sigma gamma.
  double SecondMoment(std::size_t dimension) const;
};

class PrivUnitG final : public VectorRandomizer {
 public:
  // eps in (0, 100], clip finite and > 0, 1 <= dimension <= kMaxVectorDimension.
  static Result<PrivUnitG> Create(std::size_t dimension, double epsilon, double clip);
  // With the given parameters, for tests that build a randomizer with a wrong
  // constant; it claims `epsilon` whatever the parameters give.
  static PrivUnitG WithParameters(std::size_t dimension, double epsilon, double clip,
                                  const PrivUnitGParameters& parameters);

  std::string name() const override { return "privunitg"; }
  double epsilon() const override { return epsilon_; }
  const PrivUnitGParameters& parameters() const { return parameters_; }

  double SquaredError(double norm) const override;
  double WorstCaseSquaredError() const override { return SquaredError(0); }
  // log(p (1 - q) / ((1 - p) q)) of the parameters.
  ExactPrivacy ImplementedPrivacy() const override;
  // At x = C u the report is in the cap {<R, u> >= C sigma gamma} with
  // probability p; at -C u with (1 - p) / (1 - q) times the normal mass of
  // the cap outside -u's (plus p / q times the overlap if gamma < 0).
  std::optional<CapLaw> Cap() const override;

  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override;
  using VectorRandomizer::Randomize;

  // PrivUnitG of sign u / ||u|| (sign e_1 for u = 0), times `scale`: the
  // step FastProjUnit applies in k dimensions.
  void RandomizeUnit(std::span<const double> u, int sign, double scale, std::span<double> out,
                     Rng& rng) const;

  // Reports lie on the grid of the rounded PrivUnit (random/exact_privunit.h)
  // for the scale clip sigma, or scale sigma for RandomizeUnit.
  std::optional<OutputGrid> Grid() const override;
  std::optional<OutputGrid> UnitGrid(double scale) const;
  // The sampler's proven allowance: the randomizer is (eps, (1 + e^eps)
  // times this)-LDP as run.
  double deviation() const override;

 private:
  PrivUnitG(std::size_t dimension, double epsilon, double clip,
            const PrivUnitGParameters& parameters, RoundedPrivUnit sampler)
      : VectorRandomizer(dimension, clip),
        epsilon_(epsilon),
        parameters_(parameters),
        sampler_(std::move(sampler)) {}
  static std::optional<OutputGrid> GridOfScale(double scale);

  double epsilon_;
  PrivUnitGParameters parameters_;
  RoundedPrivUnit sampler_;
};

// The sign of the rounding of x to the sphere: +1 with probability (1 + t) /
// 2, t = min(1, ||x|| / clip) (t = 0 if `fair`), non-finite entries read as
// 0. In products on x scaled by `scaling` (UnitScaling::Of(x), random/exact_privunit.h), without
// a division, square root or branch on x, whose time depends on the operands (the audit's
// timing check saw 1 ns a coordinate between x = 0 and ||x|| = C): + iff w =
// 2U - 1 < 0 or w^2 C^2 < ||x||^2.
int SphereSign(std::span<const double> x, const UnitScaling& scaling, double clip, bool fair,
               Rng& rng);

// The share of PrivUnitG-like reports at the input -u in u's cap {<w, u> >=
// gamma}, w with the standard normal's density times on_cap on -u's cap and
// off_cap off it: the event whose ratio under u and -u is e^eps.
double CapShareAtOpposite(double gamma, double on_cap, double off_cap);

// How PrivUnitG's and FastProjUnit's privacy statements hold on real
// computers (their registry entries' floating_point).
inline constexpr std::string_view kPrivUnitGFloatingPoint =
    "floating point: every value reported is a point of a public grid fixed before any "
    "input is seen, the nearest to PrivUnitG's real report with every normal drawn "
    "exactly and the rounding decided exactly: no report rules an input out; the law "
    "as run is within a proven total variation of the ideal one (below 2^-194 for d <= "
    "2^24 at eps <= 30), which adds (1 + e^eps) times it to a report's delta: the "
    "accountant's deltas include it (account run --report-deviation; docs/methods.md)";

}  // namespace fedldp

#endif  // FEDLDP_VECTOR_PRIVUNITG_H_
