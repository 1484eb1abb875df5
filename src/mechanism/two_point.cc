#include "fedldp/mechanism/two_point.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <sstream>

#include "fedldp/base/checked.h"

namespace fedldp {
namespace {

constexpr double kTwo32 = 4294967296.0;

}  // namespace

// The block loop of PerturbDense, compiled for several instruction sets and
// chosen at load time. The arithmetic is exact IEEE double (no contraction)
// and integer, so every clone returns the same bits.
FEDLDP_HOT_LOOP
void TwoPointMechanism::PerturbBlock(const float* src, const std::uint32_t* bits, float* dst,
                                     std::size_t len) const {
  const float high = static_cast<float>(high_);
  const float low = static_cast<float>(low_);
  for (std::size_t i = 0; i < len; ++i) {
    // u < T  <=>  u - 2^31 < T - 2^31, compared as int32.
    const auto shifted = static_cast<std::int32_t>(bits[i] ^ 0x80000000u);
    dst[i] = shifted < ShiftedThreshold(static_cast<double>(src[i])) ? high : low;
  }
}

FEDLDP_HOT_LOOP
void TwoPointMechanism::SampleBlock(const double* src, const std::uint32_t* bits, double* dst,
                                    std::size_t len) const {
  for (std::size_t i = 0; i < len; ++i) {
    const auto shifted = static_cast<std::int32_t>(bits[i] ^ 0x80000000u);
    dst[i] = shifted < ShiftedThreshold(src[i]) ? high_ : low_;
  }
}

FEDLDP_HOT_LOOP
void TwoPointMechanism::PerturbBlockBits(const float* src, const std::uint32_t* bits,
                                         std::uint8_t* dst, std::size_t len) const {
  for (std::size_t i = 0; i < len; ++i) {
    const auto shifted = static_cast<std::int32_t>(bits[i] ^ 0x80000000u);
    dst[i] = shifted < ShiftedThreshold(static_cast<double>(src[i])) ? 1 : 0;
  }
}

Result<TwoPointMechanism> TwoPointMechanism::Create(double epsilon, double center, double radius) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  FEDLDP_RETURN_IF_ERROR(CheckFinite(center, "center"));
  FEDLDP_RETURN_IF_ERROR(CheckPositive(radius, "radius"));
  TwoPointMechanism m(epsilon, center, radius, false);
  FEDLDP_RETURN_IF_ERROR(m.CheckRepresentable());
  return m;
}

Result<TwoPointMechanism> TwoPointMechanism::CreateDuchi(double epsilon) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  TwoPointMechanism m(epsilon, 0.0, 1.0, true);
  FEDLDP_RETURN_IF_ERROR(m.CheckRepresentable());
  return m;
}

Status TwoPointMechanism::CheckRepresentable() const {
  const auto finite = [](double v) { return std::isfinite(v); };
  const auto summable = [](double v) { return std::abs(v) <= kLargestReport; };
  if (!summable(high_) || !summable(low_) || !finite(in_lo_) || !finite(in_hi_) ||
      !finite(slope_)) {
    std::ostringstream s;
    s << name() << ": its outputs c -+ r (e^eps + 1) / (e^eps - 1) (c = " << center_
      << ", r = " << radius_ << ", eps = " << epsilon_
      << ") exceed 2^450, past which sums of reports overflow a double: raise epsilon or "
         "narrow the range";
    return Error{s.str()};
  }
  if (!(low_ < high_) || !(in_lo_ < in_hi_)) {
    std::ostringstream s;
    s << name() << ": the range [" << in_lo_ << ", " << in_hi_ << "] around c = " << center_
      << " is too narrow for a double to tell its ends apart: widen the radius";
    return Error{s.str()};
  }
  return {};
}

TwoPointMechanism::TwoPointMechanism(double epsilon, double center, double radius, bool duchi)
    : epsilon_(epsilon), center_(center), radius_(radius), duchi_(duchi) {
  const double ee = std::exp(epsilon);
  // (e^eps + 1) / (e^eps - 1) = 1 / tanh(eps / 2), accurate for small eps too.
  bound_ = 1.0 / std::tanh(epsilon / 2);
  high_ = center + radius * bound_;
  low_ = center - radius * bound_;
  in_lo_ = center - radius;
  in_hi_ = center + radius;
  // 2^32 P(x) - 2^31 = 2^31 (x - c) / (r B).
  slope_ = kTwo32 / (2 * radius * bound_);
  // The integer clamp that makes the implemented mechanism exactly eps-LDP:
  // (2^32 - T_min) / T_min <= e^eps  <=>  2^32 <= T_min (e^eps + 1).
  double t_min = std::ceil(kTwo32 / (ee + 1));
  t_min = std::max(t_min, 1.0);
  while ((kTwo32 - t_min) > static_cast<double>(static_cast<long double>(t_min) * ee)) t_min += 1;
  t_min_ = t_min - kTwo32 / 2;
  t_max_ = kTwo32 / 2 - t_min;
}

namespace {

constexpr std::size_t kBlock = 2048;  // values per block; a multiple of 64

// Calls block(start, len, draws) for consecutive blocks of n values, with
// draws[i] the 32 random bits of value start + i. Word w supplies value 2w its
// high half and value 2w+1 its low half: the same 32-bit draw Sample() makes,
// twice per word.
template <typename Block>
void ForEachBlockOfDraws(std::size_t n, Rng& rng, Block&& block) {
  std::array<std::uint64_t, kBlock / 2> words;
  std::array<std::uint32_t, kBlock> draws;
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t len = std::min(kBlock, n - start);
    rng.Fill(std::span(words.data(), (len + 1) / 2));
    for (std::size_t w = 0; w < (len + 1) / 2; ++w) {
      draws[2 * w] = static_cast<std::uint32_t>(words[w] >> 32);
      draws[2 * w + 1] = static_cast<std::uint32_t>(words[w]);
    }
    block(start, len, draws.data());
  }
}

}  // namespace

void TwoPointMechanism::PerturbDense(std::span<const float> in, std::span<float> out,
                                     Rng& rng) const {
  ForEachBlockOfDraws(in.size(), rng,
                      [&](std::size_t start, std::size_t len, const std::uint32_t* draws) {
                        PerturbBlock(in.data() + start, draws, out.data() + start, len);
                      });
}

void TwoPointMechanism::SampleMany(std::span<const double> in, std::span<double> out,
                                   Rng& rng) const {
  ForEachBlockOfDraws(in.size(), rng,
                      [&](std::size_t start, std::size_t len, const std::uint32_t* draws) {
                        SampleBlock(in.data() + start, draws, out.data() + start, len);
                      });
}

void TwoPointMechanism::PerturbBits(std::span<const float> in, std::span<std::uint64_t> out,
                                    Rng& rng) const {
  const std::size_t n = in.size();
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>((n + 63) / 64), 0);
  std::array<std::uint8_t, kBlock> high;
  ForEachBlockOfDraws(n, rng, [&](std::size_t start, std::size_t len, const std::uint32_t* draws) {
    PerturbBlockBits(in.data() + start, draws, high.data(), len);
    std::uint64_t* dst = out.data() + start / 64;  // blocks start on word boundaries
    for (std::size_t i = 0; i < len; ++i) {
      dst[i / 64] |= static_cast<std::uint64_t>(high[i]) << (i % 64);
    }
  });
}

double TwoPointMechanism::Mass(double y, double x) const {
  const double p = ProbabilityHigh(x);
  if (y == high_) return p;
  if (y == low_) return 1.0 - p;
  return 0.0;
}

double TwoPointMechanism::Mean(double x) const {
  return center_ + radius_ * bound_ * (2 * ProbabilityHigh(x) - 1);
}

double TwoPointMechanism::Variance(double x) const {
  // Var = (high - low)^2 p (1 - p) for a two-point law.
  const double p = ProbabilityHigh(x);
  const double span = 2 * radius_ * bound_;
  return span * span * p * (1 - p);
}

double TwoPointMechanism::Cdf(double y, double x) const {
  if (y < low_) return 0.0;
  if (y < high_) return 1.0 - ProbabilityHigh(x);
  return 1.0;
}

}  // namespace fedldp
