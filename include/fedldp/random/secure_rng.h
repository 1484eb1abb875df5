// Cryptographically secure generator for deployments.
//
// A 256-bit key comes from the operating system (libsodium randombytes_buf,
// i.e. getrandom(2)); the words are the ChaCha20 keystream under that key, with
// a fresh 64-bit nonce for every block request. The kernel source is slow
// (~200 MB/s measured here) and ChaCha20 runs at ~2 GB/s, hence this split.
// The key and the buffered keystream are wiped on destruction.
// Not thread-safe: use one instance per thread or client.
#ifndef FEDLDP_RANDOM_SECURE_RNG_H_
#define FEDLDP_RANDOM_SECURE_RNG_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "fedldp/random/rng.h"

namespace fedldp {

class SecureRng final : public Rng {
 public:
  // Throws std::runtime_error if libsodium cannot be initialised.
  SecureRng();
  ~SecureRng() override;
  SecureRng(const SecureRng&) = delete;
  SecureRng& operator=(const SecureRng&) = delete;

  result_type operator()() override;
  void Fill(std::span<std::uint64_t> out) override;

 private:
  void Refill();
  void Keystream(std::uint64_t* out, std::size_t words);

  static constexpr std::size_t kBufferWords = 512;
  std::array<unsigned char, 32> key_{};
  std::uint64_t nonce_ = 0;
  std::array<std::uint64_t, kBufferWords> buffer_{};
  std::size_t next_ = kBufferWords;
};

// A deployment's generator: SecureRng, always, in what serve, client and
// shuffle run. Only a test that must replay an in-process deployment bit for
// bit passes a seed, and then gets CounterRng(*seed, stream).
std::unique_ptr<Rng> DeploymentRng(std::optional<std::uint64_t> test_seed, std::uint64_t stream);

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_SECURE_RNG_H_
