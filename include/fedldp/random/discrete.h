// Exact samplers on the integers, for mechanisms whose outputs must not
// depend on the input through floating point (issue 39; Mironov, "On
// significance of the least significant bits for differential privacy", CCS
// 2012).
//
// Every sampler here is exact given uniform random words: each probability it
// realises is the stated rational or exp of a rational, with no rounding. They
// follow Canonne, Kamath & Steinke, "The discrete Gaussian for differential
// privacy" (NeurIPS 2020), Algorithms 1 and 2, on 64-bit integers. Their
// running time depends on the random words and the (public) parameters only.
#ifndef FEDLDP_RANDOM_DISCRETE_H_
#define FEDLDP_RANDOM_DISCRETE_H_

#include <cstdint>

#include "fedldp/base/status.h"
#include "fedldp/random/rng.h"

namespace fedldp {

__extension__ using Uint128 = unsigned __int128;

// Uniform integer in [0, n), n >= 1, exactly uniform for any 128-bit n: one
// 64-bit Lemire draw when n < 2^64, otherwise masked 128-bit words with
// rejection (acceptance > 1/2).
Uint128 UniformIndex128(Rng& rng, Uint128 n);

// True with probability exactly num / den (0 <= num <= den, den >= 1).
bool BernoulliRational(Rng& rng, std::uint64_t num, std::uint64_t den);

// True with probability exactly exp(-num / den) (den >= 1; num any), by CKS
// Algorithm 1: for gamma = num/den in [0, 1], count the K with
// Bernoulli(gamma / K) successes in a row; exp(-gamma) = P[K odd]. Larger
// gamma is split into exp(-1) factors and a remainder. A den * K past 2^64
// (probability below 1 / 2^12!) ends the count early.
bool BernoulliExpMinus(Rng& rng, std::uint64_t num, std::uint64_t den);

// The geometric law on the naturals, P[Y = y] proportional to exp(-y s / t)
// (s, t >= 1): steps 1-5 of CKS Algorithm 2 (X = U + t V with P[X = x]
// proportional to exp(-x / t), then Y = floor(X / s)). The loop's number of
// rounds depends on the random words and s, t only. An X past 2^63, of
// probability below exp(-2^11) for t <= 2^52, starts the draw again: the one
// departure from the law, with BernoulliExpMinus's stop.
std::uint64_t DiscreteGeometric(Rng& rng, std::uint64_t s, std::uint64_t t);
// The discrete Laplace law on the integers, P[Y = y] proportional to
// exp(-|y| s / t): CKS Algorithm 2, the geometric with a sign.
std::int64_t DiscreteLaplace(Rng& rng, std::uint64_t s, std::uint64_t t);

// The successes in n trials of probability exactly numerator / 2^bits (bits
// in [1, 63], numerator <= 2^bits). Each trial's uniform bits are compared
// with the numerator's from the top: at each bit the open trials (equal so
// far) whose bit is 0 number Bin(open, 1/2), drawn exactly as the ones among
// `open` fresh random bits; they succeed where the numerator's bit is 1, and
// stay open where it is 0. About n / 32 words in all; the work depends on the
// words and (n, numerator) only.
std::uint64_t BinomialDyadic(Rng& rng, std::uint64_t n, std::uint64_t numerator, int bits);

// s and t = 2^q with s / t <= rate: the exact rate of a discrete Laplace or
// geometric. q in [1, 52] makes s about 2^30 (s / t within 2^-30 of rate)
// where it can; s = floor(rate t (1 - 2^-50)). An error if s would be 0 or
// past 2^62.
struct RationalRate {
  std::uint64_t s, t;
  double value() const { return static_cast<double>(s) / static_cast<double>(t); }
};
Result<RationalRate> RationalRateBelow(double rate);

// Two integer weights b = 2^shift and b + c whose ratio is at most e^eps:
// the exact form of "e^eps times as likely" for mechanisms that draw one
// uniform integer over weighted outcomes (PM, PS). c = floor(b (e^eps - 1)
// (1 - 2^-60)); the factor covers expm1l's error of a few ulp, so
// (b + c) / b <= e^eps holds of the integers. shift is the smallest in
// [min_bits, 100] with c >= 2^min_bits (the ratio then within 2^-min_bits
// of e^eps), and c is capped at 2^100 (the ratio falls short of e^eps only
// beyond eps ~ 100 ln 2 - min_bits ln 2). An error if c would be 0.
struct IntegerExpRatio {
  int shift;      // b = 2^shift
  Uint128 extra;  // c
  // ln((b + c) / b) <= eps.
  double LogRatio() const;
};
Result<IntegerExpRatio> MakeIntegerExpRatio(double epsilon, int min_bits);

// Randomized rounding of u (finite, |u| < 2^62) to floor(u) or floor(u) + 1,
// up with probability RoundUpProbability(u) ~ u - floor(u): unbiased up to
// the 2^-53 resolution of that probability, and input-independent in time.
std::int64_t RandomizedRound(double u, Rng& rng);
// The exact probability RandomizedRound(u) rounds up: ceil(f 2^53) / 2^53
// for the fraction f = u - floor(u) (computed exactly).
double RoundUpProbability(double u);

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_DISCRETE_H_
