// The box table of the exact normal sampler (exact_normal.cc), computed once
// in integer arithmetic with rigorous bounds.
//
// The half-normal on [0, 20) is cut into kBoxes boxes of width h = 2^-6; box
// j has weight w_j = e^(-(j h)^2 / 2) = a^(j^2), a = e^(-2^-13), its density's
// maximum. F_j = (w_0 + ... + w_j) / W, W the sum of all, is the cumulative
// law a uniform U is inverted against. Each F_j is kept as an interval
// [lo, hi] of 64.256-bit fixed-point numbers that contains it:
//  - a by its Taylor series: 25 terms, each computed by flooring shifts and
//    divisions (each term within 2n units of 2^-256 below the true one), the
//    alternating remainder below 2^-400; a within 2^11 units of the sum;
//  - the powers a^(j^2) by products rounded down (lo) and up (hi);
//  - the sums, then the quotients by bit-by-bit long division, rounded down
//    (lo: C_lo / W_hi) and up (hi: C_hi / W_lo, plus one unit).
// Measured width of every interval: at most 2^-231.0.
#ifndef FEDLDP_SRC_RANDOM_NORMAL_BOXES_H_
#define FEDLDP_SRC_RANDOM_NORMAL_BOXES_H_

#include <array>
#include <cstdint>
#include <vector>

namespace fedldp::normal_boxes {

inline constexpr int kBoxBits = 6;             // h = 2^-6
inline constexpr int kBoxes = 20 << kBoxBits;  // z < 20
inline constexpr int kGuideBits = 14;          // buckets of U's top bits
// A guide entry's flag: the bucket lies inside its box's interval
// [F_(j-1), F_j), so U's top kGuideBits bits alone decide the box.
inline constexpr std::uint16_t kSure = 0x8000;

// Unsigned fixed point, least significant limb first: limbs 0-3 the fraction
// (units of 2^-256), limb 4 the integer part.
using Fixed = std::array<std::uint64_t, 5>;

struct Table {
  std::vector<Fixed> lo, hi;          // F_j's bounds
  std::vector<std::uint64_t> top_lo;  // U's first word below it: U < F_j surely
  std::vector<std::uint64_t> top_hi;  // U's first word above it: U >= F_j surely
  // Per bucket of U's top kGuideBits bits, the first candidate box, with
  // kSure when it is the only one.
  std::vector<std::uint16_t> guide;
};

// a + b modulo 2^(64 N), limbs least significant first (the fixed-point
// numbers here, exact_normal.cc's 384-bit integers).
template <std::size_t N>
std::array<std::uint64_t, N> AddLimbs(const std::array<std::uint64_t, N>& a,
                                      const std::array<std::uint64_t, N>& b) {
  __extension__ using Carry = unsigned __int128;
  std::array<std::uint64_t, N> r{};
  Carry carry = 0;
  for (std::size_t i = 0; i < N; ++i) {
    carry += static_cast<Carry>(a[i]) + b[i];
    r[i] = static_cast<std::uint64_t>(carry);
    carry >>= 64;
  }
  return r;
}

// Computed on first use (about a millisecond), then shared.
const Table& Boxes();
// a < b.
bool Less(const Fixed& a, const Fixed& b);

// e^(-t') in [lo, hi] for t' = t rounded down to a multiple of 2^-192 (0 <= t
// <= 1000): the Taylor sum at t' 2^-k < 2^-13, squared k times.
std::array<Fixed, 2> ExpMinus(double t);

// The signed table of a normal reweighted by a cap (exact_privunit.h): box b
// < kBoxes holds z = +(b + U) h, box b >= kBoxes holds z = -(b - kBoxes + U) h;
// boxes inside the cap {z >= cap_box h} weigh w_j, the others w_j e^(-t'),
// t' = epsilon rounded down as in ExpMinus. |cap_box| < kBoxes.
Table CapTable(int cap_box, double epsilon);

// The sum (widest = false) or the largest of a table's interval widths: a
// uniform lands in one with probability at most the sum.
double TotalWidth(const Table& t, bool widest);

// For tests: e^(-2^-13)'s bounds and the widest F_j interval, as doubles.
double BoxBaseLow();
double BoxBaseHigh();
double WidestInterval();

}  // namespace fedldp::normal_boxes

#endif  // FEDLDP_SRC_RANDOM_NORMAL_BOXES_H_
