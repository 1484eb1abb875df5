// The digit-by-digit machinery of the exact normal sampler (exact_normal.h),
// shared by the samplers built on it: the rounded Gaussian and the rounded
// PrivUnit (exact_privunit.h). Internal to the random module.
#ifndef FEDLDP_SRC_RANDOM_EXACT_SAMPLING_H_
#define FEDLDP_SRC_RANDOM_EXACT_SAMPLING_H_

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>

#include "fedldp/random/rng.h"
#include "normal_boxes.h"

namespace fedldp::exact_sampling {

constexpr int kDigits = 8;  // U's precision cap: 8 digits of 32 bits, 256 bits
__extension__ using Int128 = __int128;

// 32-bit digits from the generator's words (high half first), drawn in
// blocks of `block` words through Rng::Fill: the words are the generator's
// stream in order, so draws are reproducible from a seed. In memory
// (little-endian) a word's high half is the 32-bit unit after its low one,
// so digit k is unit k ^ 1: a digit is one load, and an aligned pair is the
// word itself.
class Digits {
 public:
  Digits(Rng& rng, std::size_t block) : rng_(rng), block_(block) {}
  std::uint32_t Next() {
    if (next_ == size_) [[unlikely]]
      Refill();
    std::uint32_t digit;
    std::memcpy(&digit, Bytes() + 4 * (next_++ ^ 1), 4);
    return digit;
  }
  // Two digits as one word, the first in the high half: the same bits as
  // (Next() << 32) | Next().
  std::uint64_t NextPair() {
    if ((next_ & 1) == 0 && next_ < size_) {
      next_ += 2;
      return words_[next_ / 2 - 1];
    }
    const std::uint64_t high = Next();
    return (high << 32) | Next();
  }

 private:
  static_assert(std::endian::native == std::endian::little);
  const unsigned char* Bytes() const {
    return reinterpret_cast<const unsigned char*>(words_.data());
  }
  [[gnu::noinline, gnu::cold]] void Refill() {  // off the hot loop's registers
    rng_.Fill(std::span(words_.data(), block_));
    size_ = 2 * block_;
    next_ = 0;
  }
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
  // The first two digits as one word (high first), read as Digit(0) and
  // Digit(1) would read them.
  std::uint64_t FirstWord(Digits& bits) {
    if (n == 0) {
      const std::uint64_t w = bits.NextPair();
      d[0] = static_cast<std::uint32_t>(w >> 32), d[1] = static_cast<std::uint32_t>(w), n = 2;
      return w;
    }
    return (std::uint64_t{Digit(0, bits)} << 32) | Digit(1, bits);
  }
};

// a < b, reading digits as needed; equal in all kDigits digits: a fair coin.
inline bool Less(Partial& a, Partial& b, Digits& bits) {
  for (int i = 0; i < kDigits; ++i) {
    const std::uint32_t x = a.Digit(i, bits), y = b.Digit(i, bits);
    if (x != y) return x < y;
  }
  return (bits.Next() & 1) != 0;
}

// Whether U < F_j (normal_boxes.h), U's digits in `u`, read as needed: by
// U's first word against the bounds' first words, else by 256 bits against
// the bounds; a U inside F_j's interval (probability below 2^-230) counts as
// below.
inline bool BelowCumulative(Partial& u, int j, Digits& bits, const normal_boxes::Table& t) {
  const std::uint64_t first = u.FirstWord(bits);
  if (first < t.top_lo[j]) return true;
  if (first > t.top_hi[j]) return false;
  normal_boxes::Fixed prefix{};  // U in [prefix, prefix + 2^-256)
  for (int i = 0; i < kDigits; ++i) {
    prefix[3 - i / 2] |= std::uint64_t{u.Digit(i, bits)} << (i % 2 == 0 ? 32 : 0);
  }
  if (normal_boxes::Less(prefix, t.lo[j])) return true;
  return normal_boxes::Less(prefix, t.hi[j]);  // at or above hi: not below
}

// PickBox's rare case, a bucket that holds a boundary: U (its first digit
// `first`) compared with the bounds from the bucket's first candidate on;
// spare from a fresh digit. Out of line, so that the hot loop's registers
// need not survive it.
[[gnu::noinline]] inline std::uint32_t PickBoxByBounds(Digits& bits, const normal_boxes::Table& t,
                                                       std::uint32_t first, int guide,
                                                       std::uint32_t& spare) {
  Partial u;
  u.d[0] = first, u.n = 1;
  int j = guide;
  while (!BelowCumulative(u, j, bits, t)) ++j;
  spare = bits.Next() >> 18;
  return static_cast<std::uint32_t>(j);
}

// The box j of a table, P[j] = w_j / W, by inverting a fresh uniform U, and
// 14 fresh bits in `spare`. U's first kGuideBits bits name a bucket; in a
// bucket inside one box's interval (kSure) they decide the box alone, and
// U's other bits, independent of them and read by nothing else, give spare.
// Else U is compared with the bounds, and spare is a fresh digit's top bits.
inline std::uint32_t PickBox(Digits& bits, const normal_boxes::Table& t, std::uint32_t& spare) {
  constexpr int kSpareBits = 32 - normal_boxes::kGuideBits;
  static_assert(kSpareBits >= 14);
  const std::uint32_t first = bits.Next();
  const std::uint16_t guide = t.guide[first >> kSpareBits];
  if ((guide & normal_boxes::kSure) != 0) [[likely]] {
    spare = first & 0x3fffu;
    return guide & ~normal_boxes::kSure;
  }
  return PickBoxByBounds(bits, t, first, guide, spare);
}

// True with probability e^(-t), t = h^2 x (x + 2j) / 2 = x (x + 2j) 2^-13
// (von Neumann, generalised as in Karney's algorithm N): the longest n with
// x > U_1 > ... > U_n and V_i < (x + 2j) 2^-13 for i <= n is even. V_i's
// test: 13 bits c of a digit (the first V's given, the others drawn), true
// below 2j, at 2j whether a fresh uniform is below x, else false. Mostly
// decided by the first c alone: t <= 0.31.
[[gnu::noinline]] inline bool BoxAcceptsByRun(Partial& x, std::uint32_t j, Digits& bits,
                                              std::uint32_t c) {
  std::array<Partial, 2> run;
  Partial* previous = &x;
  bool even = true;
  for (int next = 0;; next ^= 1) {
    if (c > 2 * j) return even;
    if (c == 2 * j) {
      Partial v;
      if (!Less(v, x, bits)) return even;
    }
    Partial& u = run[next];
    u.n = 0;
    if (!Less(u, *previous, bits)) return even;
    even = !even;
    previous = &u;
    c = bits.Next() >> 19;
  }
}

// The same, decided inline when the first V is (most draws).
inline bool BoxAccepts(Partial& x, std::uint32_t j, Digits& bits, std::uint32_t c) {
  if (c > 2 * j) [[likely]]
    return true;
  return BoxAcceptsByRun(x, j, bits, c);
}

// Z = sign (j + x) h: box j from the proposal, x uniform in it, accepted with
// probability e^(-((j + x)^2 - j^2) h^2 / 2); x's digits read so far in `x`.
// The box's spare bits give the first V's 13 bits and the sign.
inline int DrawNormal(Digits& bits, std::uint32_t& j, Partial& x,
                      const normal_boxes::Table& boxes = normal_boxes::Boxes()) {
  while (true) {
    std::uint32_t spare = 0;
    j = PickBox(bits, boxes, spare);
    x.n = 0;
    if (BoxAccepts(x, j, bits, spare >> 1)) return (spare & 1) != 0 ? -1 : 1;
  }
}

// Z from a signed table (normal_boxes::CapTable): box b, U accepted as in
// DrawNormal, Z = +(b + U) h for b below kBoxes, else -(b - kBoxes + U) h.
inline int DrawFromSignedTable(Digits& bits, const normal_boxes::Table& t, std::uint32_t& j,
                               Partial& x) {
  while (true) {
    std::uint32_t spare = 0;
    const std::uint32_t b = PickBox(bits, t, spare);
    const bool negative = b >= static_cast<std::uint32_t>(normal_boxes::kBoxes);
    j = negative ? b - normal_boxes::kBoxes : b;
    x.n = 0;
    if (BoxAccepts(x, j, bits, spare >> 1)) return negative ? -1 : 1;
  }
}

}  // namespace fedldp::exact_sampling

#endif  // FEDLDP_SRC_RANDOM_EXACT_SAMPLING_H_
