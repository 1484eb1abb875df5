#include "fedldp/random/counter_rng.h"

#include <bit>

#include "fedldp/base/hot_loop.h"

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

// Words first+1 .. first+n. No loop-carried dependency: consecutive words'
// multiplies interleave, and with AVX-512 (vpmullq) the loop vectorises.
FEDLDP_HOT_LOOP
static void FillWords(std::uint64_t base, std::uint64_t gamma, std::uint64_t first,
                      std::uint64_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = CounterRng::Mix(base + (first + 1 + i) * gamma);
}

void CounterRng::Fill(std::span<std::uint64_t> out) {
  FillWords(base_, gamma_, counter_, out.data(), out.size());
  counter_ += out.size();
}

}  // namespace fedldp
