// The two-point mechanism of LDP-FL (Sun, Qian & Chen, IJCAI 2021, eq. 2) and,
// as its special case c = 0, r = 1, Duchi et al.'s one-dimensional mechanism
// (as used by Wang et al., ICDE 2019).
//
// Input domain [c - r, c + r]; with B = (e^eps + 1) / (e^eps - 1) the output is
//   c + r B  with probability  1/2 + (x - c) / (2 r B),
//   c - r B  otherwise.
// E[M(x)] = x and Var[M(x)] = r^2 B^2 - (x - c)^2. (LDP-FL's Lemma 2 states
// Var = r^2 B^2, which is only the upper bound; its own proof gives the
// difference.)
//
// Exactness of the implementation. The Bernoulli draw compares the high 32
// bits of one random word with an integer threshold T(x), so P[high | x] is
// exactly T(x) / 2^32. T(x) is 2^32 P(x) rounded toward 2^31, clamped to
// [T_min, 2^32 - T_min] with T_min = ceil(2^32 / (e^eps + 1)), raised if
// needed until (2^32 - T_min) <= T_min e^eps. The worst-case ratio of the
// implemented probabilities is (2^32 - T_min) / T_min <= e^eps, so the code is
// eps-LDP as it runs, not only on paper; the price is a bias of at most
// r B 2^-31. Mass(), Mean() and Variance() report the
// implemented probabilities.
#ifndef FEDLDP_MECHANISM_TWO_POINT_H_
#define FEDLDP_MECHANISM_TWO_POINT_H_

#include <algorithm>
#include <bit>
#include <cstdint>

#include "fedldp/base/hot_loop.h"
#include "fedldp/mechanism/value_mechanism.h"

namespace fedldp {

class TwoPointMechanism final : public ValueMechanism {
 public:
  // epsilon in (0, 500], center finite, radius finite and > 0, and what
  // they imply representable: the outputs c -+ r (e^eps + 1) / (e^eps - 1)
  // and the input range c -+ r finite, its ends distinct (before, eps 1e-10
  // with r = 1e300 output -inf and inf).
  static Result<TwoPointMechanism> Create(double epsilon, double center, double radius);
  // Duchi's mechanism: center 0, radius 1.
  static Result<TwoPointMechanism> CreateDuchi(double epsilon);

  std::string name() const override { return duchi_ ? "duchi" : "twopoint"; }
  double epsilon() const override { return epsilon_; }
  Interval input_domain() const override { return {center_ - radius_, center_ + radius_}; }
  Interval output_domain() const override { return {low_, high_}; }
  bool CanOutput(double y) const override { return y == low_ || y == high_; }

  // The output is selected by a mask of its bits, neither branched to (a
  // branch's direction would follow x: mostly taken at one end of the domain,
  // not at the other) nor looked up at an address that follows the draw
  // (HM below eps*, one Sample a call, then measured 0.05-0.08 ns between
  // its ends, t up to 13): the timing check caught both (issue 39).
  double Sample(double x, Rng& rng) const override {
    const std::uint64_t high =
        0 - static_cast<std::uint64_t>(static_cast<std::uint32_t>(rng() >> 32) < Threshold(x));
    return std::bit_cast<double>((std::bit_cast<std::uint64_t>(low_) & ~high) |
                                 (std::bit_cast<std::uint64_t>(high_) & high));
  }
  // Sample() for each value, with the random words drawn as PerturbDense
  // draws them (two values per word; a different stream from a loop of
  // Sample, the same law). in and out may alias exactly.
  void SampleMany(std::span<const double> in, std::span<double> out, Rng& rng) const override;
  // The dense hot path for model weights: each out[i] is float(high()) or
  // float(low()), drawn with the same threshold as Sample() from 32 random
  // bits (value 2w the high half of word w, value 2w+1 the low half). in and
  // out may alias exactly.
  void PerturbDense(std::span<const float> in, std::span<float> out, Rng& rng) const;
  // The same draws as PerturbDense (same random words, same thresholds), as
  // bits: bit i of the packed output (bit i % 64 of word i / 64) is 1 iff
  // PerturbDense would have written high(). out needs ceil(n / 64) words;
  // the unused high bits of the last word are 0.
  void PerturbBits(std::span<const float> in, std::span<std::uint64_t> out, Rng& rng) const;

  double Mean(double x) const override;
  double Variance(double x) const override;
  std::vector<double> Atoms() const override { return {low_, high_}; }
  double Mass(double y, double x) const override;
  double Cdf(double y, double x) const override;

  double center() const { return center_; }
  double radius() const { return radius_; }
  // B = (e^eps + 1) / (e^eps - 1): outputs are c +- r B.
  double bound() const { return bound_; }
  double high() const { return high_; }
  double low() const { return low_; }
  // Exact P[high | x] = Threshold(x) / 2^32.
  double ProbabilityHigh(double x) const { return Threshold(x) * 0x1.0p-32; }

  // Integer threshold T(x) described above; the output is high iff a uniform
  // 32-bit word is < T(x).
  std::uint32_t Threshold(double x) const {
    return static_cast<std::uint32_t>(ShiftedThreshold(x)) ^ 0x80000000u;
  }

 private:
  // T(x) - 2^31 as int32: branch-free min/max, so the dense loop vectorises
  // (int32 conversions exist without AVX-512, uint32 ones do not). t's clamp
  // ends are integers, so the truncating conversion stays inside them.
  std::int32_t ShiftedThreshold(double x) const {
    // Clip, NaN -> centre, without a branch: min(hi, max(lo, NaN)) = lo and
    // max(lo, min(hi, NaN)) = hi, while for any other x both are clip(x) and
    // (a + a) / 2 = a exactly.
    const double up = std::min(in_hi_, std::max(in_lo_, x));
    const double down = std::max(in_lo_, std::min(in_hi_, x));
    x = 0.5 * (up + down);
    double t = (x - center_) * slope_;
    t = std::min(std::max(t, t_min_), t_max_);
    return static_cast<std::int32_t>(t);
  }

  // OK if the outputs and the input range are finite and distinct (Create).
  Status CheckRepresentable() const;
  TwoPointMechanism(double epsilon, double center, double radius, bool duchi);
  void PerturbBlock(const float* src, const std::uint32_t* bits, float* dst, std::size_t len) const;
  void SampleBlock(const double* src, const std::uint32_t* bits, double* dst,
                   std::size_t len) const;
  void PerturbBlockBits(const float* src, const std::uint32_t* bits, std::uint8_t* dst,
                        std::size_t len) const;

  double epsilon_, center_, radius_, bound_;
  double high_, low_;
  double in_lo_, in_hi_;
  double slope_;          // 2^32 P(x) - 2^31 = slope_ (x - c)
  double t_min_, t_max_;  // clamp of 2^32 P(x) - 2^31, integers
  bool duchi_;
};

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_TWO_POINT_H_
