#include "fedldp/random/exact_normal.h"

#include <array>
#include <cmath>
#include <sstream>

#include "fedldp/random/discrete.h"

namespace fedldp {
namespace {

constexpr int kWords = 4;  // U's precision cap: 256 bits
__extension__ using Int128 = __int128;

// A uniform number on [0, 1) read a 64-bit word at a time, most significant
// first; the words not read yet are uniform and independent of everything.
struct Partial {
  std::array<std::uint64_t, kWords> w{};
  int n = 0;

  std::uint64_t Word(int i, Rng& rng) {
    while (n <= i) w[n++] = rng();
    return w[i];
  }
};

// a < b, reading words as needed; equal in all kWords words: a fair coin.
bool Less(Partial& a, Partial& b, Rng& rng) {
  for (int i = 0; i < kWords; ++i) {
    const std::uint64_t x = a.Word(i, rng), y = b.Word(i, rng);
    if (x != y) return x < y;
  }
  return (rng() & 1) != 0;
}

// True with probability e^(-1/2) (von Neumann): the longest run
// 1/2 > U_1 > U_2 > ... > U_n has even length.
bool BernoulliExpHalf(Rng& rng) {
  Partial p, q;
  if ((p.Word(0, rng) >> 63) != 0) return true;  // U_1 >= 1/2: n = 0
  while (true) {
    q = Partial{};
    if (!Less(q, p, rng)) return false;
    p = Partial{};
    if (!Less(p, q, rng)) return true;
  }
}

// True with probability e^(-x (x + 2k) / (2k + 2)): the longest n with
// x > U_1 > ... > U_n and V_i < (x + 2k) / (2k + 2) for i <= n is even. V_i's
// test: an exact integer c uniform in [0, 2k + 2), true below 2k, false at
// 2k + 1, and at 2k whether a fresh uniform is below x.
bool TrialAccepts(Partial& x, std::uint32_t k, Rng& rng) {
  std::array<Partial, 2> run;
  Partial* previous = &x;
  bool even = true;
  for (int next = 0;; next ^= 1) {
    Partial& u = run[next];
    u = Partial{};
    if (!Less(u, *previous, rng)) return even;
    const std::uint64_t c = UniformIndex(rng, 2 * std::uint64_t{k} + 2);
    if (c == 2 * std::uint64_t{k} + 1) return even;
    if (c == 2 * std::uint64_t{k}) {
      Partial v;
      if (!Less(v, x, rng)) return even;
    }
    even = !even;
    previous = &u;
  }
}

// Karney's algorithm N: Z = sign (k + u), u's words read so far in `u`.
int DrawNormal(Rng& rng, std::uint32_t& k, Partial& u) {
  while (true) {
    k = 0;
    while (BernoulliExpHalf(rng)) ++k;
    if (k > 64) continue;  // probability < e^-2000: part of the allowance
    bool ok = true;
    for (std::uint32_t i = 0; ok && i < k * (k - 1); ++i) ok = BernoulliExpHalf(rng);
    if (!ok) continue;
    u = Partial{};
    for (std::uint32_t i = 0; ok && i <= k; ++i) ok = TrialAccepts(u, k, rng);
    if (ok) return (rng() & 1) != 0 ? -1 : 1;
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

// v 2^shift, v signed, |v| 2^shift < 2^383.
Wide Shifted(Int128 v, int shift) {
  const bool negative = v < 0;
  Uint128 m = negative ? -static_cast<Uint128>(v) : v;
  Wide r{};
  const int limb = shift / 64, bits = shift % 64;
  const std::uint64_t lo = static_cast<std::uint64_t>(m), hi = static_cast<std::uint64_t>(m >> 64);
  const std::array<std::uint64_t, 3> parts{lo << bits,
                                           bits == 0 ? hi : (hi << bits) | (lo >> (64 - bits)),
                                           bits == 0 ? 0 : hi >> (64 - bits)};
  for (int i = 0; i < 3 && limb + i < 6; ++i) r[limb + i] = parts[i];
  return negative ? Negate(r) : r;
}

// floor(v 2^-298).
std::int64_t FloorCells(const Wide& v) {
  const Int128 top = static_cast<Int128>((static_cast<Uint128>(v[5]) << 64) | v[4]);
  return static_cast<std::int64_t>(top >> (kUnitBits - 256));
}

// S (k 2^256 + the first n words of u as a 256-bit fraction), in units.
Wide Scaled(std::uint64_t s, std::uint32_t k, const Partial& u, int n) {
  const std::array<std::uint64_t, 5> y{n > 3 ? u.w[3] : 0, n > 2 ? u.w[2] : 0, n > 1 ? u.w[1] : 0,
                                       u.w[0], k};
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
  if (e - 11 < -1022) return Error{"the Gaussian's sigma is too small for a normal grid step"};
  const auto s = static_cast<std::uint64_t>(std::ldexp(f, 53));
  return RoundedGaussian(sigma, s, e - 11);
}

std::int64_t RoundedGaussian::SampleIndex(double x, Rng& rng) const {
  const double limit = kMaxCells * granularity_;
  x = std::isnan(x) ? 0.0 : std::fmax(-limit, std::fmin(limit, x));
  const auto cells = static_cast<Int128>(std::nearbyint(std::ldexp(x, 64 - exponent_)));
  const Wide base = Add(Shifted(cells, kUnitBits - 64), Shifted(1, kUnitBits - 1));
  std::uint32_t k = 0;
  Partial u;
  const int sign = DrawNormal(rng, k, u);
  std::int64_t low = 0;
  for (int n = u.n;; u.Word(n++, rng)) {
    const Wide w = Scaled(significand_, k, u, n);
    const Wide width = Shifted(significand_, 64 * (kWords - n));
    const Wide low_end = sign > 0 ? Add(base, w) : Add(base, Negate(Add(w, width)));
    const Wide high_end = sign > 0 ? Add(Add(base, Add(w, width)), Negate(Wide{1, 0, 0, 0, 0, 0}))
                                   : Add(base, Negate(w));
    low = FloorCells(low_end);
    if (low == FloorCells(high_end) || n == kWords) return low;
  }
}

double RoundedGaussian::Sample(double x, Rng& rng) const {
  return std::ldexp(static_cast<double>(SampleIndex(x, rng)), exponent_);
}

ExactNormalDraw DrawExactNormal(Rng& rng) {
  std::uint32_t k = 0;
  Partial u;
  const int sign = DrawNormal(rng, k, u);
  return {sign, k, u.w[0]};
}

}  // namespace fedldp
