#include "fedldp/random/exact_normal.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <sstream>

#include "fedldp/random/discrete.h"

namespace fedldp {
namespace {

constexpr int kDigits = 8;  // U's precision cap: 8 digits of 32 bits, 256 bits
__extension__ using Int128 = __int128;

// 32-bit digits from the generator's words (high half first), drawn in
// blocks of `block` words through Rng::Fill: the words are the generator's
// stream in order, so draws are reproducible from a seed.
class Digits {
 public:
  Digits(Rng& rng, std::size_t block) : rng_(rng), block_(block) {}
  std::uint32_t Next() {
    if (next_ == 2 * size_) {
      rng_.Fill(std::span(words_.data(), block_));
      size_ = block_;
      next_ = 0;
    }
    const std::uint64_t w = words_[next_ / 2];
    return static_cast<std::uint32_t>((next_++ & 1) != 0 ? w : w >> 32);
  }

 private:
  Rng& rng_;
  std::array<std::uint64_t, 64> words_{};
  std::size_t block_, size_ = 0, next_ = 0;
};

// A uniform number on [0, 1) read a digit at a time, most significant first;
// the digits not read yet are uniform and independent of everything.
// Reset by n = 0 alone: digits at or past n are never read.
struct Partial {
  std::array<std::uint32_t, kDigits> d;
  int n = 0;

  std::uint32_t Digit(int i, Digits& bits) {
    while (n <= i) d[n++] = bits.Next();
    return d[i];
  }
};

// a < b, reading digits as needed; equal in all kDigits digits: a fair coin.
bool Less(Partial& a, Partial& b, Digits& bits) {
  for (int i = 0; i < kDigits; ++i) {
    const std::uint32_t x = a.Digit(i, bits), y = b.Digit(i, bits);
    if (x != y) return x < y;
  }
  return (bits.Next() & 1) != 0;
}

// Uniform on [0, m), exactly (Lemire's multiply-shift with rejection).
std::uint32_t Below(std::uint32_t m, Digits& bits) {
  const std::uint32_t threshold = (0u - m) % m;  // 2^32 mod m
  while (true) {
    const std::uint64_t p = std::uint64_t{bits.Next()} * m;
    if (static_cast<std::uint32_t>(p) >= threshold) return static_cast<std::uint32_t>(p >> 32);
  }
}

// True with probability e^(-1/2) (von Neumann): the longest run
// 1/2 > U_1 > U_2 > ... > U_n has even length.
bool BernoulliExpHalf(Digits& bits) {
  Partial p, q;
  if ((p.Digit(0, bits) >> 31) != 0) return true;  // U_1 >= 1/2: n = 0
  while (true) {
    q.n = 0;
    if (!Less(q, p, bits)) return false;
    p.n = 0;
    if (!Less(p, q, bits)) return true;
  }
}

// True with probability e^(-x (x + 2k) / (2k + 2)): the longest n with
// x > U_1 > ... > U_n and V_i < (x + 2k) / (2k + 2) for i <= n is even. V_i's
// test: an exact integer c uniform in [0, 2k + 2), true below 2k, false at
// 2k + 1, and at 2k whether a fresh uniform is below x.
bool TrialAccepts(Partial& x, std::uint32_t k, Digits& bits) {
  std::array<Partial, 2> run;
  Partial* previous = &x;
  bool even = true;
  for (int next = 0;; next ^= 1) {
    Partial& u = run[next];
    u.n = 0;
    if (!Less(u, *previous, bits)) return even;
    const std::uint32_t c = Below(2 * k + 2, bits);
    if (c == 2 * k + 1) return even;
    if (c == 2 * k) {
      Partial v;
      if (!Less(v, x, bits)) return even;
    }
    even = !even;
    previous = &u;
  }
}

// Karney's algorithm N: Z = sign (k + u), u's digits read so far in `u`.
int DrawNormal(Digits& bits, std::uint32_t& k, Partial& u) {
  while (true) {
    k = 0;
    while (BernoulliExpHalf(bits)) ++k;
    if (k > 64) continue;  // probability < e^-2000: part of the allowance
    bool ok = true;
    for (std::uint32_t i = 0; ok && i < k * (k - 1); ++i) ok = BernoulliExpHalf(bits);
    if (!ok) continue;
    u.n = 0;
    for (std::uint32_t i = 0; ok && i <= k; ++i) ok = TrialAccepts(u, k, bits);
    if (ok) return (bits.Next() & 1) != 0 ? -1 : 1;
  }
}

// 384-bit two's complement integers, least significant limb first: values
// in units of 2^-298 grid cells.
using Wide = std::array<std::uint64_t, 6>;
constexpr int kUnitBits = 298;  // 4 limbs and 42 bits

Wide Add(const Wide& a, const Wide& b) {
  Wide r{};
  Uint128 carry = 0;
  for (int i = 0; i < 6; ++i) {
    carry += static_cast<Uint128>(a[i]) + b[i];
    r[i] = static_cast<std::uint64_t>(carry);
    carry >>= 64;
  }
  return r;
}

Wide Negate(const Wide& a) {
  Wide r{};
  for (int i = 0; i < 6; ++i) r[i] = ~a[i];
  return Add(r, Wide{1, 0, 0, 0, 0, 0});
}

// v 2^shift, v signed, |v| 2^shift < 2^383; in two's complement without a
// branch on v's sign (the sign of an input coordinate must not show in time).
Wide Shifted(Int128 v, int shift) {
  const auto m = static_cast<Uint128>(v);
  const auto fill = static_cast<std::uint64_t>(v >> 127);  // all ones iff v < 0
  const auto lo = static_cast<std::uint64_t>(m), hi = static_cast<std::uint64_t>(m >> 64);
  const int limb = shift / 64, bits = shift % 64;
  const std::array<std::uint64_t, 3> parts{lo << bits,
                                           bits == 0 ? hi : (hi << bits) | (lo >> (64 - bits)),
                                           bits == 0 ? fill : (hi >> (64 - bits)) | (fill << bits)};
  Wide r{};
  for (int i = limb; i < 6; ++i) r[i] = i - limb < 3 ? parts[i - limb] : fill;
  return r;
}

// round(x 2^(64 - exponent)) as a 128-bit integer, |x| <= 2^52 g, with no
// branch on x: an |x| below g 2^-70, which rounds to 0, is zeroed by its
// exponent field first, so no subnormal or tiny product (slow paths of the
// FPU) is computed; |v| < 2^52 is rounded by adding and removing 2^52; the
// integer is read from v's bits and the sign applied by masks. (Measured:
// libgcc's conversion made x = 0 2 ns faster than x = C.)
Int128 Cells(double x, int exponent) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const auto field = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint64_t keep = 0 - static_cast<std::uint64_t>(field >= exponent + 1023 - 70);
  const double v = std::bit_cast<double>(bits & keep & ~(std::uint64_t{1} << 63)) *
                   std::bit_cast<double>(static_cast<std::uint64_t>(1023 + 64 - exponent) << 52);
  const std::uint64_t small = 0 - static_cast<std::uint64_t>(v < 0x1p52);
  const auto rounded = std::bit_cast<std::uint64_t>((v + 0x1p52) - 0x1p52);
  const std::uint64_t r = (rounded & small) | (std::bit_cast<std::uint64_t>(v) & ~small);
  const auto e = static_cast<int>(r >> 52);
  const std::uint64_t m =
      (r & ((std::uint64_t{1} << 52) - 1)) | (static_cast<std::uint64_t>(e != 0) << 52);
  const int shift = std::clamp(1075 + 64 - e, 0, 127);
  const Uint128 magnitude = (static_cast<Uint128>(m) << 64) >> shift;
  const Uint128 negative = 0 - static_cast<Uint128>(bits >> 63);
  return static_cast<Int128>((magnitude ^ negative) - negative);
}

// floor(v 2^-298).
std::int64_t FloorCells(const Wide& v) {
  const Int128 top = static_cast<Int128>((static_cast<Uint128>(v[5]) << 64) | v[4]);
  return static_cast<std::int64_t>(top >> (kUnitBits - 256));
}

// S (k 2^256 + the first n digits of u as a 256-bit fraction), in units.
Wide Scaled(std::uint64_t s, std::uint32_t k, const Partial& u, int n) {
  std::array<std::uint64_t, 5> y{0, 0, 0, 0, k};
  for (int i = 0; i < n; ++i) y[3 - i / 2] |= std::uint64_t{u.d[i]} << (i % 2 == 0 ? 32 : 0);
  Wide r{};
  Uint128 carry = 0;
  for (int i = 0; i < 5; ++i) {
    carry += static_cast<Uint128>(y[i]) * s;
    r[i] = static_cast<std::uint64_t>(carry);
    carry >>= 64;
  }
  r[5] = static_cast<std::uint64_t>(carry);
  return r;
}

// The grid index of x' + sigma Z (sigma = s 2^(exponent - 42)), x' = x
// rounded to a multiple of g 2^-64: the floor of x' / g + sigma Z / g + 1/2,
// bracketed from U's digits until both ends agree (or all kDigits are read).
std::int64_t RoundedIndex(double x, std::uint64_t s, int exponent, Digits& bits) {
  const double limit = std::ldexp(RoundedGaussian::kMaxCells, exponent);
  x = std::isnan(x) ? 0.0 : std::fmax(-limit, std::fmin(limit, x));
  const Wide base = Add(Shifted(Cells(x, exponent), kUnitBits - 64), Shifted(1, kUnitBits - 1));
  const Wide minus_one = Negate(Wide{1, 0, 0, 0, 0, 0});
  std::uint32_t k = 0;
  Partial u;
  const int sign = DrawNormal(bits, k, u);
  for (int n = u.n;; u.Digit(n++, bits)) {
    const Wide w = Scaled(s, k, u, n);
    const Wide width = Shifted(s, 32 * (kDigits - n));
    const Wide low_end = sign > 0 ? Add(base, w) : Add(base, Negate(Add(w, width)));
    const Wide high_end =
        sign > 0 ? Add(Add(base, Add(w, width)), minus_one) : Add(base, Negate(w));
    const std::int64_t low = FloorCells(low_end);
    if (low == FloorCells(high_end) || n == kDigits) return low;
  }
}

}  // namespace

RoundedGaussian::RoundedGaussian(double sigma, std::uint64_t significand, int exponent)
    : sigma_(sigma),
      significand_(significand),
      exponent_(exponent),
      granularity_(std::ldexp(1.0, exponent)) {}

Result<RoundedGaussian> RoundedGaussian::Create(double sigma) {
  if (!(sigma > 0) || !std::isfinite(sigma)) {
    std::ostringstream e;
    e << "the Gaussian's sigma must be positive and finite, got " << sigma;
    return Error{e.str()};
  }
  int e = 0;
  const double f = std::frexp(sigma, &e);  // sigma = f 2^e, f in [1/2, 1)
  if (e - 11 < -900 || e - 11 > 900) {
    return Error{"the Gaussian's sigma must be within 2^-889 and 2^900"};
  }
  const auto s = static_cast<std::uint64_t>(std::ldexp(f, 53));
  return RoundedGaussian(sigma, s, e - 11);
}

std::int64_t RoundedGaussian::SampleIndex(double x, Rng& rng) const {
  Digits bits(rng, 1);
  return RoundedIndex(x, significand_, exponent_, bits);
}

double RoundedGaussian::Sample(double x, Rng& rng) const {
  return static_cast<double>(SampleIndex(x, rng)) * granularity_;
}

void RoundedGaussian::SampleMany(std::span<double> values, Rng& rng) const {
  Digits bits(rng, 64);
  for (double& v : values) {
    v = static_cast<double>(RoundedIndex(v, significand_, exponent_, bits)) * granularity_;
  }
}

ExactNormalDraw DrawExactNormal(Rng& rng) {
  Digits bits(rng, 1);
  std::uint32_t k = 0;
  Partial u;
  const int sign = DrawNormal(bits, k, u);
  const std::uint64_t first = (std::uint64_t{u.Digit(0, bits)} << 32) | u.Digit(1, bits);
  return {sign, k, first};
}

}  // namespace fedldp
