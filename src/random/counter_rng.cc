#include "fedldp/random/counter_rng.h"

#include <bit>

namespace fedldp {
namespace {

// Odd increment with enough bit transitions for Mix to diffuse well; the rule
// of SplittableRandom.mixGamma.
std::uint64_t MakeGamma(std::uint64_t z) {
  z = CounterRng::Mix(z) | 1ULL;
  if (std::popcount(z ^ (z >> 1)) < 24) z ^= 0xaaaaaaaaaaaaaaaaULL;
  return z;
}

}  // namespace

CounterRng::CounterRng(std::uint64_t seed, std::uint64_t stream)
    : seed_(seed),
      stream_(stream),
      base_(Mix(Mix(seed ^ 0x6a09e667f3bcc909ULL) + Mix(stream ^ 0xbb67ae8584caa73bULL))),
      gamma_(MakeGamma(Mix(seed + 0x3c6ef372fe94f82bULL) ^ Mix(stream + 0xa54ff53a5f1d36f1ULL))) {}

void CounterRng::Fill(std::span<std::uint64_t> out) {
  // No loop-carried dependency besides the counter: the compiler interleaves
  // the multiplies of consecutive words.
  const std::uint64_t start = counter_;
  const std::size_t n = out.size();
  for (std::size_t i = 0; i < n; ++i) out[i] = Mix(base_ + (start + 1 + i) * gamma_);
  counter_ = start + n;
}

}  // namespace fedldp
