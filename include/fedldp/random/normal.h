// Gaussian deviates for hot loops, and normal distributions conditioned on a
// half-line, all sampled exactly: every loop below rejects until it accepts and
// never falls back to an approximation (the only error is floating point).
//
// FillStandardNormal is the ziggurat of Marsaglia & Tsang ("The ziggurat
// method for generating random variables", J. Stat. Softw. 5(8), 2000) with
// 256 layers and r = 3.6541528853610088, one 64-bit word per deviate on its
// fast path (8 bits pick the layer, 1 the sign, 53 the abscissa), which
// accepts about 98.8 % of draws; the wedges are decided against exp(-z^2/2)
// and the tail beyond r by Marsaglia's exponential rejection. The tables are
// computed once from r; their layers have equal area v = r f(r) + the tail's
// mass, to rounding.
#ifndef FEDLDP_RANDOM_NORMAL_H_
#define FEDLDP_RANDOM_NORMAL_H_

#include <span>

#include "fedldp/random/rng.h"

namespace fedldp {

// out[i] ~ N(0, 1), independent. Draws words from `rng` in blocks.
void FillStandardNormal(std::span<double> out, Rng& rng);
// One N(0, 1) deviate by the same ziggurat (one virtual call per word).
double ZigguratNormal(Rng& rng);

// N(0, 1) conditioned on Z >= lo. For lo < 0.5 by rejection from N(0, 1)
// (acceptance >= 0.30); beyond, Robert's translated-exponential rejection
// (Statistics and Computing 5, 1995) with the optimal rate
// (lo + sqrt(lo^2 + 4)) / 2, whose acceptance is above 0.7 and tends to 1.
double NormalAbove(double lo, Rng& rng);
// N(0, 1) conditioned on Z < hi: -NormalAbove(-hi) (the event Z = hi has
// probability 0).
double NormalBelow(double hi, Rng& rng);

// Phi(t) = P[N(0, 1) <= t] and its upper tail Q(t) = 1 - Phi(t), both from
// erfc, so accurate in relative terms far into either tail.
double NormalCdf(double t);
double NormalUpperTail(double t);
// phi(t), the standard normal density.
double NormalDensity(double t);

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_NORMAL_H_
