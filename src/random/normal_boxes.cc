#include "normal_boxes.h"

#include <algorithm>
#include <cmath>

namespace fedldp::normal_boxes {
namespace {

__extension__ using Uint128 = unsigned __int128;

Fixed Add(const Fixed& a, const Fixed& b) { return AddLimbs(a, b); }

// a - b, a >= b.
Fixed Sub(const Fixed& a, const Fixed& b) {
  Fixed r{};
  std::uint64_t borrow = 0;
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t d = a[i] - b[i] - borrow;
    borrow = (a[i] < b[i]) || (a[i] - b[i] < borrow) ? 1 : 0;
    r[i] = d;
  }
  return r;
}

constexpr Fixed kUnit{1, 0, 0, 0, 0};  // 2^-256
constexpr Fixed kOne{0, 0, 0, 0, 1};

// floor(a b), the product below 2^64.
Fixed MulFloor(const Fixed& a, const Fixed& b) {
  std::array<std::uint64_t, 10> p{};
  for (int i = 0; i < 5; ++i) {
    Uint128 carry = 0;
    for (int j = 0; j < 5; ++j) {
      carry += static_cast<Uint128>(a[i]) * b[j] + p[i + j];
      p[i + j] = static_cast<std::uint64_t>(carry);
      carry >>= 64;
    }
    p[i + 5] = static_cast<std::uint64_t>(carry);
  }
  return {p[4], p[5], p[6], p[7], p[8]};
}

// floor(a / n).
Fixed DivFloor(const Fixed& a, std::uint64_t n) {
  Fixed r{};
  Uint128 rest = 0;
  for (int i = 4; i >= 0; --i) {
    rest = (rest << 64) | a[i];
    r[i] = static_cast<std::uint64_t>(rest / n);
    rest %= n;
  }
  return r;
}

// floor(c / w) as a fixed-point number in [0, 1], c <= w, w > 0: long
// division, one quotient bit at a time.
Fixed QuotientFloor(const Fixed& c, const Fixed& w) {
  if (!Less(c, w)) return kOne;
  Fixed q{}, rest = c;  // rest < w throughout
  for (int bit = 255; bit >= 0; --bit) {
    const bool over = (rest[4] >> 63) != 0;  // 2 rest would overflow: it exceeds w
    rest = Add(rest, rest);
    if (over || !Less(rest, w)) {
      rest = Sub(rest, w);
      q[bit / 64] |= std::uint64_t{1} << (bit % 64);
    }
  }
  return q;
}

// e^(-y) in [lo, hi] for 0 <= y < 2^-12: the Taylor sum with every term
// floored, then widened by 2^11 units (the floors lose at most 2n units on
// term n, 650 in all; the remainder after 25 terms is below 2^-300).
std::array<Fixed, 2> ExpMinusSmall(const Fixed& y) {
  Fixed term = kOne, plus = kOne, minus{};
  for (std::uint64_t n = 1; n <= 25; ++n) {
    term = DivFloor(MulFloor(term, y), n);
    (n % 2 == 0 ? plus : minus) = Add(n % 2 == 0 ? plus : minus, term);
  }
  const Fixed sum = Sub(plus, minus);
  const Fixed slack{std::uint64_t{1} << 11, 0, 0, 0, 0};
  return {Less(sum, slack) ? Fixed{} : Sub(sum, slack), Add(sum, slack)};
}

// a = e^(-2^-13).
std::array<Fixed, 2> Base() { return ExpMinusSmall(Fixed{0, 0, 0, std::uint64_t{1} << 51, 0}); }

double ToDouble(const Fixed& a) {
  double v = 0;
  for (int i = 0; i < 5; ++i) v += std::ldexp(static_cast<double>(a[i]), 64 * (i - 4));
  return v;
}

// The first word of a bound as a fraction, saturated at one.
std::uint64_t TopWord(const Fixed& f) { return f[4] != 0 ? ~std::uint64_t{0} : f[3]; }

// w_j = a^(j^2) for every box, rounded down (lo) and up (hi).
std::array<std::vector<Fixed>, 2> BoxWeights() {
  const auto [a_lo, a_hi] = Base();
  const Fixed a2_lo = MulFloor(a_lo, a_lo), a2_hi = Add(MulFloor(a_hi, a_hi), kUnit);
  // w_j and b_j = a^(2j + 1), so that w_(j+1) = w_j b_j and b_(j+1) = b_j a^2.
  Fixed w_lo = kOne, w_hi = kOne, b_lo = a_lo, b_hi = a_hi;
  std::array<std::vector<Fixed>, 2> w{std::vector<Fixed>(kBoxes), std::vector<Fixed>(kBoxes)};
  for (int j = 0; j < kBoxes; ++j) {
    w[0][j] = w_lo, w[1][j] = w_hi;
    w_lo = MulFloor(w_lo, b_lo), w_hi = Add(MulFloor(w_hi, b_hi), kUnit);
    b_lo = MulFloor(b_lo, a2_lo), b_hi = Add(MulFloor(b_hi, a2_hi), kUnit);
  }
  return w;
}

// Whether bucket b, [b, b + 1) 2^-kGuideBits, lies inside box j's interval:
// F_(j-1) <= hi_(j-1) <= b 2^-kGuideBits and (b + 1) 2^-kGuideBits <= lo_j <= F_j,
// so every U in it inverts to j.
bool BucketInside(const Table& t, int j, std::size_t b) {
  const auto at = [](std::size_t k) {
    Fixed f{};
    if (k >> kGuideBits != 0) return kOne;
    f[3] = static_cast<std::uint64_t>(k) << (64 - kGuideBits);
    return f;
  };
  const bool above = j == 0 || !Less(at(b), t.hi[j - 1]);
  return above && !Less(t.lo[j], at(b + 1));
}

// The table inverting the cumulative law of weights known as [lo, hi].
Table FromWeights(const std::array<std::vector<Fixed>, 2>& w) {
  const int n = static_cast<int>(w[0].size());
  std::vector<Fixed> cum_lo(n), cum_hi(n);
  Fixed c_lo{}, c_hi{};
  for (int j = 0; j < n; ++j) {
    c_lo = Add(c_lo, w[0][j]), c_hi = Add(c_hi, w[1][j]);
    cum_lo[j] = c_lo, cum_hi[j] = c_hi;
  }
  Table t;
  t.lo.resize(n), t.hi.resize(n), t.top_lo.resize(n), t.top_hi.resize(n);
  for (int j = 0; j < n; ++j) {
    // The last box's F is 1 exactly: every U lies below it.
    t.lo[j] = j + 1 == n ? kOne : QuotientFloor(cum_lo[j], c_hi);
    t.hi[j] = j + 1 == n ? kOne
                         : std::min(Add(QuotientFloor(cum_hi[j], c_lo), kUnit), kOne,
                                    [](const Fixed& x, const Fixed& y) { return Less(x, y); });
    t.top_lo[j] = TopWord(t.lo[j]), t.top_hi[j] = TopWord(t.hi[j]);
  }
  t.guide.resize(std::size_t{1} << kGuideBits);
  int j = 0;
  for (std::size_t b = 0; b < t.guide.size(); ++b) {
    const Uint128 start = static_cast<Uint128>(b) << (64 - kGuideBits);
    while (j + 1 < n && static_cast<Uint128>(t.top_hi[j]) < start) ++j;
    t.guide[b] = static_cast<std::uint16_t>(j | (BucketInside(t, j, b) ? kSure : 0));
  }
  return t;
}

}  // namespace

bool Less(const Fixed& a, const Fixed& b) {
  for (int i = 4; i >= 0; --i) {
    if (a[i] != b[i]) return a[i] < b[i];
  }
  return false;
}

const Table& Boxes() {
  static const Table table = FromWeights(BoxWeights());
  return table;
}

double BoxBaseLow() { return ToDouble(Base()[0]); }
double BoxBaseHigh() { return ToDouble(Base()[1]); }

double WidestInterval() { return TotalWidth(Boxes(), true); }

double TotalWidth(const Table& t, bool widest) {
  double total = 0;
  for (std::size_t j = 0; j < t.lo.size(); ++j) {
    const double w = ToDouble(Sub(t.hi[j], t.lo[j]));
    total = widest ? std::max(total, w) : total + w;
  }
  return total;
}

std::array<Fixed, 2> ExpMinus(double t) {
  // t' = t rounded down to a multiple of 2^-192 (exact below), then e^(-t')
  // = (e^(-t' 2^-k))^(2^k) with t' 2^-k < 2^-13, squared with floors (lo)
  // and ceilings (hi).
  int k = 0;
  while (std::ldexp(t, -k) >= 0x1p-13) ++k;
  Fixed y{};
  double rest = std::ldexp(t, -k);  // in [0, 2^-13): fraction limbs only
  for (int i = 3; i >= 1; --i) {
    rest = std::ldexp(rest, 64);
    const double top = std::floor(rest);
    y[i] = static_cast<std::uint64_t>(top);
    rest -= top;
  }
  auto [lo, hi] = ExpMinusSmall(y);
  for (int i = 0; i < k; ++i) {
    lo = MulFloor(lo, lo);
    hi = std::min(Add(MulFloor(hi, hi), kUnit), kOne,
                  [](const Fixed& x, const Fixed& z) { return Less(x, z); });
  }
  return {lo, hi};
}

Table CapTable(int cap_box, double epsilon) {
  const auto w = BoxWeights();
  const auto [e_lo, e_hi] = ExpMinus(epsilon);
  std::array<std::vector<Fixed>, 2> signed_w{std::vector<Fixed>(2 * kBoxes),
                                             std::vector<Fixed>(2 * kBoxes)};
  for (int b = 0; b < 2 * kBoxes; ++b) {
    const int j = b % kBoxes;
    const bool cap = b < kBoxes ? j >= cap_box : j < -cap_box;
    signed_w[0][b] = cap ? w[0][j] : MulFloor(w[0][j], e_lo);
    signed_w[1][b] = cap ? w[1][j] : Add(MulFloor(w[1][j], e_hi), kUnit);
  }
  return FromWeights(signed_w);
}

}  // namespace fedldp::normal_boxes
