#include "fedldp/mechanism/laplace.h"

#include <algorithm>
#include <cmath>

#include "fedldp/random/discrete.h"

namespace fedldp {
namespace {

constexpr std::int64_t kGridEnd = std::int64_t{1} << 52;  // every |m| g is exact

}  // namespace

Result<LaplaceMechanism> LaplaceMechanism::Create(double epsilon) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  const int scale_exponent = static_cast<int>(std::floor(std::log2(2.0 / epsilon)));
  const int k = std::max(0, 10 - scale_exponent);
  const std::int64_t levels = std::int64_t{1} << k;
  // ln R <= eps / (2K) per grid step.
  auto noise = IntegerLaplace::Create(epsilon / (2.0 * static_cast<double>(levels)));
  if (!noise.ok()) {
    return Error{"laplace: epsilon below 2^-18 is not taken (" + noise.error() + ")"};
  }
  return LaplaceMechanism(epsilon, levels, std::move(*noise));
}

LaplaceMechanism::LaplaceMechanism(double epsilon, std::int64_t levels, IntegerLaplace noise)
    : epsilon_(epsilon),
      levels_(levels),
      noise_(std::move(noise)),
      grid_{1.0 / static_cast<double>(levels), -kGridEnd, kGridEnd} {}

double LaplaceMechanism::implemented_epsilon() const {
  return 2.0 * static_cast<double>(levels_) * noise_.LogRatio();
}

double LaplaceMechanism::Sample(double x, Rng& rng) const {
  const std::int64_t j = RandomizedRound(Clip(x) * static_cast<double>(levels_), rng);
  // Kept on the grid by clamping the output (post-processing); |Y| past
  // 2^52 - K has probability below exp(-2^40).
  return grid_.Value(std::clamp(j + noise_.Sample(rng), -kGridEnd, kGridEnd));
}

LaplaceMechanism::Levels LaplaceMechanism::LevelsOf(double x) const {
  const double u = Clip(x) * static_cast<double>(levels_);
  return {static_cast<std::int64_t>(std::floor(u)), RoundUpProbability(u)};
}

double LaplaceMechanism::Mean(double x) const {
  const Levels l = LevelsOf(x);
  return (static_cast<double>(l.low) + l.up) * grid_.step;
}

double LaplaceMechanism::Variance(double x) const {
  const Levels l = LevelsOf(x);
  return grid_.step * grid_.step * (l.up * (1 - l.up) + noise_.Variance());
}

double LaplaceMechanism::Mass(double y, double x) const {
  const auto m = grid_.IndexOf(y);
  if (!m) return 0.0;
  const Levels l = LevelsOf(x);
  return (1 - l.up) * noise_.Mass(*m - l.low) + l.up * noise_.Mass(*m - l.low - 1);
}

double LaplaceMechanism::Cdf(double y, double x) const {
  if (!(y >= grid_.Value(grid_.lo))) return 0.0;
  if (y >= grid_.Value(grid_.hi)) return 1.0;
  const auto m = static_cast<std::int64_t>(std::floor(y / grid_.step));  // g is a power of two
  const Levels l = LevelsOf(x);
  return (1 - l.up) * noise_.Cdf(m - l.low) + l.up * noise_.Cdf(m - l.low - 1);
}

}  // namespace fedldp
