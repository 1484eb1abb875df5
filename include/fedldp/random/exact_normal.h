// x + sigma Z rounded to a public grid, with Z ~ N(0, 1) sampled exactly and
// the rounding decided exactly (issue 39: the Gaussian mechanism on real
// computers).
//
// The repair. Adding a double sigma z to x in floating point leaves the low
// bits of the sum depending on x, so an output can be one the neighbouring
// input cannot produce. Instead the output is the grid point nearest to the
// real number x + sigma Z, on the grid g Z with g = 2^(floor(log2 sigma) -
// 10), which does not depend on x: post-processing of the continuous Gaussian
// mechanism, so its privacy (the analytic curve of vector/baselines.h) holds
// unchanged, and every grid point is a possible output of every input.
//
// The normal, by rejection from boxes (the scheme of Karney's algorithm N,
// "Sampling exactly from the normal distribution", ACM TOMS 42(1), 2016, with
// boxes of width h = 2^-6 instead of 1 and the box drawn by inversion):
//  - box j in [0, 1280) with probability w_j / W, w_j = e^(-(j h)^2 / 2), by
//    inverting a uniform against the cumulative F_j, which
//    src/random/normal_boxes.h computes once in 256-bit integer arithmetic as
//    intervals no wider than 2^-231 (a uniform inside one is the only
//    undecided case). The uniform's first 14 bits name one of 2^14 buckets;
//    in a bucket that lies inside one box's interval (about 98 % of draws)
//    they decide the box with no comparison, and the digit's other 18 bits,
//    independent of the box, give the first V's 13 bits and the sign below;
//  - U uniform on [0, 1), accepted with probability e^(-((j + U)^2 - j^2) h^2
//    / 2) = e^(-U (U + 2j) 2^-13) by von Neumann's generalised trial: the run
//    U > U_1 > ... > U_n with V_i < (U + 2j) 2^-13 has even length, V_i's
//    test being 13 bits of a digit (true below 2j, false above, at 2j a fresh
//    uniform below U); the exponent is at most 0.31, so one digit decides
//    most draws;
//  - else start again; Z = +-(j + U) h, the normal truncated at |Z| < 20.
// Every step is a comparison of uniform numbers drawn digit by digit (32-bit
// digits) or an exact integer choice, so U is known to a few digits (often
// none) and its unread ones are uniform: Z is exact, and rounding reads
// digits of U only until the grid cell is decided. About 1.5 random words
// a draw with U's two digits (PrivUnit's fast path), 1 with its first alone.
//
// The rounding, in integers. With sigma = S 2^q (S a 53-bit integer), g =
// 2^(q + 42) and sigma / g = S 2^-42. The input is first rounded to the
// nearest multiple of g 2^-64 (deterministic; it moves each coordinate by at
// most g 2^-65, which the caller adds to the sensitivity). Then x / g + sigma
// (j + U) h / g + 1/2 is bracketed from the digits of U read so far and the
// index is its floor once both ends agree: U's first digit decides in 128-bit
// arithmetic but with probability 2^-27; then 384-bit integers in units of
// 2^-304 cells, a digit at a time.
//
// The allowance, proven. U's digits are capped at eight (256 bits): a
// comparison of two numbers equal in all eight digits is decided by a fair
// coin, a rounding still undecided takes the lower cell, and a uniform inside
// a cumulative interval counts as below it. Coupled with the ideal algorithm
// on the same words, the output differs only if
//  - a comparison ties: each has one side whose digits are all fresh, so
//    probability 2^-256 given the past, and a draw makes fewer than 2^10 on
//    average (a trial continues with probability below 0.31, a draw starts
//    again below 0.27): below 2^-246;
//  - a box is undecided: the uniform lies in one of 1280 intervals of width
//    at most 2^-231, below 2^-220 a pick, 1.4 picks a draw;
//  - |Z| >= 20: below 2^-290;
//  - a rounding is undecided after 256 bits: x / g + sigma Z / g within
//    S 2^-304 < 2^-251 of a cell boundary, below 2^-250;
// below 2^-218 in all. So each draw's law is within total variation
// kDeviationPerDraw = 2^-218 of the ideal one, and a mechanism of d draws that
// is (eps, delta)-DP ideally is (eps, delta + (1 + e^eps) d 2^-218)-DP as run.
//
// Timing. The digits read depend on the random words alone, except that the
// rounding reads a second digit of U with probability about 2^-27 whatever
// the input: the time says nothing of x.
#ifndef FEDLDP_RANDOM_EXACT_NORMAL_H_
#define FEDLDP_RANDOM_EXACT_NORMAL_H_

#include <cstdint>
#include <span>

#include "fedldp/base/status.h"
#include "fedldp/random/rng.h"

namespace fedldp {

class RoundedGaussian {
 public:
  // Total variation between one draw and the ideal (see above).
  static constexpr double kDeviationPerDraw = 0x1p-218;
  // Largest |x| / g taken: then every index is below 2^53 and m g is exact.
  static constexpr double kMaxCells = 0x1p52;

  // sigma positive and finite, with g = 2^(floor(log2 sigma) - 10) within
  // 2^-900 and 2^900.
  static Result<RoundedGaussian> Create(double sigma);

  double sigma() const { return sigma_; }
  // g, the grid's step: outputs are integer multiples of it.
  double granularity() const { return granularity_; }
  // The most the input's pre-rounding moves one coordinate: g 2^-65.
  double input_rounding() const { return granularity_ * 0x1p-65; }

  // The index m of the grid point m g nearest to x' + sigma Z, x' = x rounded
  // to the nearest multiple of g 2^-64. |x| <= kMaxCells g (checked: beyond
  // it x is clamped there, which the caller's clipping rules out).
  std::int64_t SampleIndex(double x, Rng& rng) const;
  // m g.
  double Sample(double x, Rng& rng) const;
  // Every value v replaced by Sample(v), drawing the generator's words in
  // blocks (faster; the words are the same stream, so a seed reproduces it).
  void SampleMany(std::span<double> values, Rng& rng) const;

 private:
  RoundedGaussian(double sigma, std::uint64_t significand, int exponent);
  double sigma_;
  std::uint64_t significand_;  // S: sigma = S 2^q, 2^52 <= S < 2^53
  int exponent_;               // q + 42: g = 2^exponent_
  double granularity_;
  double limit_;  // kMaxCells g
};

// One exact standard normal, Z = sign (box + U) 2^-6, for tests: the sign,
// the box and U's first 64 bits (U in [first_word 2^-64, (first_word + 1)
// 2^-64)).
struct ExactNormalDraw {
  int sign;
  std::uint32_t box;
  std::uint64_t first_word;
};
ExactNormalDraw DrawExactNormal(Rng& rng);

// For tests: the box table's e^(-2^-13) bounds and its widest interval for a
// cumulative probability F_j (src/random/normal_boxes.h), as doubles; the
// share of uniforms whose bucket decides the box alone, and how many such
// buckets the comparison with F's bounds sends elsewhere at either end
// (U's first two digits at the bucket's least and greatest values).
struct ExactNormalTable {
  double base_low, base_high, widest;
  double sure_share;
  int sure_disagreements;
};
ExactNormalTable InspectExactNormalTable();

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_EXACT_NORMAL_H_
