#include "fedldp/random/exact_privunit.h"

#include <gmpxx.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "exact_sampling.h"
#include "fedldp/base/hot_loop.h"
#include "fedldp/random/discrete.h"
#include "normal_boxes.h"

namespace fedldp {
namespace {

using namespace exact_sampling;  // the digit machinery this file builds on

constexpr int kFastDigits = 2;  // Z and A to 2^-70 on the fast path

// An exact normal after the fast path: Z = sign (box + U) 2^-6, U's first
// two digits in `word`.
struct Draw {
  std::uint64_t word;
  std::uint32_t box;
  int sign;
};

Draw Finish(int sign, std::uint32_t box, Partial& u, Digits& bits) {
  return {u.FirstWord(bits), box, sign};
}

// The draws of a report, packed while the fast path runs: U's two digits as
// the bits of out[i] (overwritten once every cell is known), box and sign in
// 16 bits, the cell in 32: 14 bytes a coordinate with out, not 24 (at d =
// 2^24, 235 MB, not 400).
struct Packed {
  std::span<double> words;
  std::vector<std::uint16_t>& meta;
  std::vector<std::int32_t>& cells;

  void Put(std::size_t i, const Draw& z) {
    words[i] = std::bit_cast<double>(z.word);
    meta[i] = static_cast<std::uint16_t>(z.box | (static_cast<std::uint32_t>(z.sign < 0) << 15));
  }
  Draw At(std::size_t i) const {
    const int negative = meta[i] >> 15;
    return {std::bit_cast<std::uint64_t>(words[i]), meta[i] & 0x7fffu, 1 - 2 * negative};
  }
};

// The integer direction: m_i = sign round(v_i 2^(52 - E)), 2^E the binade
// above max |v_i| (two factors, so that neither overflows), non-finite
// entries read as 0; sign e_1 2^52 for v = 0. Without a branch on v.
struct Direction {
  double f1 = 0, f2 = 0;
  std::int64_t sign = 1, zero = 0;

  std::int64_t operator()(std::span<const double> v, std::size_t i) const {
    return sign * (static_cast<std::int64_t>(Rounded(v[i])) + (i == 0 ? zero : 0));
  }
  // m_i / sign for i > 0, as a double (exact: an integer below 2^53).
  double Rounded(double v) const { return RoundToInteger(FiniteOrZero(v) * f1 * f2); }

  // v, or +0 when v is not finite (every exponent bit set), by a mask.
  static double FiniteOrZero(double v) {
    constexpr std::uint64_t kExponent = std::uint64_t{0x7ff} << 52;
    const auto bits = std::bit_cast<std::uint64_t>(v);
    const std::uint64_t finite = 0 - static_cast<std::uint64_t>((bits & kExponent) != kExponent);
    return std::bit_cast<double>(bits & finite);
  }

  // llrint(t) for |t| <= 2^52, inline and without a branch: |t| + 2^52 lies
  // in [2^52, 2^53], where doubles are the integers, so the sum rounds |t| to
  // the nearest integer (ties to even, as llrint) and the difference is exact.
  static double RoundToInteger(double t) {
    return std::copysign((std::fabs(t) + 0x1p52) - 0x1p52, t);
  }
};

// The exponent field of a double.
std::int64_t Field(double v) {
  return static_cast<std::int64_t>((std::bit_cast<std::uint64_t>(v) >> 52) & 0x7ff);
}

// 2^k for k in [-1022, 1023], from its bits.
double PowerOfTwo(std::int64_t k) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
}

// max |x_i| over the finite entries (0 if none), as the largest bit pattern
// of |x_i| (non-negative doubles order as their bits, below 2^63: signed
// 64-bit compares, which AVX2 has), non-finite ones masked to 0: integers,
// so that it vectorises.
FEDLDP_HOT_LOOP
double MaxAbs(std::span<const double> x) {
  constexpr std::int64_t kExponent = std::int64_t{0x7ff} << 52;
  std::int64_t largest = 0;
  for (const double v : x) {
    const std::int64_t bits =
        std::bit_cast<std::int64_t>(v) & std::numeric_limits<std::int64_t>::max();
    const std::int64_t finite = bits < kExponent ? bits : 0;
    largest = finite > largest ? finite : largest;
  }
  return std::bit_cast<double>(largest);
}

// sum (x_i s0 s1)^2 over the finite x_i, in kLanes sums of every kLanes-th
// term added in a fixed order: no branch on x, the same double at any
// vector width.
FEDLDP_HOT_LOOP
double ScaledSquaredNorm(const double* __restrict x, std::size_t n, double s0, double s1) {
  constexpr std::size_t kLanes = 8;
  std::array<double, kLanes> lanes{};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) {
      const double y = Direction::FiniteOrZero(x[i + j]) * s0 * s1;
      lanes[j] += y * y;
    }
  }
  for (; i < n; ++i) {
    const double y = Direction::FiniteOrZero(x[i]) * s0 * s1;
    lanes[i % kLanes] += y * y;
  }
  double sum = 0;
  for (const double lane : lanes) sum += lane;
  return sum;
}

// UnitScaling's two factors for a given max |x_i|.
std::array<double, 2> ScaleOfMax(double maxabs) {
  // frexp's e (maxabs = f 2^e, f in [1/2, 1)) from the exponent field, of
  // maxabs 2^64 for a subnormal; 0 for maxabs = 0; selected by masks.
  const std::int64_t normal = Field(maxabs) - 1022, scaled = Field(maxabs * 0x1p64) - 1086;
  const std::int64_t is_normal = 0 - static_cast<std::int64_t>(maxabs >= 0x1p-1022);
  const std::int64_t nonzero = 0 - static_cast<std::int64_t>(maxabs > 0);
  const std::int64_t e = ((normal & is_normal) | (scaled & ~is_normal)) & nonzero;
  const std::int64_t half = (-e) / 2;
  return {PowerOfTwo(half), PowerOfTwo(-e - half)};
}

// One pass gave the scale and v = 0: max |v_i| p in [1/2, 1), so m in [2^51, 2^52].
Direction MakeDirection(const UnitScaling& scaling, int sign) {
  Direction dir;
  dir.sign = 1 - 2 * static_cast<std::int64_t>(sign < 0);  // no branch on a sign
  dir.f1 = scaling.factors[0] * 0x1p26, dir.f2 = scaling.factors[1] * 0x1p26;
  dir.zero = static_cast<std::int64_t>(scaling.max_abs == 0) << 52;
  return dir;
}

std::uint64_t Abs(std::int64_t m) {
  const auto mask = static_cast<std::uint64_t>(m >> 63);
  return (static_cast<std::uint64_t>(m) ^ mask) - mask;
}

// a where mask is all ones, b where it is 0.
Int128 Select(Int128 mask, Int128 a, Int128 b) { return (a & mask) | (b & ~mask); }

// S2 = sum m_i^2 (192 bits), Dn = sum s_i N_i m_i (192-bit two's complement,
// N_i = box 2^64 + word), and the sums of |m_i| where s_i m_i is positive
// (plus) or negative (minus): the fractional parts of the Z_i move <Z, m>
// 2^70 within [Dn - minus, Dn + plus].
struct Sums {
  Uint128 s2_lo = 0, dn_lo = 0, plus = 0, minus = 0;
  std::uint64_t s2_hi = 0;
  std::int64_t dn_hi = 0;
};

// The sums of the directions alone: S2 and sum |m_i| (plus = that - minus).
// Two small accumulators, not one Sums, so that the compiler keeps each in
// registers through its loop (a Sums lived on the stack: adc on memory).
struct DirectionSums {
  Uint128 s2_lo = 0, total = 0;
  std::uint64_t s2_hi = 0;

  void Add(std::int64_t m) {
    const std::uint64_t am = Abs(m);
    const Uint128 sq = static_cast<Uint128>(am) * am;
    s2_lo += sq;
    s2_hi += s2_lo < sq ? 1 : 0;
    total += am;
  }
};

// The sums of the draws: Dn and minus. s_i m_i is a signed 64-bit integer
// (|m_i| <= 2^52), so the term s_i N_i m_i is the 128-bit product of word
// and s_i m_i (the unsigned product, less word 2^64 when s_i m_i < 0) plus
// box s_i m_i 2^64, below 2^127 in size; it is added sign-extended. No
// branch.
struct DrawSums {
  Uint128 dn_lo = 0, minus = 0;
  std::int64_t dn_hi = 0;

  void Add(std::int64_t m, const Draw& z) {
    const std::int64_t sm = m * z.sign;
    const auto negative = static_cast<std::uint64_t>(sm >> 63);  // all ones iff s_i m_i < 0
    const Uint128 product = static_cast<Uint128>(z.word) * static_cast<std::uint64_t>(sm);
    const std::uint64_t high = static_cast<std::uint64_t>(product >> 64) - (z.word & negative) +
                               static_cast<std::uint64_t>(std::int64_t{z.box} * sm);
    const Uint128 term = (static_cast<Uint128>(high) << 64) | static_cast<std::uint64_t>(product);
    dn_lo += term;
    dn_hi +=
        static_cast<std::int64_t>(dn_lo < term ? 1 : 0) + (static_cast<std::int64_t>(high) >> 63);
    minus += Abs(m) & negative;
  }
  void Merge(const DrawSums& o) {
    const Uint128 old = dn_lo;
    dn_lo += o.dn_lo;
    dn_hi += o.dn_hi + static_cast<std::int64_t>(dn_lo < old ? 1 : 0);
    minus += o.minus;
  }
};

mpz_class ToMpz(Uint128 v) {
  mpz_class r = static_cast<unsigned long>(v >> 64);
  r <<= 64;
  r += static_cast<unsigned long>(v);
  return r;
}

mpz_class ToMpz(std::int64_t hi, Uint128 lo) {
  mpz_class r = static_cast<long>(hi);
  r <<= 128;
  return r + ToMpz(lo);
}

// The scalars a report shares, known to n digits: S2, Dn, and the bracket
// [lo, hi] of (A ||m|| - <Z, m>) 2^(P + t), P = 6 + 32 n, t = P + 64.
struct Shared {
  mpz_class s2, num_lo, num_hi;
  int p = 0, t = 0;
};

// N = box 2^(32 n) + U's first n digits.
mpz_class Significand(std::uint32_t box, const Partial& u, int n) {
  mpz_class r = box;
  for (int i = 0; i < n; ++i) {
    r <<= 32;
    r += u.d[i];
  }
  return r;
}

Shared Bracket(const mpz_class& s2, const mpz_class& dn, const Sums& sums, int a_sign,
               const mpz_class& na, int n) {
  Shared r;
  r.s2 = s2, r.p = 6 + 32 * n, r.t = r.p + 64;
  mpz_class s_lo;
  const mpz_class scaled = s2 << (2 * r.t);
  mpz_sqrt(s_lo.get_mpz_t(), scaled.get_mpz_t());  // ||m|| 2^t in [s_lo, s_lo + 1]
  mpz_class as_lo = na * s_lo, as_hi = (na + 1) * (s_lo + 1);
  if (a_sign < 0) as_lo.swap(as_hi), as_lo = -as_lo, as_hi = -as_hi;
  r.num_lo = as_lo - ((dn + ToMpz(sums.plus)) << r.t);
  r.num_hi = as_hi - ((dn - ToMpz(sums.minus)) << r.t);
  return r;
}

// The fast path's R K 2^128 bracket in long double (64-bit significands,
// every operation correctly rounded: relative error at most 2^-64 each), so
// that no step's time depends on the sizes of its operands as GMP's does
// (the audit's timing check saw 3 ns a coordinate between x = 0 and |x| = C):
//   T = c 2^70 = s_A (N_A + f_A) ||m|| - Dn - F, R K 2^128 = s_r T 2^16 / S2,
// T bracketed by its centre (f_A = 1/2, F = (plus - minus) / 2) plus half
// of both ranges, and every rounding bounded by 2^-60 of the magnitudes.
static_assert(std::numeric_limits<long double>::digits >= 64);

long double ToLong(std::uint64_t hi, Uint128 lo) {
  return std::ldexp(static_cast<long double>(hi), 128) +
         std::ldexp(static_cast<long double>(static_cast<std::uint64_t>(lo >> 64)), 64) +
         static_cast<long double>(static_cast<std::uint64_t>(lo));
}

// floor (lo) or ceiling of an integral-valued |v| < 2^126, without libgcc's
// branchy conversion: split at 2^64, each half exact.
Int128 ToInt128(long double v) {
  const long double hi = std::floor(std::ldexp(v, -64));
  const long double lo = v - std::ldexp(hi, 64);  // in [0, 2^64), exact
  return static_cast<Int128>(static_cast<std::int64_t>(hi)) * (Int128{1} << 64) +
         static_cast<Int128>(static_cast<std::uint64_t>(lo));
}

std::pair<Int128, Int128> FastQ(const Sums& sums, const Draw& a, std::uint64_t s_r) {
  // |Dn| and its sign, without a branch.
  const std::uint64_t neg = 0 - static_cast<std::uint64_t>(sums.dn_hi < 0);
  const Uint128 mask = (static_cast<Uint128>(neg) << 64) | neg;
  const Uint128 flipped = sums.dn_lo ^ mask;
  const Uint128 mag_lo = flipped + (neg & 1);
  const std::uint64_t mag_hi =
      (static_cast<std::uint64_t>(sums.dn_hi) ^ neg) + ((neg & 1) & (mag_lo == 0 ? 1 : 0));
  const long double dn = ToLong(mag_hi, mag_lo) * (1 - 2 * static_cast<int>(neg & 1));
  const long double s2 = ToLong(sums.s2_hi, sums.s2_lo);
  const long double root = std::sqrt(s2);
  const long double na =
      std::ldexp(static_cast<long double>(a.box), 64) + static_cast<long double>(a.word) + 0.5L;
  const long double plus = ToLong(0, sums.plus), minus = ToLong(0, sums.minus);
  const long double as = static_cast<long double>(a.sign) * na * root;
  const long double t = as - dn - 0.5L * (plus - minus);
  const long double t_radius = 0.5L * (root + plus + minus) * (1 + 0x1p-60L) +
                               0x1p-60L * (std::fabs(as) + std::fabs(dn) + plus + minus);
  const long double scale = std::ldexp(static_cast<long double>(s_r), 16);
  const long double q = scale * t / s2;
  const long double radius = scale * t_radius / s2 * (1 + 0x1p-58L) + 0x1p-60L * std::fabs(q) + 4;
  return {ToInt128(std::floor(q - radius)), ToInt128(std::ceil(q + radius))};
}

// floor(q am 2^-64).
Int128 MulHigh(Int128 q, std::uint64_t am) {
  const auto qh = static_cast<std::int64_t>(q >> 64);
  const auto ql = static_cast<std::uint64_t>(q);
  return static_cast<Int128>(qh) * static_cast<Int128>(am) +
         static_cast<Int128>((static_cast<Uint128>(ql) * am) >> 64);
}

// The fast path's cell of one coordinate: scale w_i / G + 1/2 in units of
// 2^-64 cells, bracketed from Z_i's two digits and R K 2^128 in [q_lo, q_hi]
// (K = (A ||m|| - <Z, m>) / S2, R = scale / G = s_r 2^-42); false when the
// bracket straddles a boundary. No branch on m or on the noise.
bool FastCell(const Draw& z, std::int64_t m, std::uint64_t s_r, Int128 q_lo, Int128 q_hi,
              std::int64_t& index) {
  const Uint128 p = static_cast<Uint128>(s_r) * z.word + (static_cast<Uint128>(s_r * z.box) << 64);
  const auto zl = static_cast<Int128>(p >> 48), zh = static_cast<Int128>((p + s_r) >> 48) + 1;
  const Int128 zneg = 0 - static_cast<Int128>(z.sign < 0);
  const std::uint64_t am = Abs(m);
  const Int128 kl = MulHigh(q_lo, am), kh = MulHigh(q_hi, am) + 1;
  const Int128 mneg = 0 - static_cast<Int128>(m < 0);
  const Int128 half = Int128{1} << 63;
  const Int128 lo = half + Select(zneg, -zh, zl) + Select(mneg, -kh, kl);
  const Int128 hi = half + Select(zneg, -zl, zh) + Select(mneg, -kl, kh);
  index = static_cast<std::int64_t>(lo >> 64);
  return (lo >> 64) == (hi >> 64);
}

// The cells in doubles first (exact_privunit.h, "The cells in doubles"): y =
// (s_i R 2^-6 a_i + RK m_i) + 1/2 for a_i = box + U's first 42 bits, RK the
// double nearest the centre of FastQ's bracket, is within 2^-23.5 cells of
// scale w_i / G + 1/2; its cell is taken when y - kSlack and y + kSlack have
// one floor, else FastCell decides.
constexpr double kSlack = 0x1p-22;

struct DoublePath {
  double r6 = 0;        // R 2^-6 = s_r 2^-48, exact
  double rk = 0;        // R K
  bool usable = false;  // the bracket's half-width times 2^52 is at most 2^-31 cells
};

DoublePath MakeDoublePath(std::uint64_t s_r, Int128 q_lo, Int128 q_hi) {
  DoublePath p;
  p.r6 = std::ldexp(static_cast<double>(s_r), -48);
  const Int128 width = q_hi - q_lo;  // R K 2^128 lies in [q_lo, q_hi]
  p.usable = width >= 0 && width <= (Int128{1} << 46);
  const long double centre = static_cast<long double>(q_lo >> 64) * 0x1p64L +
                             static_cast<long double>(static_cast<std::uint64_t>(q_lo)) +
                             static_cast<long double>(width / 2);
  p.rk = static_cast<double>(std::ldexp(centre, -128));
  return p;
}

// floor(t) for |t| < 2^51, in doubles without a branch (vectorisable): the
// nearest integer, less one (by a mask: a select on doubles stops GCC's
// vectoriser) where it lies above t.
double FloorOf(double t) {
  const double nearest = Direction::RoundToInteger(t);
  const std::uint64_t above = 0 - static_cast<std::uint64_t>(nearest > t);
  return nearest - std::bit_cast<double>(above & std::bit_cast<std::uint64_t>(1.0));
}

// y's two ends, y -+ kSlack, floored: the cell when they agree. box and sign
// (+-1) of Z_i, U's first word, m_i as a double.
std::array<double, 2> CellEnds(double box, std::uint64_t word, double sign, double m,
                               const DoublePath& p) {
  // U's first 42 bits as a double, exactly: the bits of 2^52 + t, less 2^52.
  const double t = std::bit_cast<double>((word >> 22) | 0x4330000000000000ULL) - 0x1p52;
  const double a = box + t * 0x1p-42;
  const double y = (sign * (p.r6 * a) + p.rk * m) + 0.5;
  return {FloorOf(y - kSlack), FloorOf(y + kSlack)};
}

// The double path's cell of one coordinate; false when y's bracket
// straddles a cell boundary (FastCell decides it then).
bool DoubleCell(const Draw& z, std::int64_t m, const DoublePath& p, std::int64_t& index) {
  const auto [lo, hi] = CellEnds(z.box, z.word, z.sign, static_cast<double>(m), p);
  index = static_cast<std::int64_t>(lo);
  return lo == hi;
}

// The double path over coordinates [begin, end), all above 0 (m_i by
// Direction::Rounded), with no branch so that it vectorises: each cell from
// y's lower end; false when some coordinate's ends had different floors.
FEDLDP_HOT_LOOP
bool DoubleBlock(const double* __restrict v, const double* __restrict words,
                 const std::uint16_t* __restrict meta, std::int32_t* __restrict cells,
                 std::size_t n, const Direction& dir, const DoublePath& p) {
  std::int32_t straddled = 0;
  const double sign = static_cast<double>(dir.sign);
  for (std::size_t i = 0; i < n; ++i) {
    const auto [lo, hi] = CellEnds(meta[i] & 0x7fff, std::bit_cast<std::uint64_t>(words[i]),
                                   1.0 - 2.0 * (meta[i] >> 15), sign * dir.Rounded(v[i]), p);
    cells[i] = static_cast<std::int32_t>(lo);
    straddled |= static_cast<std::int32_t>(hi) - static_cast<std::int32_t>(lo);
  }
  return straddled == 0;
}

struct Scale {
  std::uint64_t s_r;  // scale = s_r 2^(e - 53)
  double granularity;
};

Scale ScaleOf(double scale) {
  int e = 0;
  const double f = std::frexp(scale, &e);
  return {static_cast<std::uint64_t>(std::ldexp(f, 53)), std::ldexp(1.0, e - 11)};
}

// What the GMP path needs of the fast one.
struct Report {
  std::span<const double> v;
  const Direction& dir;
  Packed& draws;
  std::vector<std::pair<std::size_t, Partial>>& extra;  // digits read past two
  const Sums& sums;
  Draw a;
  Partial a_digits;
  Scale scale;
};

// Decides the pending coordinates with 4, 6, then 8 digits of every Z_i and
// A (the new digits fresh words), in GMP integers: scale w_i / G + 1/2 times
// Den = 2^(42 + P + t) S2 is
//   s_r (s_i (N_i + f_i) 2^t S2 + num m_i) + 2^(41 + P + t) S2.
void DecideWide(Report& r, std::vector<std::size_t>& pending, Digits& bits) {
  const std::size_t d = r.v.size();
  std::vector<Partial> u(d);
  std::vector<Draw> draws(d);
  for (std::size_t i = 0; i < d; ++i) {
    draws[i] = r.draws.At(i);
    u[i].d[0] = static_cast<std::uint32_t>(draws[i].word >> 32);
    u[i].d[1] = static_cast<std::uint32_t>(draws[i].word), u[i].n = kFastDigits;
  }
  for (const auto& [i, partial] : r.extra) u[i] = partial;
  const mpz_class s2 = ToMpz(static_cast<std::int64_t>(r.sums.s2_hi), r.sums.s2_lo);
  for (int n = 2 * kFastDigits; !pending.empty(); n += 2) {
    mpz_class dn = 0;
    for (std::size_t i = 0; i < d; ++i) {
      u[i].Digit(n - 1, bits);
      dn += Significand(draws[i].box, u[i], n) * r.dir(r.v, i) * draws[i].sign;
    }
    r.a_digits.Digit(n - 1, bits);
    const Shared sh = Bracket(s2, dn, r.sums, r.a.sign, Significand(r.a.box, r.a_digits, n), n);
    const mpz_class den = s2 << (42 + sh.p + sh.t), half = s2 << (41 + sh.p + sh.t);
    const mpz_class zs = r.scale.s_r * (s2 << sh.t);
    std::vector<std::size_t> still;
    for (std::size_t i : pending) {
      const mpz_class nz = Significand(draws[i].box, u[i], n);
      mpz_class z_lo = nz * zs, z_hi = (nz + 1) * zs;
      if (draws[i].sign < 0) z_lo.swap(z_hi), z_lo = -z_lo, z_hi = -z_hi;
      const long m = r.dir(r.v, i);
      mpz_class k_lo = r.scale.s_r * sh.num_lo * m, k_hi = r.scale.s_r * sh.num_hi * m;
      if (m < 0) k_lo.swap(k_hi);
      mpz_class lo = half + z_lo + k_lo, hi = half + z_hi + k_hi;
      mpz_fdiv_q(lo.get_mpz_t(), lo.get_mpz_t(), den.get_mpz_t());
      mpz_fdiv_q(hi.get_mpz_t(), hi.get_mpz_t(), den.get_mpz_t());
      if (lo == hi || n == kDigits) {
        r.draws.cells[i] = static_cast<std::int32_t>(lo.get_si());
      } else {
        still.push_back(i);
      }
    }
    pending.swap(still);
  }
}

// The cap table of (cap_box, eps), built once (14 ms) and shared: tuning
// and calibration create a randomizer per grid point, fold and split with
// the same few tables (a privunitg --tune spent 11 % of its time building
// them). The 64 most recently built are kept, about 13 MB.
std::pair<std::shared_ptr<const normal_boxes::Table>, double> SharedCapTable(int cap_box,
                                                                             double epsilon) {
  using Key = std::pair<int, double>;
  struct Entry {
    std::shared_ptr<const normal_boxes::Table> table;
    double width;
    std::uint64_t built;
  };
  static std::mutex mutex;
  static std::map<Key, Entry> tables;
  static std::uint64_t clock = 0;
  const Key key{cap_box, epsilon};
  {
    const std::lock_guard lock(mutex);
    if (const auto it = tables.find(key); it != tables.end())
      return {it->second.table, it->second.width};
  }
  auto table =
      std::make_shared<const normal_boxes::Table>(normal_boxes::CapTable(cap_box, epsilon));
  const double width = normal_boxes::TotalWidth(*table, false);
  const std::lock_guard lock(mutex);
  if (tables.size() >= 64) {
    auto oldest = tables.begin();
    for (auto it = tables.begin(); it != tables.end(); ++it) {
      if (it->second.built < oldest->second.built) oldest = it;
    }
    tables.erase(oldest);
  }
  tables[key] = {table, width, ++clock};
  return {table, width};
}

}  // namespace

UnitScaling UnitScaling::Of(std::span<const double> x) {
  const double max_abs = MaxAbs(x);
  return {max_abs, ScaleOfMax(max_abs)};
}

double UnitScaling::SquaredNorm(std::span<const double> x) const {
  return ScaledSquaredNorm(x.data(), x.size(), factors[0], factors[1]);
}

Result<RoundedPrivUnit> RoundedPrivUnit::Create(double gamma, double epsilon) {
  if (!(epsilon > 0 && epsilon <= 100)) {
    std::ostringstream e;
    e << "the rounded PrivUnit's eps must be in (0, 100], got " << epsilon;
    return Error{e.str()};
  }
  const double boxes = gamma * 64;
  if (!(std::fabs(gamma) <= 19) || boxes != std::floor(boxes)) {
    std::ostringstream e;
    e << "the rounded PrivUnit's gamma must be a multiple of 2^-6 within [-19, 19], got " << gamma;
    return Error{e.str()};
  }
  auto [cap, width] = SharedCapTable(static_cast<int>(boxes), epsilon);
  return RoundedPrivUnit(gamma, std::move(cap), width);
}

double RoundedPrivUnit::DeviationPerReport(std::size_t dimension) const {
  const auto d = static_cast<double>(dimension);
  return (d + 1) * 0x1p-218 + 1.5 * cap_width_ + d * 0x1p-250;
}

double RoundedPrivUnit::Granularity(double scale) { return ScaleOf(scale).granularity; }

void RoundedPrivUnit::Sample(std::span<const double> v, int sign, double scale,
                             std::span<double> out, Rng& rng) const {
  Run(v, UnitScaling::Of(v), sign, scale, out, rng, false);
}

void RoundedPrivUnit::Sample(std::span<const double> v, const UnitScaling& scaling, int sign,
                             double scale, std::span<double> out, Rng& rng) const {
  Run(v, scaling, sign, scale, out, rng, false);
}

void RoundedPrivUnit::SampleWide(std::span<const double> v, int sign, double scale,
                                 std::span<double> out, Rng& rng) const {
  Run(v, UnitScaling::Of(v), sign, scale, out, rng, true);
}

namespace {

constexpr std::size_t kBlock = 256;  // coordinates a vectorised step takes at once

// m_i as doubles for n coordinates past the first (Direction::Rounded times
// the sign; the first holds v = 0's direction too), vectorised.
FEDLDP_HOT_LOOP
void RoundBlock(const double* __restrict v, double* __restrict m, std::size_t n,
                const Direction& dir) {
  const double sign = static_cast<double>(dir.sign);
  for (std::size_t i = 0; i < n; ++i) m[i] = sign * dir.Rounded(v[i]);
}

// out_i = cells_i G, vectorised (exact: |cells_i| < 2^31, G a power of two).
FEDLDP_HOT_LOOP
void ScaleCells(const std::int32_t* __restrict cells, double* __restrict out, std::size_t n,
                double granularity) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(cells[i]) * granularity;
}

// The sums of a block's draws, in a function of their own so that the
// accumulators stay in registers (in the draws' loop they lived on the
// stack: adc on memory).
[[gnu::noinline]] DrawSums SumDraws(const Packed& draws, std::size_t begin, const double* m,
                                    std::size_t n) {
  DrawSums block;
  for (std::size_t k = 0; k < n; ++k)
    block.Add(static_cast<std::int64_t>(m[k]), draws.At(begin + k));
  return block;
}

// Every Z_i, packed into `draws` (digits past two in `extra`), and the sums.
Sums DrawCoordinates(std::span<const double> v, const Direction& dir, Packed& draws,
                     std::vector<std::pair<std::size_t, Partial>>& extra, Digits& bits) {
  const normal_boxes::Table& boxes = normal_boxes::Boxes();
  DirectionSums directions;
  DrawSums sums;
  std::array<double, kBlock> m;
  for (std::size_t begin = 0; begin < v.size(); begin += kBlock) {
    const std::size_t n = std::min(kBlock, v.size() - begin);
    RoundBlock(&v[begin], m.data(), n, dir);
    if (begin == 0) m[0] = static_cast<double>(dir(v, 0));  // v = 0's direction
    for (std::size_t k = 0; k < n; ++k) directions.Add(static_cast<std::int64_t>(m[k]));
    for (std::size_t k = 0; k < n; ++k) {
      std::uint32_t box = 0;
      Partial u;
      const int s = DrawNormal(bits, box, u, boxes);  // before box is read
      draws.Put(begin + k, Finish(s, box, u, bits));
      if (u.n > kFastDigits) [[unlikely]]
        extra.emplace_back(begin + k, u);
    }
    sums.Merge(SumDraws(draws, begin, m.data(), n));
  }
  Sums r;
  r.s2_lo = directions.s2_lo, r.s2_hi = directions.s2_hi;
  r.dn_lo = sums.dn_lo, r.dn_hi = sums.dn_hi;
  r.minus = sums.minus, r.plus = directions.total - sums.minus;
  return r;
}

}  // namespace

void RoundedPrivUnit::Run(std::span<const double> v, const UnitScaling& scaling, int sign,
                          double scale, std::span<double> out, Rng& rng, bool wide) const {
  const std::size_t d = v.size();
  const Direction dir = MakeDirection(scaling, sign);
  Digits bits(rng, 64);
  thread_local std::vector<std::uint16_t> meta;
  thread_local std::vector<std::int32_t> cells;
  meta.resize(d), cells.resize(d);
  Packed draws{out, meta, cells};
  std::vector<std::pair<std::size_t, Partial>> extra;
  const Sums sums = DrawCoordinates(v, dir, draws, extra, bits);
  Partial a_digits;
  std::uint32_t a_box = 0;
  const int a_sign = DrawFromSignedTable(bits, *cap_, a_box, a_digits);
  const Draw a = Finish(a_sign, a_box, a_digits, bits);
  const Scale sc = ScaleOf(scale);
  // Not a structured binding: the lambda below captures the bounds, which
  // clang before 16 refuses for bindings.
  const std::pair<Int128, Int128> q = FastQ(sums, a, sc.s_r);
  const Int128 ql = q.first, qh = q.second;
  const DoublePath doubles = MakeDoublePath(sc.s_r, ql, qh);
  std::vector<std::size_t> pending;
  // One coordinate by the double path, then FastCell (pending: GMP's).
  const auto decide = [&](std::size_t i) {
    const Draw z = draws.At(i);
    const std::int64_t m = dir(v, i);
    std::int64_t index = 0;
    const bool sure = doubles.usable && !wide && DoubleCell(z, m, doubles, index);
    if (!sure && (!FastCell(z, m, sc.s_r, ql, qh, index) || wide)) pending.push_back(i);
    cells[i] = static_cast<std::int32_t>(index);
  };
  decide(0);  // m_0 holds v = 0's direction
  for (std::size_t begin = 1; begin < d; begin += kBlock) {
    const std::size_t end = std::min(d, begin + kBlock);
    if (doubles.usable && !wide &&
        DoubleBlock(&v[begin], &out[begin], &meta[begin], &cells[begin], end - begin, dir, doubles))
      continue;
    for (std::size_t i = begin; i < end; ++i) decide(i);  // a block with a straddling cell
  }
  if (!pending.empty()) {
    Report report{v, dir, draws, extra, sums, a, a_digits, sc};
    DecideWide(report, pending, bits);
  }
  ScaleCells(cells.data(), out.data(), d, sc.granularity);
}

}  // namespace fedldp
