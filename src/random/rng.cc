#include "fedldp/random/rng.h"

#include <cmath>
#include <utility>

namespace fedldp {

void Rng::Fill(std::span<std::uint64_t> out) {
  for (auto& word : out) word = (*this)();
}

void SampleClients(std::span<std::size_t> clients, std::size_t m, Rng& rng) {
  const std::size_t n = clients.size();
  for (std::size_t i = 0; i < m && i < n; ++i) {
    std::swap(clients[i], clients[i + UniformIndex(rng, n - i)]);
  }
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

}  // namespace fedldp
