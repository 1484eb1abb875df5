#include "fedldp/random/discrete.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace fedldp {

Uint128 UniformIndex128(Rng& rng, Uint128 n) {
  const auto high = static_cast<std::uint64_t>(n >> 64);
  if (high == 0) return UniformIndex(rng, static_cast<std::uint64_t>(n));
  // n >= 2^64: draw bit_width(n) bits, keep them if below n.
  const std::uint64_t mask = ~std::uint64_t{0} >> std::countl_zero(high);
  while (true) {
    const Uint128 v = (static_cast<Uint128>(rng() & mask) << 64) | rng();
    if (v < n) return v;
  }
}

namespace {

#define FEDLDP_INLINE inline __attribute__((always_inline))

// Random words for one draw of the samplers below, fetched 4 at a time
// through Rng::Fill (one virtual call), and single bits for coins. Words
// left over when the draw ends are not used again.
class Words final {
 public:
  explicit Words(Rng& rng) : rng_(rng) {}
  FEDLDP_INLINE std::uint64_t operator()() {
    if (next_ == buffer_.size()) {
      rng_.Fill(buffer_);
      next_ = 0;
    }
    return buffer_[next_++];
  }
  FEDLDP_INLINE bool Coin() {
    if (bits_left_ == 0) bits_ = (*this)(), bits_left_ = 64;
    const bool bit = (bits_ & 1) != 0;
    bits_ >>= 1, --bits_left_;
    return bit;
  }

 private:
  Rng& rng_;
  std::array<std::uint64_t, 4> buffer_{};
  std::size_t next_ = 4;
  std::uint64_t bits_ = 0;
  int bits_left_ = 0;
};

// Uniform in [0, n), n >= 1: Lemire's multiply-shift with rejection, as UniformIndex.
FEDLDP_INLINE std::uint64_t Index(Words& words, std::uint64_t n) {
  Uint128 product = static_cast<Uint128>(words()) * n;
  if (static_cast<std::uint64_t>(product) < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (static_cast<std::uint64_t>(product) < threshold) {
      product = static_cast<Uint128>(words()) * n;
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

// num / den; certain outcomes draw nothing.
FEDLDP_INLINE bool Ratio(Words& words, std::uint64_t num, std::uint64_t den) {
  if (num >= den) return true;
  return num != 0 && Index(words, den) < num;
}

// exp(-num / den) for num <= den (CKS Algorithm 1): with K - 1 the number of
// Bernoulli(gamma / k) successes in a row for k = 1, 2, ..., P[K odd] = e^-gamma.
bool ExpMinusUpToOne(Words& words, std::uint64_t num, std::uint64_t den) {
  std::uint64_t k = 1;
  // den * k must fit: the count stops there (probability < 1 / 2^12!).
  const std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max() / den;
  while (k <= k_max && Ratio(words, num, den * k)) ++k;
  return k % 2 == 1;
}

// exp(-1): the first trial (1/1) always succeeds and the second is a coin.
bool ExpMinusOne(Words& words) {
  if (!words.Coin()) return false;  // K = 2
  std::uint64_t k = 3;
  while (Index(words, k) == 0) ++k;
  return k % 2 == 1;
}

bool ExpMinus(Words& words, std::uint64_t num, std::uint64_t den) {
  while (num > den) {
    if (!ExpMinusOne(words)) return false;
    num -= den;
  }
  return ExpMinusUpToOne(words, num, den);
}

#undef FEDLDP_INLINE

}  // namespace

bool BernoulliRational(Rng& rng, std::uint64_t num, std::uint64_t den) {
  Words words(rng);
  return Ratio(words, num, den);
}

bool BernoulliExpMinus(Rng& rng, std::uint64_t num, std::uint64_t den) {
  Words words(rng);
  return ExpMinus(words, num, den);
}

namespace {

// CKS Algorithm 2's steps 1-5 on `words`.
std::uint64_t Geometric(Words& words, std::uint64_t s, std::uint64_t t) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
  while (true) {
    // X = U + t V has P[X = x] proportional to exp(-x / t) on the naturals.
    const std::uint64_t u = Index(words, t);
    if (!ExpMinusUpToOne(words, u, t)) continue;
    std::uint64_t v = 0;
    while (ExpMinusOne(words)) ++v;
    // A V this large has probability below exp(-2^63 / t); start again.
    if (v > (kMax - u) / t) continue;
    return (u + t * v) / s;
  }
}

}  // namespace

std::uint64_t DiscreteGeometric(Rng& rng, std::uint64_t s, std::uint64_t t) {
  Words words(rng);
  return Geometric(words, s, t);
}

std::int64_t DiscreteLaplace(Rng& rng, std::uint64_t s, std::uint64_t t) {
  Words words(rng);
  while (true) {
    const std::uint64_t y = Geometric(words, s, t);
    const bool negative = words.Coin();
    if (negative && y == 0) continue;  // +0 and -0 would count zero twice
    return negative ? -static_cast<std::int64_t>(y) : static_cast<std::int64_t>(y);
  }
}

namespace {

// Bin(r, 1/2): the ones among r fresh random bits.
std::uint64_t HalfBinomial(Words& words, std::uint64_t r) {
  std::uint64_t ones = 0;
  for (; r >= 64; r -= 64) ones += static_cast<std::uint64_t>(std::popcount(words()));
  if (r > 0) ones += static_cast<std::uint64_t>(std::popcount(words() & ((1ull << r) - 1)));
  return ones;
}

}  // namespace

std::uint64_t BinomialDyadic(Rng& rng, std::uint64_t n, std::uint64_t numerator, int bits) {
  if (numerator >= (std::uint64_t{1} << bits)) return n;
  Words words(rng);
  std::uint64_t successes = 0, open = n;  // open: trials whose bits so far equal the numerator's
  for (int j = bits - 1; j >= 0 && open > 0; --j) {
    const std::uint64_t zeros = HalfBinomial(words, open);
    if ((numerator >> j) & 1) {
      successes += zeros;  // below the numerator from here on
      open -= zeros;
    } else {
      open = zeros;  // the ones are above it: failures
    }
  }
  return successes;  // the trials still open equal the numerator: not below it
}

Result<RationalRate> RationalRateBelow(double rate) {
  // A rate derived from eps that underflowed (eps 5e-324) or overflowed is
  // said as what the user can change.
  if (rate == 0) return Error{"epsilon is too small to implement exactly"};
  if (rate == HUGE_VAL) return Error{"epsilon is too large to implement exactly"};
  if (!(rate > 0) || !std::isfinite(rate)) return Error{"the rate must be positive and finite"};
  const int q = std::clamp(30 + static_cast<int>(std::ceil(-std::log2(rate))), 1, 52);
  const double s = std::floor(std::ldexp(rate, q) * (1 - 0x1.0p-50));
  if (s < 1) return Error{"epsilon is too small to implement exactly"};
  if (s > 0x1.0p62) return Error{"epsilon is too large to implement exactly"};
  return RationalRate{static_cast<std::uint64_t>(s), std::uint64_t{1} << q};
}

Result<IntegerExpRatio> MakeIntegerExpRatio(double epsilon, int min_bits) {
  constexpr int kMaxShift = 100;
  const long double excess = std::expm1l(static_cast<long double>(epsilon));  // e^eps - 1
  const long double floor_bits = std::ldexp(1.0L, min_bits);
  int shift = min_bits;
  while (shift < kMaxShift && std::ldexp(excess, shift) < floor_bits) ++shift;
  const long double extra = std::floor(std::ldexp(excess, shift) * (1 - 0x1.0p-60L));
  if (!(extra >= 1)) return Error{"epsilon is too small to implement exactly"};
  const Uint128 cap = Uint128{1} << kMaxShift;
  return IntegerExpRatio{shift, extra >= 0x1.0p100L ? cap : static_cast<Uint128>(extra)};
}

double IntegerExpRatio::LogRatio() const {
  return static_cast<double>(std::log1p(std::ldexp(static_cast<long double>(extra), -shift)));
}

std::int64_t RandomizedRound(double u, Rng& rng) {
  const double low = std::floor(u);
  const bool up = Uniform01(rng) < u - low;  // u - floor(u) is exact
  return static_cast<std::int64_t>(low) + (up ? 1 : 0);
}

double RoundUpProbability(double u) {
  // Uniform01 is k 2^-53 for k uniform in [0, 2^53): P[k 2^-53 < f] = ceil(f 2^53) / 2^53.
  return std::ceil((u - std::floor(u)) * 0x1.0p53) * 0x1.0p-53;
}

}  // namespace fedldp
