// Seeded, counter-based generator for simulations. NOT for deployments: its
// output is a function of a public seed, so it provides no privacy at all
// against anyone who knows the seed. Deployments use SecureRng.
//
// Word i of stream (seed, stream) is Mix(base + (i + 1) * gamma), where (base,
// gamma) are derived from (seed, stream) and Mix is the SplitMix64 finaliser
// (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014; the construction of java.util.SplittableRandom, which passes
// BigCrush). Because word i is a pure function of (seed, stream, i):
//   - each client gets its own stream, so a simulation's result does not depend
//     on how clients are spread over threads;
//   - Seek(i) jumps anywhere in O(1);
//   - the loop that fills a block has no dependency between iterations and
//     runs at several words per nanosecond.
#ifndef FEDLDP_RANDOM_COUNTER_RNG_H_
#define FEDLDP_RANDOM_COUNTER_RNG_H_

#include <cstdint>

#include "fedldp/random/rng.h"

namespace fedldp {

class CounterRng final : public Rng {
 public:
  explicit CounterRng(std::uint64_t seed, std::uint64_t stream = 0);

  result_type operator()() override { return Mix(base_ + (++counter_) * gamma_); }
  void Fill(std::span<std::uint64_t> out) override;

  // Number of words drawn so far; Seek(p) makes the next word word p.
  std::uint64_t position() const { return counter_; }
  void Seek(std::uint64_t position) { counter_ = position; }

  std::uint64_t seed() const { return seed_; }
  std::uint64_t stream() const { return stream_; }

  // SplitMix64's output function (a bijection on 64-bit words).
  static constexpr std::uint64_t Mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t seed_;
  std::uint64_t stream_;
  std::uint64_t base_;
  std::uint64_t gamma_;
  std::uint64_t counter_ = 0;
};

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_COUNTER_RNG_H_
