#include "fedldp/random/secure_rng.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "fedldp/random/counter_rng.h"

namespace fedldp {

static_assert(crypto_stream_chacha20_KEYBYTES == 32);
static_assert(crypto_stream_chacha20_NONCEBYTES == 8);

SecureRng::SecureRng() {
  if (sodium_init() < 0) throw std::runtime_error("libsodium could not be initialised");
  randombytes_buf(key_.data(), key_.size());
}

SecureRng::~SecureRng() {
  sodium_memzero(key_.data(), key_.size());
  sodium_memzero(buffer_.data(), sizeof buffer_);
}

void SecureRng::Keystream(std::uint64_t* out, std::size_t words) {
  unsigned char nonce[crypto_stream_chacha20_NONCEBYTES];
  std::memcpy(nonce, &nonce_, sizeof nonce);
  // A nonce is never reused under one key: 2^64 requests are out of reach.
  ++nonce_;
  crypto_stream_chacha20(reinterpret_cast<unsigned char*>(out), words * sizeof(std::uint64_t),
                         nonce, key_.data());
}

void SecureRng::Refill() {
  Keystream(buffer_.data(), kBufferWords);
  next_ = 0;
}

SecureRng::result_type SecureRng::operator()() {
  if (next_ == kBufferWords) Refill();
  const std::uint64_t word = buffer_[next_];
  buffer_[next_++] = 0;
  return word;
}

void SecureRng::Fill(std::span<std::uint64_t> out) {
  if (out.size() >= kBufferWords) {
    Keystream(out.data(), out.size());
    return;
  }
  // The buffer's next words, as operator() would give them one at a time,
  // copied and wiped in runs (a word at a time cost 10 ns a word here, more
  // than the keystream).
  for (std::size_t done = 0; done < out.size();) {
    if (next_ == kBufferWords) Refill();
    const std::size_t n = std::min(out.size() - done, kBufferWords - next_);
    std::memcpy(out.data() + done, buffer_.data() + next_, n * sizeof(std::uint64_t));
    sodium_memzero(buffer_.data() + next_, n * sizeof(std::uint64_t));
    next_ += n, done += n;
  }
}

std::unique_ptr<Rng> DeploymentRng(std::optional<std::uint64_t> test_seed, std::uint64_t stream) {
  if (test_seed) return std::make_unique<CounterRng>(*test_seed, stream);
  return std::make_unique<SecureRng>();
}

}  // namespace fedldp
