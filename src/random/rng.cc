#include "fedldp/random/rng.h"

#include <cmath>
#include <random>

namespace fedldp {

void Rng::Fill(std::span<std::uint64_t> out) {
  for (auto& word : out) word = (*this)();
}

std::uint64_t UniformIndex(Rng& rng, std::uint64_t n) {
  __extension__ using u128 = unsigned __int128;
  u128 product = static_cast<u128>(rng()) * n;
  auto low = static_cast<std::uint64_t>(product);
  if (low < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      product = static_cast<u128>(rng()) * n;
      low = static_cast<std::uint64_t>(product);
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

double StandardNormal(Rng& rng) {
  double u, v, s;
  do {
    u = 2.0 * Uniform01(rng) - 1.0;
    v = 2.0 * Uniform01(rng) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  return u * std::sqrt(-2.0 * std::log(s) / s);
}

std::uint64_t Binomial(Rng& rng, std::uint64_t n, double p) {
  if (n == 0 || p <= 0) return 0;
  if (p >= 1) return n;
  const bool flip = p > 0.5;
  const double q = flip ? 1 - p : p;
  std::uint64_t x = 0;
  if (n <= 32) {
    // Count the Bernoulli trials themselves: no logarithms.
    for (std::uint64_t i = 0; i < n; ++i) x += Uniform01(rng) < q;
  } else if (static_cast<double>(n) * q < 16) {
    // Inversion by the geometric waiting times between successes: expected
    // n*q + 1 draws.
    const double log_fail = std::log1p(-q);
    std::uint64_t position = 0;
    while (true) {
      const double gap = std::floor(std::log(UniformPositive01(rng)) / log_fail);
      if (gap >= static_cast<double>(n - position)) break;
      position += static_cast<std::uint64_t>(gap) + 1;
      ++x;
      if (position >= n) break;
    }
  } else {
    std::binomial_distribution<std::uint64_t> dist(n, q);
    x = dist(rng);
  }
  return flip ? n - x : x;
}

}  // namespace fedldp
