// PrivUnitG's report on a public grid, with every random variable sampled
// exactly and the rounding decided exactly (issue 39: PrivUnitG and
// FastProjUnit on real computers).
//
// The mechanism. For a unit vector u, PrivUnitG reports
//   w = Z + (A - <Z, u>) u,   Z ~ N(0, I_d),
// with A a standard normal reweighted by the cap: density proportional to
// phi(a) on {a >= gamma} and to e^(-eps') phi(a) below it. w has density
// proportional to phi_d(w) times 1 on the cap {<w, u> >= gamma} and e^(-eps')
// off it, so the likelihood ratio of any report under two inputs is at most
// e^eps' exactly: no normal tail q enters the sampler (the "p" of
// privunitg.h is implied, p = q / (q + (1 - q) e^(-eps'))). eps' is eps
// rounded down to a multiple of 2^-192; gamma is a multiple of h = 2^-6.
//
// The repair. Computing w in doubles leaves its low bits depending on u.
// Instead the report is the grid point nearest to scale w, on the grid G Z
// with G = 2^(floor(log2 scale) - 10), fixed before any input is seen:
// post-processing of the mechanism above, for any u, so the guarantee holds
// of what is sent.
//  - u: the input v (non-finite entries read as 0) scaled by a power of two
//    and rounded to integers m_i with max |m_i| in [2^51, 2^52]; u = sign m /
//    ||m|| exactly (sign e_1 2^52 for v = 0). This only chooses u.
//  - Z_i and A: exact normals (exact_normal.h), A from a signed box table
//    weighted by the cap (normal_boxes::CapTable), each known as a box and
//    digits of a uniform whose unread digits are fresh.
//  - The cell of each coordinate: scale w_i / G + 1/2 is bracketed from the
//    digits read, <Z, m> and ||m||^2 as exact integer sums; the index is the
//    bracket's floor once both ends agree. With two digits (Z to 2^-70) the
//    shared scalar R (A ||m|| - <Z, m>) / ||m||^2 is bracketed in long double
//    with every rounding bounded (2^-60 of the magnitudes), each cell in
//    128-bit integers: a bracket about 2^-47 (1 + 5 |u_i|) cells wide, so
//    a report is undecided with probability of order d 2^-50. Then every Z_i
//    and A read two more digits (fresh words) and the brackets are
//    recomputed in GMP integers (||m|| by an integer square root), up to 8.
//  - The cells in doubles, first. Most cells are decided before the 128-bit
//    step, from y = (s_i (R 2^-6) a_i + rk m_i) + 1/2 in doubles, with a_i
//    = box_i + U_i's first 42 bits 2^-42 (exact: below 2^53 units of
//    2^-42), R 2^-6 = s_r 2^-48 exact, rk the double nearest the centre of
//    the long-double bracket of R K (K = (A ||m|| - <Z, m>) / ||m||^2) and
//    m_i exact (|m_i| <= 2^52). With |Z_i| < 20, |A| < 20, |<Z, u>| <=
//    20 sqrt(d) <= 20 2^12 and R < 2^11, every term is bounded: R Z_i <
//    2^15.33 cells and |R K m_i| = R |A - <Z, u>| |u_i| < 2^27.33. So y is
//    within, in cells: R 2^-48 < 2^-37 (U past 42 bits), 2^-53 2^15.33 (the
//    product), 2^-53 2^27.33 (rk's rounding, times |m_i| <= ||m||), the
//    bracket's half-width times 2^52 (checked at most 2^-31, else this step
//    is skipped), 2^-53 2^27.34 (rk m_i's rounding) and twice 2^-53 2^27.34
//    (the two sums): below 2^-23.5 of scale w_i / G + 1/2 in all. y - 2^-22
//    and y + 2^-22, each rounded by at most 2^-26 (|y| < 2^28), then still
//    enclose it; when their floors agree that floor is the cell, else the
//    128-bit step decides (probability about 2^-21 a coordinate, whatever
//    the input: the fraction of y is spread over cells at any u).
//
// The allowance, proven. As RoundedGaussian: each exact normal is within
// 2^-218 of the ideal law; A's table picks land in an interval of its
// cumulative law with probability at most 1.5 times the table's total width
// (fewer than 1.4 picks a draw); a rounding undecided after 8 digits (the
// lower cell is taken) needs scale w_i / G within 2^-256 R d of a boundary,
// and the density of w_i is at most 2^5 (A's density is at most 20 for gamma
// < 19, Mills's ratio), below d 2^-250 a report. So a report is within total
// variation DeviationPerReport(d) of the ideal one: an eps-LDP randomizer is
// (eps, (1 + e^eps) DeviationPerReport(d))-LDP as run.
//
// Timing. The words read depend on the random words alone; the fast path
// has no branch on the input (the audit's timing check compares x = 0 with
// ||x|| = C); the double step runs over blocks of 256 coordinates, and a
// block with a straddling cell (about 1 in 8,000, from y's fraction, spread
// over cells whatever the input) is redone one coordinate at a time; the GMP
// path runs with probability of order d 2^-50 whatever the input.
#ifndef FEDLDP_RANDOM_EXACT_PRIVUNIT_H_
#define FEDLDP_RANDOM_EXACT_PRIVUNIT_H_

#include <array>
#include <memory>
#include <span>

#include "fedldp/base/status.h"
#include "fedldp/random/rng.h"

namespace fedldp {

namespace normal_boxes {
struct Table;
}

// x's scale, from one pass over x (SphereSign and RoundedPrivUnit::Sample
// read the same x; at d = 10^6 a pass is 8 MB): max |x_i| over the finite
// entries (0 if none) and two powers of two whose product p puts max |x_i| p
// in [1/2, 1) (p = 1 for x = 0), so that x p has x's direction exactly; each
// factor is a double even when p is not. Without a branch on x: frexp and
// ldexp take early exits on 0 and subnormals, which the audit's timing check
// sees.
struct UnitScaling {
  double max_abs = 0;
  std::array<double, 2> factors{1, 1};

  static UnitScaling Of(std::span<const double> x);
  // ||x p||^2 (non-finite entries read as 0), summed in 8 interleaved
  // lanes: vectorised, the same double at any vector width.
  double SquaredNorm(std::span<const double> x) const;
};

class RoundedPrivUnit {
 public:
  // gamma a multiple of 2^-6 with |gamma| <= 19, epsilon in (0, 100].
  static Result<RoundedPrivUnit> Create(double gamma, double epsilon);

  double gamma() const { return gamma_; }
  // Total variation between one report of dimension d and the ideal one.
  double DeviationPerReport(std::size_t dimension) const;
  // G for a scale: reports are integer multiples of it.
  static double Granularity(double scale);

  // out = the grid point nearest to scale w for u = sign v / ||v|| (see
  // above); v and out of one size, at most 2^24; scale positive and finite.
  void Sample(std::span<const double> v, int sign, double scale, std::span<double> out,
              Rng& rng) const;
  // The same with v's scaling already known (UnitScaling::Of(v)).
  void Sample(std::span<const double> v, const UnitScaling& scaling, int sign, double scale,
              std::span<double> out, Rng& rng) const;
  // For tests: the same with every coordinate decided by the GMP path.
  void SampleWide(std::span<const double> v, int sign, double scale, std::span<double> out,
                  Rng& rng) const;

 private:
  RoundedPrivUnit(double gamma, std::shared_ptr<const normal_boxes::Table> cap, double width)
      : gamma_(gamma), cap_(std::move(cap)), cap_width_(width) {}
  void Run(std::span<const double> v, const UnitScaling& scaling, int sign, double scale,
           std::span<double> out, Rng& rng, bool wide) const;
  double gamma_;
  std::shared_ptr<const normal_boxes::Table> cap_;
  double cap_width_;  // the cap table's total interval width
};

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_EXACT_PRIVUNIT_H_
