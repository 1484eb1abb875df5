#include "fedldp/mechanism/laplace.h"

#include <algorithm>
#include <cmath>

#include "fedldp/random/discrete.h"

namespace fedldp {
namespace {

constexpr std::int64_t kGridEnd = std::int64_t{1} << 52;  // every |m| g is exact

}  // namespace

Result<LaplaceMechanism> LaplaceMechanism::Create(double epsilon) {
  if (Status e = CheckEpsilon(epsilon); !e.ok()) return e;
  const int scale_exponent = static_cast<int>(std::floor(std::log2(2.0 / epsilon)));
  const int k = std::max(0, 10 - scale_exponent);
  const std::int64_t levels = std::int64_t{1} << k;
  // s / T <= eps / (2K) per grid step, T = 2^q <= 2^52 (X = U + T V stays far from 2^63).
  const auto rate = RationalRateBelow(epsilon / (2.0 * static_cast<double>(levels)));
  if (!rate.ok()) return Error{"laplace: " + rate.error()};
  return LaplaceMechanism(epsilon, levels, (*rate).s, (*rate).t);
}

LaplaceMechanism::LaplaceMechanism(double epsilon, std::int64_t levels, std::uint64_t s,
                                   std::uint64_t t)
    : epsilon_(epsilon),
      levels_(levels),
      s_(s),
      t_(t),
      rate_(static_cast<double>(s) / static_cast<double>(t)),
      grid_{1.0 / static_cast<double>(levels), -kGridEnd, kGridEnd} {}

double LaplaceMechanism::implemented_epsilon() const {
  return 2.0 * static_cast<double>(levels_) * rate_;
}

double LaplaceMechanism::Sample(double x, Rng& rng) const {
  const std::int64_t j = RandomizedRound(Clip(x) * static_cast<double>(levels_), rng);
  // |Y| past 2^52 - K has probability below exp(-2^40): kept on the grid.
  const std::int64_t noise = std::clamp(DiscreteLaplace(rng, s_, t_), -kGridEnd + levels_,
                                        kGridEnd - levels_);
  return grid_.Value(j + noise);
}

LaplaceMechanism::Levels LaplaceMechanism::LevelsOf(double x) const {
  const double u = Clip(x) * static_cast<double>(levels_);
  return {static_cast<std::int64_t>(std::floor(u)), RoundUpProbability(u)};
}

double LaplaceMechanism::NoiseMass(std::int64_t k) const {
  // (1 - p) / (1 + p) p^|k| with p = exp(-rate).
  return std::tanh(rate_ / 2) * std::exp(-rate_ * std::fabs(static_cast<double>(k)));
}

double LaplaceMechanism::NoiseCdf(std::int64_t k) const {
  const double p = std::exp(-rate_);
  if (k < 0) return std::exp(-rate_ * static_cast<double>(-k)) / (1 + p);
  return 1 - std::exp(-rate_ * static_cast<double>(k + 1)) / (1 + p);
}

double LaplaceMechanism::Mean(double x) const {
  const Levels l = LevelsOf(x);
  return (static_cast<double>(l.low) + l.up) * grid_.step;
}

double LaplaceMechanism::Variance(double x) const {
  const Levels l = LevelsOf(x);
  // 2p / (1 - p)^2 = 1 / (2 sinh^2(rate / 2)).
  const double sh = std::sinh(rate_ / 2);
  return grid_.step * grid_.step * (l.up * (1 - l.up) + 1 / (2 * sh * sh));
}

double LaplaceMechanism::Mass(double y, double x) const {
  const auto m = grid_.IndexOf(y);
  if (!m) return 0.0;
  const Levels l = LevelsOf(x);
  return (1 - l.up) * NoiseMass(*m - l.low) + l.up * NoiseMass(*m - l.low - 1);
}

double LaplaceMechanism::Cdf(double y, double x) const {
  if (!(y >= grid_.Value(grid_.lo))) return 0.0;
  if (y >= grid_.Value(grid_.hi)) return 1.0;
  const auto m = static_cast<std::int64_t>(std::floor(y / grid_.step));  // g is a power of two
  const Levels l = LevelsOf(x);
  return (1 - l.up) * NoiseCdf(m - l.low) + l.up * NoiseCdf(m - l.low - 1);
}

}  // namespace fedldp
