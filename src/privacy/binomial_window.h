// Internal to the privacy module: the binomial windows the clone analysis
// sums over (shuffle_numerical.cc, shuffle_pld.cc).
#ifndef FEDLDP_SRC_PRIVACY_BINOMIAL_WINDOW_H_
#define FEDLDP_SRC_PRIVACY_BINOMIAL_WINDOW_H_

#include <cstdint>
#include <vector>

namespace fedldp::shuffle_internal {

// Bin(trials, p) on [first, first + pmf.size()), and a bound on its mass
// outside that window.
struct Window {
  std::uint64_t first = 0;
  std::vector<double> pmf;
  double outside = 0;
};

// From the mode outward, until the mass beyond each end is at most
// tolerance / 2.
void BinomialWindow(std::uint64_t trials, double p, double tolerance, Window& w);

// An estimate of the terms one sum over (C, A | C) takes, C ~ Bin(n - 1,
// rate), and the most the exact sums take on.
double Terms(std::uint64_t n, double rate);
inline constexpr double kMaxTerms = 5e7;

}  // namespace fedldp::shuffle_internal

#endif  // FEDLDP_SRC_PRIVACY_BINOMIAL_WINDOW_H_
