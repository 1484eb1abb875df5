// The discrete Laplace law written in integer weights, drawn with one random
// word (issue 39: exact in floating point, and within 2x of the old formula's
// speed, which CKS's exact sampler in random/discrete.h is not: 5.4x).
//
// The law. Y on the integers, P[Y = y] = Q(|y|) / (2 - Q(0)), where Q is a
// law on the naturals given by integer weights v_0 .. v_{L-1} and a tail
// weight v_T with total V' (at most V = 2^50), L = 2^13 - 2:
//   Q(c L + h) = (v_T / V')^c v_h / V'      (c >= 0, 0 <= h < L),
// what "draw h with weight v_h, or with weight v_T add L and draw again"
// yields; Y is "a magnitude from Q and a fair sign, drawing again on -0".
//
// Privacy, exactly: every adjacent ratio P[y] / P[y + 1] (and its inverse)
// is at most R = (b + c) / b, the integer ratio MakeIntegerExpRatio gives for
// the requested rate (ln R <= rate, within 2^-32 of it):
//  - within a pass, v_h = ceil(x_h + D) with x_h = x_0 R^-h and an offset
//    D = ceil(b / c) + 1 >= 1 / (R - 1), so v_h <= R v_{h+1} and
//    v_{h+1} <= v_h (both checked in integers when the table is built);
//  - across passes, Q(L - 1) / Q(L) = v_{L-1} V' / (v_T v_0) <= R and its
//    inverse <= R, both checked in integers (192-bit products);
//  - at zero, P[0] / P[1] = v_0 / v_1.
// So a shift by d changes any probability by at most R^d: a mechanism adding
// Y to levels d apart is (d ln R)-DP with no allowance. Every weight is
// positive, so every integer is possible.
//
// Precision. The offset D ~ 1 / rate moves a weight by a relative
// 1 / (rate x_h) at most, largest at the pass's end. Measured: weights within
// 2^-18.5 of x_0 R^-h and the variance within 1.1e-7 of the discrete
// Laplace's at rate 2^-10, 2^-22 and 8e-8 at 2^-11 (the Laplace mechanism's
// rates lie between), 5e-4 at 2^-19, the smallest rate taken. Why L is
// 2^13 - 2: a longer pass reaches smaller weights, where D weighs more.
// Below 2^-13 a pass covers under a scale and the draw takes 1 / (1 - tau)
// words on average (67 at 2^-19).
//
// The draw. Walker's alias method on integers: column i in [0, 2^13) keeps
// itself when a remainder in [0, V) is below its threshold, else its alias;
// the thresholds solve  threshold_i + sum_{alias_j = i} (V - threshold_j)
// = 2^13 w_i  exactly, so each outcome has probability w_i / V. The columns
// are the L magnitudes, the tail, and a redraw column whose weight V - V'
// takes up what the others leave of V. One 64-bit word gives the column (13
// bits), the remainder (50) and the sign (1). The number of words (one, bar
// redraws of probability ~2^-20 and extra passes of e^-4 to e^-8) depends
// on the words alone: the time says nothing of any input.
#ifndef FEDLDP_RANDOM_INTEGER_LAPLACE_H_
#define FEDLDP_RANDOM_INTEGER_LAPLACE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/random/discrete.h"
#include "fedldp/random/rng.h"

namespace fedldp {

class IntegerLaplace {
 public:
  static constexpr int kColumnBits = 13;
  static constexpr std::uint64_t kColumns = std::uint64_t{1} << kColumnBits;
  static constexpr std::uint64_t kPass = kColumns - 2;  // L: magnitudes per pass
  static constexpr std::uint64_t kTail = kPass;         // column: another pass
  static constexpr std::uint64_t kRedraw = kPass + 1;   // column: a fresh word
  static constexpr int kTotalBits = 50;
  static constexpr std::uint64_t kTotal = std::uint64_t{1} << kTotalBits;  // V

  // The law with adjacent ratios at most R, ln R <= rate, for rates in
  // [2^-19, 2^-10] (a pass then spans at most 8 scales, its weights stay
  // above 2^28, and every product of the checks fits in 192 bits).
  static Result<IntegerLaplace> Create(double rate);

  std::int64_t Sample(Rng& rng) const;

  // ln R: the bound on |ln P[y] / P[y + 1]|, exact of the integers up to the
  // long double logarithm.
  double LogRatio() const { return table_->ratio.LogRatio(); }
  double Mass(std::int64_t y) const;
  double Cdf(std::int64_t y) const;  // P[Y <= y]
  double Variance() const;           // E[Y^2]; the mean is 0

  // The table, for tests that check it in integers.
  struct Table {
    IntegerExpRatio ratio;
    std::vector<std::uint64_t> weight;     // v_0 .. v_{L-1}, v_T, redraw; sum V
    std::uint64_t total;                   // V' = V - redraw = sum of v_0 .. v_T
    std::vector<std::uint64_t> threshold;  // in [0, V]
    std::vector<std::uint16_t> alias;
    std::vector<std::uint64_t> suffix;  // v_h + ... + v_T, h <= L
  };
  const Table& table() const { return *table_; }

 private:
  explicit IntegerLaplace(std::shared_ptr<const Table> table) : table_(std::move(table)) {}
  std::uint64_t DrawPass(std::uint64_t word, Rng& rng) const;
  double Passes(std::uint64_t g) const;    // tau^floor(g / L)
  double PassTail(std::uint64_t g) const;  // Q[G >= g]

  std::shared_ptr<const Table> table_;
};

}  // namespace fedldp

#endif  // FEDLDP_RANDOM_INTEGER_LAPLACE_H_
