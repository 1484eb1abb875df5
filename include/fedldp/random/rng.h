// One generator interface for all of fedldp.
//
// Every randomized function takes an `Rng&`; nobody calls a global generator.
// Simulations pass a seeded `CounterRng` (one stream per client, see
// counter_rng.h); deployments pass a `SecureRng` (libsodium ChaCha20, see
// secure_rng.h). `Rng` satisfies std::uniform_random_bit_generator, so the
// standard distributions accept it too.
#ifndef FEDLDP_RANDOM_RNG_H_
#define FEDLDP_RANDOM_RNG_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace fedldp {

class Rng {
 public:
  using result_type = std::uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }

  virtual ~Rng() = default;
  // One uniformly distributed 64-bit word.
  virtual result_type operator()() = 0;
  // Many words at once; hot loops draw in blocks through this to avoid one
  // virtual call per value. Equivalent to calling operator() out.size() times.
  virtual void Fill(std::span<std::uint64_t> out);
};

// Uniform on [0, 1): the top 53 bits of one word, so every value is a multiple
// of 2^-53 and each has probability exactly 2^-53.
inline double Uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
// Uniform on (0, 1]: for logarithms.
inline double UniformPositive01(Rng& rng) {
  return static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;
}
// Uniform integer in [0, n), n >= 1, exactly uniform (Lemire's multiply-shift
// with rejection, ACM TOMACS 2019): no modulo bias.
std::uint64_t UniformIndex(Rng& rng, std::uint64_t n);
// True with probability p (p is clamped to [0, 1]), to 2^-53 resolution.
inline bool Bernoulli(Rng& rng, double p) { return Uniform01(rng) < p; }
// Standard normal deviate (Marsaglia's polar method).
double StandardNormal(Rng& rng);
// Moves a uniformly random m-subset of `clients` to its front, in random
// order, whatever order it holds (a partial Fisher-Yates shuffle): the
// clients of a sampled round, or the rows held out of a dataset.
// m <= clients.size().
void SampleClients(std::span<std::size_t> clients, std::size_t m, Rng& rng);

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_RNG_H_
