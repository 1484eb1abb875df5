#include "fedldp/mechanism/piecewise.h"

#include <algorithm>
#include <cmath>

namespace fedldp {
namespace {

constexpr std::int64_t kMinLevels = std::int64_t{1} << 12;
constexpr std::int64_t kMaxLevels = std::int64_t{1} << 20;
// c >= 2^24 keeps W = b N + c w below 2^64, one word a draw, for moderate eps.
constexpr int kRatioBits = 24;

long double AsLong(Uint128 v) { return static_cast<long double>(v); }

// (t + 1) J for the clipped input t: Sample rounds it, LevelsOf describes that.
double LevelCoordinate(double t, std::int64_t levels) {
  return (t + 1.0) * static_cast<double>(levels);
}

}  // namespace

Result<PiecewiseMechanism> PiecewiseMechanism::Create(double epsilon) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  std::int64_t levels = kMinLevels;
  while (levels < kMaxLevels && static_cast<double>(levels) < 512 * std::exp(epsilon / 2)) {
    levels *= 2;
  }
  const auto half_window =
      static_cast<std::int64_t>(std::floor(static_cast<double>(levels) * std::exp(-epsilon / 2)));
  const auto ratio = MakeIntegerExpRatio(epsilon, kRatioBits);
  if (!ratio.ok()) return Error{"pm: " + ratio.error()};
  return PiecewiseMechanism(epsilon, levels, 2 * half_window + 1, (*ratio).shift, (*ratio).extra);
}

PiecewiseMechanism::PiecewiseMechanism(double epsilon, std::int64_t levels, std::int64_t window,
                                       int shift, Uint128 extra)
    : epsilon_(epsilon),
      levels_(levels),
      window_(window),
      size_(2 * levels + window),
      shift_(shift),
      extra_(extra) {
  total_ = (static_cast<Uint128>(size_) << shift_) + extra_ * static_cast<Uint128>(window_);
  const auto step = static_cast<double>(
      AsLong(total_) / (AsLong(extra_) * static_cast<long double>(window_ * levels_)));
  const std::int64_t half = (size_ - 1) / 2;
  grid_ = {step, -half, half};
}

double PiecewiseMechanism::implemented_epsilon() const {
  return IntegerExpRatio{shift_, extra_}.LogRatio();
}

double PiecewiseMechanism::Sample(double x, Rng& rng) const {
  const std::int64_t j = RandomizedRound(LevelCoordinate(Clip(x), levels_), rng);
  const Uint128 u = UniformIndex128(rng, total_);
  // Below b N: an index of all N (weight b each); above: one of the window
  // (weight c each). Only the window's start depends on the input.
  const std::int64_t i =
      u < (static_cast<Uint128>(size_) << shift_)
          ? static_cast<std::int64_t>(u >> shift_)
          : j + static_cast<std::int64_t>(UniformIndex(rng, static_cast<std::uint64_t>(window_)));
  return grid_.Value(i + grid_.lo);
}

PiecewiseMechanism::Levels PiecewiseMechanism::LevelsOf(double x) const {
  const double u = LevelCoordinate(Clip(x), levels_);
  return {static_cast<std::int64_t>(std::floor(u)), RoundUpProbability(u)};
}

long double PiecewiseMechanism::Weight(std::int64_t i, std::int64_t j) const {
  const bool inside = i >= j && i < j + window_;
  return (std::ldexp(1.0L, shift_) + (inside ? AsLong(extra_) : 0.0L)) / AsLong(total_);
}

double PiecewiseMechanism::Mean(double x) const {
  const Levels l = LevelsOf(x);
  // E[output | j] = (c w / W) (j - J) h.
  const long double slope =
      grid_.step * AsLong(extra_ * static_cast<Uint128>(window_)) / AsLong(total_);
  const long double level = static_cast<long double>(l.low - levels_) + l.up;
  return static_cast<double>(slope * level);
}

double PiecewiseMechanism::SecondMoment(std::int64_t j) const {
  // E[m^2 | j] with m = i - M: b / W over all N indices plus c / W over the
  // window, whose indices are centred on j - J: sum m^2 = w (j - J)^2 + w (w^2 - 1) / 12.
  const auto half = static_cast<long double>(grid_.hi);
  const long double all = half * (half + 1) * (2 * half + 1) / 3;
  const auto w = static_cast<long double>(window_);
  const auto d = static_cast<long double>(j - levels_);
  const long double win = w * d * d + w * (w * w - 1) / 12;
  const long double m2 = (std::ldexp(all, shift_) + AsLong(extra_) * win) / AsLong(total_);
  return static_cast<double>(m2 * grid_.step * grid_.step);
}

double PiecewiseMechanism::Variance(double x) const {
  const Levels l = LevelsOf(x);
  const double mean = Mean(x);
  return (1 - l.up) * SecondMoment(l.low) + l.up * SecondMoment(l.low + 1) - mean * mean;
}

double PiecewiseMechanism::PaperVariance(double t) const {
  t = Clip(t);
  const double a = std::expm1(epsilon_ / 2);
  return t * t / a + (a + 4) / (3 * a * a);
}

double PiecewiseMechanism::Mass(double y, double x) const {
  const auto m = grid_.IndexOf(y);
  if (!m) return 0.0;
  const std::int64_t i = *m - grid_.lo;
  const Levels l = LevelsOf(x);
  return static_cast<double>((1 - l.up) * Weight(i, l.low) + l.up * Weight(i, l.low + 1));
}

double PiecewiseMechanism::Cdf(double y, double x) const {
  if (!(y >= grid_.Value(grid_.lo))) return 0.0;
  if (y >= grid_.Value(grid_.hi)) return 1.0;
  // The largest grid index whose value is <= y.
  auto m = static_cast<std::int64_t>(std::floor(y / grid_.step));
  while (grid_.Value(m + 1) <= y) ++m;
  while (grid_.Value(m) > y) --m;
  const std::int64_t i = m - grid_.lo;
  const Levels l = LevelsOf(x);
  auto below = [&](std::int64_t j) {  // P[index <= i | level j]
    const auto in_window =
        static_cast<long double>(std::clamp<std::int64_t>(i - j + 1, 0, window_));
    return (std::ldexp(static_cast<long double>(i + 1), shift_) + AsLong(extra_) * in_window) /
           AsLong(total_);
  };
  return static_cast<double>((1 - l.up) * below(l.low) + l.up * below(l.low + 1));
}

}  // namespace fedldp
