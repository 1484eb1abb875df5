#include "fedldp/random/exact_normal.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <sstream>

#include "exact_sampling.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/discrete.h"
#include "normal_boxes.h"

namespace fedldp {
namespace {

using exact_sampling::Digits;
using exact_sampling::DrawNormal;
using exact_sampling::Int128;
using exact_sampling::kDigits;
using exact_sampling::Partial;

// 384-bit two's complement integers, least significant limb first: values
// in units of 2^-304 grid cells (sigma / g = S 2^-42, the box width 2^-6, and
// U's 256 bits).
using Wide = std::array<std::uint64_t, 6>;
constexpr int kUnitBits = 304;

Wide Add(const Wide& a, const Wide& b) { return normal_boxes::AddLimbs(a, b); }

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

// v, hidden from the optimiser, so that it cannot turn the masks below back
// into branches on the input (GCC made x = 0 a shorter path: 1.5 ns, t = -198).
std::uint64_t Opaque(std::uint64_t v) {
  asm("" : "+r"(v));
  return v;
}

// round(x 2^(64 - exponent)) as a 128-bit integer, |x| <= 2^52 g, with no
// branch on x: an |x| below g 2^-70, which rounds to 0, is zeroed by its
// exponent field first, so no subnormal or tiny product (slow paths of the
// FPU) is computed; |v| < 2^52 is rounded by adding and removing 2^52; the
// integer m 2^s is read from v's bits with 64-bit shifts of clamped counts
// selected by masks, and the sign applied by masks. (Measured: libgcc's
// conversion made x = 0 2 ns faster than x = C, and a 128-bit shift by a
// variable count 0.4 ns, t = -53.)
Int128 Cells(double x, int exponent) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const auto field = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint64_t keep = 0 - static_cast<std::uint64_t>(field >= exponent + 1023 - 70);
  const double v = std::bit_cast<double>(bits & keep & ~(std::uint64_t{1} << 63)) *
                   std::bit_cast<double>(static_cast<std::uint64_t>(1023 + 64 - exponent) << 52);
  const std::uint64_t small = 0 - static_cast<std::uint64_t>(v < 0x1p52);
  const auto rounded = std::bit_cast<std::uint64_t>((v + 0x1p52) - 0x1p52);
  const std::uint64_t r = Opaque((rounded & small) | (std::bit_cast<std::uint64_t>(v) & ~small));
  // r = m 2^(e - 1075), e - 1075 in [-52, 63] when r >= 1 (m = 0 when r =
  // 0), in 64-bit shifts whose counts and selections are arithmetic on e.
  const std::uint64_t e = Opaque(r >> 52);
  const std::uint64_t m = (r & ((std::uint64_t{1} << 52) - 1)) | (((e + 2047) >> 11) << 52);
  const std::uint64_t left = 0 - (((e + 973) >> 11) & 1);  // e >= 1075
  const std::uint64_t up = (e - 1075) & left & 63, down = (1075 - e) & ~left & 63;
  const std::uint64_t lo = ((m << up) & left) | ((m >> down) & ~left);
  const std::uint64_t hi = ((m >> 1) >> (63 - up)) & left;
  const Uint128 magnitude = (static_cast<Uint128>(hi) << 64) | lo;
  const Uint128 negative = 0 - static_cast<Uint128>(bits >> 63);
  return static_cast<Int128>((magnitude ^ negative) - negative);
}

// floor(v 2^-298).
std::int64_t FloorCells(const Wide& v) {
  const Int128 top = static_cast<Int128>((static_cast<Uint128>(v[5]) << 64) | v[4]);
  return static_cast<std::int64_t>(top >> (kUnitBits - 256));
}

// S (j 2^256 + the first n digits of u as a 256-bit fraction), in units:
// sigma Z / g for Z = (j + u) 2^-6.
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

// The index from all of U's digits: x' / g + sigma Z / g + 1/2 bracketed in
// 384-bit integers from the digits read, one more digit at a time, until both
// ends have one floor (or all kDigits are read).
std::int64_t WideIndex(Int128 cells, std::uint64_t s, int sign, std::uint32_t j, Partial& u,
                       Digits& bits) {
  const Wide base = Add(Shifted(cells, kUnitBits - 64), Shifted(1, kUnitBits - 1));
  const Wide minus_one = Negate(Wide{1, 0, 0, 0, 0, 0});
  for (int n = u.n;; u.Digit(n++, bits)) {
    const Wide w = Scaled(s, j, u, n);
    const Wide width = Shifted(s, 32 * (kDigits - n));
    const Wide low_end = sign > 0 ? Add(base, w) : Add(base, Negate(Add(w, width)));
    const Wide high_end =
        sign > 0 ? Add(Add(base, Add(w, width)), minus_one) : Add(base, Negate(w));
    const std::int64_t low = FloorCells(low_end);
    if (low == FloorCells(high_end) || n == kDigits) return low;
  }
}

// The grid index of x' + sigma Z (sigma = s 2^(exponent - 42)), x' = x
// rounded to a multiple of g 2^-64: the floor of x' / g + sigma Z / g + 1/2.
// U's first digit decides it but with probability 2^-27 (a bracket S 2^-80
// cells wide), in 128 bits: x' / g's fraction and sigma Z / g in units of
// 2^-80 cells; else WideIndex.
std::int64_t RoundedIndex(double x, std::uint64_t s, int exponent, double limit, Digits& bits) {
  x = std::isnan(x) ? 0.0 : std::min(limit, std::max(-limit, x));
  const Int128 cells = Cells(x, exponent);
  std::uint32_t j = 0;
  Partial u;
  const int sign = DrawNormal(bits, j, u);
  const Int128 base = (static_cast<Int128>(static_cast<std::uint64_t>(cells)) << 16) +
                      (Int128{1} << 79);  // fraction of x' / g, plus 1/2
  const auto w =
      static_cast<Int128>(static_cast<Uint128>(s) * ((std::uint64_t{j} << 32) | u.Digit(0, bits)));
  const auto width = static_cast<Int128>(s);
  const Int128 low = sign > 0 ? base + w : base - w - width;
  const Int128 high = sign > 0 ? base + w + width - 1 : base - w;
  if ((low >> 80) == (high >> 80)) return static_cast<std::int64_t>((cells >> 64) + (low >> 80));
  return WideIndex(cells, s, sign, j, u, bits);
}

}  // namespace

RoundedGaussian::RoundedGaussian(double sigma, std::uint64_t significand, int exponent)
    : sigma_(sigma),
      significand_(significand),
      exponent_(exponent),
      granularity_(std::ldexp(1.0, exponent)),
      limit_(std::ldexp(kMaxCells, exponent)) {}

Result<RoundedGaussian> RoundedGaussian::Create(double sigma) {
  // Said without the value when it is none (an eps of 1e-300 gave sigma
  // inf, and "got inf" told a user nothing they had typed).
  if (!(sigma > 0) || !std::isfinite(sigma)) {
    std::ostringstream e;
    e << "the Gaussian's sigma must be within 2^-889 and 2^900";
    if (std::isfinite(sigma)) e << ", got " << sigma;
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
  return RoundedIndex(x, significand_, exponent_, limit_, bits);
}

double RoundedGaussian::Sample(double x, Rng& rng) const {
  return static_cast<double>(SampleIndex(x, rng)) * granularity_;
}

void RoundedGaussian::SampleMany(std::span<double> values, Rng& rng) const {
  Digits bits(rng, 64);
  for (double& v : values) {
    v = static_cast<double>(RoundedIndex(v, significand_, exponent_, limit_, bits)) * granularity_;
  }
}

ExactNormalDraw DrawExactNormal(Rng& rng) {
  Digits bits(rng, 1);
  std::uint32_t box = 0;
  Partial u;
  const int sign = DrawNormal(bits, box, u);
  const std::uint64_t first = (std::uint64_t{u.Digit(0, bits)} << 32) | u.Digit(1, bits);
  return {sign, box, first};
}

// The box the comparisons with F's bounds give for U's first two digits, from
// the bucket's first candidate on (the path a bucket without kSure takes).
std::uint32_t ComparedBox(std::uint32_t first, std::uint32_t second) {
  const normal_boxes::Table& t = normal_boxes::Boxes();
  CounterRng unused(0);
  Digits bits(unused, 1);
  Partial u;
  u.d[0] = first, u.d[1] = second, u.n = 2;
  int j = t.guide[first >> (32 - normal_boxes::kGuideBits)] & ~normal_boxes::kSure;
  while (!exact_sampling::BelowCumulative(u, j, bits, t)) ++j;
  return static_cast<std::uint32_t>(j);
}

ExactNormalTable InspectExactNormalTable() {
  const normal_boxes::Table& t = normal_boxes::Boxes();
  constexpr int kLowBits = 32 - normal_boxes::kGuideBits;
  double sure = 0;
  int disagreements = 0;
  for (std::uint32_t b = 0; b < t.guide.size(); ++b) {
    if ((t.guide[b] & normal_boxes::kSure) == 0) continue;
    sure += std::ldexp(1.0, -normal_boxes::kGuideBits);
    const std::uint32_t box = t.guide[b] & ~normal_boxes::kSure;
    const std::uint32_t low = b << kLowBits, high = low | ((1u << kLowBits) - 1);
    disagreements += ComparedBox(low, 0) != box || ComparedBox(high, ~0u) != box;
  }
  return {normal_boxes::BoxBaseLow(), normal_boxes::BoxBaseHigh(), normal_boxes::WidestInterval(),
          sure, disagreements};
}

}  // namespace fedldp
