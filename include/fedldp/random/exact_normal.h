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
// The normal. Karney, "Sampling exactly from the normal distribution" (ACM
// TOMS 42(1), 2016), algorithm N: pick k >= 0 with probability
// e^(-k/2) (1 - e^(-1/2)) (a run of Bernoulli(e^(-1/2)) successes), accept
// with probability e^(-k(k-1)/2), draw U uniform on [0, 1) and accept with
// probability e^(-U(U + 2k)/2) (k + 1 generalised von Neumann trials of
// e^(-U(U + 2k)/(2k + 2))), else start again; Z = +-(k + U). Every step is a
// comparison of uniform numbers drawn digit by digit (32-bit digits) or an
// exact integer choice, so U is known to a few digits and its unread ones are
// uniform: Z is exact, and rounding reads further digits of U only until the
// grid cell is decided.
//
// The rounding, in integers. With sigma = S 2^q (S a 53-bit integer), g =
// 2^(q + 42) and sigma / g = S 2^-42. The input is first rounded to the
// nearest multiple of g 2^-64 (deterministic; it moves each coordinate by at
// most g 2^-65, which the caller adds to the sensitivity). Then x / g + sigma
// (k + U) / g + 1/2 is bracketed in units of 2^-298 cells (384-bit
// integers) from the digits of U read so far, and the index is its floor once
// both ends agree.
//
// The allowance, proven. U's digits are capped at eight (256 bits): a
// comparison of two numbers equal in all eight digits is decided by a fair
// coin, a rounding still undecided takes the lower cell, and k > 64 starts
// again. Coupled with the ideal algorithm on the same words, the output
// differs only if one of these happens. Every comparison involves one number
// whose digits are all fresh, so it ties with probability 2^-256 given the
// past; the comparisons per draw average under 2^10 (Karney counts 30.1
// digits per deviate, and each comparison reads at least one), so ties have
// probability < 2^-246. An undecided rounding needs x / g + sigma Z / g within
// S 2^-298 < 2^-245 of a cell boundary, probability < 2^-243 (the density of
// sigma Z / g is below 2^-10); k > 64 has probability < e^-2000. So each
// draw's law is within total variation kDeviationPerDraw = 2^-242 of the
// ideal one, and a mechanism of d draws that is (eps, delta)-DP ideally is
// (eps, delta + (1 + e^eps) d 2^-242)-DP as run.
//
// Timing. The digits read depend on the random words alone, except that the
// rounding reads a further digit of U with probability about 2^-21 whatever
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
  static constexpr double kDeviationPerDraw = 0x1p-242;
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
};

// One exact standard normal, Z = sign (k + U), for tests: k, the sign and U's
// first 64 bits (U in [first_word 2^-64, (first_word + 1) 2^-64)).
struct ExactNormalDraw {
  int sign;
  std::uint32_t k;
  std::uint64_t first_word;
};
ExactNormalDraw DrawExactNormal(Rng& rng);

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_EXACT_NORMAL_H_
