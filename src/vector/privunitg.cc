#include "fedldp/vector/privunitg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "fedldp/random/exact_privunit.h"
#include "fedldp/random/normal.h"

namespace fedldp {

PrivUnitGParameters PrivUnitGParameters::ForGamma(double gamma, double epsilon) {
  PrivUnitGParameters r;
  r.gamma = gamma;
  r.q = NormalUpperTail(gamma);
  const double em1 = std::expm1(epsilon);
  // p = e^eps q / (1 - q + e^eps q) = e^eps q / (1 + (e^eps - 1) q).
  const double denominator = 1 + em1 * r.q;
  r.p = std::exp(epsilon) * r.q / denominator;
  // p / q - (1 - p) / (1 - q) = (e^eps - 1) / (1 + (e^eps - 1) q).
  r.mu = NormalDensity(gamma) * em1 / denominator;
  r.sigma = 1 / r.mu;
  return r;
}

double PrivUnitGParameters::WorstRatio() const { return p * (1 - q) / ((1 - p) * q); }

double PrivUnitGParameters::SecondMoment(std::size_t dimension) const {
  return sigma * sigma * static_cast<double>(dimension) + sigma * gamma;
}

PrivUnitGParameters PrivUnitGParameters::Optimal(double epsilon, std::size_t dimension) {
  const auto cost = [&](double gamma) {
    const auto r = ForGamma(gamma, epsilon);
    const double c = r.SecondMoment(dimension);
    return std::isfinite(c) ? c : std::numeric_limits<double>::infinity();
  };
  constexpr double kLo = -4, kHi = 19, kStep = 0.01;
  double best = kLo;
  double best_cost = cost(kLo);
  for (double g = kLo + kStep; g <= kHi; g += kStep) {
    const double c = cost(g);
    if (c < best_cost) best_cost = c, best = g;
  }
  // Golden section inside the grid cell's neighbours.
  double a = best - kStep, b = best + kStep;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
  double f1 = cost(x1), f2 = cost(x2);
  for (int i = 0; i < 80; ++i) {
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1;
      x1 = b - phi * (b - a), f1 = cost(x1);
    } else {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + phi * (b - a), f2 = cost(x2);
    }
  }
  const double g = cost(0.5 * (a + b)) <= best_cost ? 0.5 * (a + b) : best;
  // The exact sampler needs gamma on the boxes' grid h = 2^-6: the better
  // neighbour (the cost is flat at its minimum: relatively below 1e-4).
  const double lo = std::max(kLo, std::floor(g * 64) / 64), hi = std::min(kHi, lo + 1.0 / 64);
  return ForGamma(cost(lo) <= cost(hi) ? lo : hi, epsilon);
}

Result<PrivUnitG> PrivUnitG::Create(std::size_t dimension, double epsilon, double clip) {
  VectorRandomizerConfig config;
  config.mechanism = VectorMechanism::kPrivUnitG;
  config.dimension = dimension;
  config.epsilon = epsilon;
  config.clip = clip;
  if (const Status s = config.Validate(); !s.ok()) return Error{s.error()};
  const auto parameters = PrivUnitGParameters::Optimal(epsilon, dimension);
  auto sampler = RoundedPrivUnit::Create(parameters.gamma, epsilon);
  if (!sampler.ok()) return Error{sampler.error()};
  return PrivUnitG(dimension, epsilon, clip, parameters, std::move(sampler).value());
}

PrivUnitG PrivUnitG::WithParameters(std::size_t dimension, double epsilon, double clip,
                                    const PrivUnitGParameters& parameters) {
  // The sampler of the parameters' own ratio, on the nearest box edge.
  const double gamma = std::clamp(std::round(parameters.gamma * 64) / 64, -19.0, 19.0);
  const double used = std::clamp(std::log(parameters.WorstRatio()), 1e-9, 100.0);
  return PrivUnitG(dimension, epsilon, clip, parameters,
                   RoundedPrivUnit::Create(gamma, used).value());
}

double PrivUnitG::SquaredError(double norm) const {
  return clip() * clip() * parameters_.SecondMoment(dimension()) - norm * norm;
}

VectorRandomizer::ExactPrivacy PrivUnitG::ImplementedPrivacy() const {
  return {std::log(parameters_.WorstRatio()), 0};
}

std::optional<VectorRandomizer::CapLaw> PrivUnitG::Cap() const {
  const PrivUnitGParameters& r = parameters_;
  const double opposite = CapShareAtOpposite(r.gamma, r.p / r.q, (1 - r.p) / (1 - r.q));
  return CapLaw{clip() * r.sigma * r.gamma, r.p, opposite};
}

double CapShareAtOpposite(double gamma, double on_cap, double off_cap) {
  // t = <w, u> ~ N(0, 1) under the normal; -u's cap is t <= -gamma.
  const double overlap = gamma < 0 ? NormalCdf(-gamma) - NormalCdf(gamma) : 0.0;
  return on_cap * overlap + off_cap * NormalUpperTail(std::fabs(gamma));
}

double PrivUnitG::deviation() const { return sampler_.DeviationPerReport(dimension()); }

std::optional<OutputGrid> PrivUnitG::Grid() const {
  return GridOfScale(clip() * parameters_.sigma);
}

std::optional<OutputGrid> PrivUnitG::UnitGrid(double scale) const {
  return GridOfScale(scale * parameters_.sigma);
}

std::optional<OutputGrid> PrivUnitG::GridOfScale(double scale) {
  // |w_i| < 20 + 20 sqrt(2^24) + 20, so |index| < 2^11 2^17.
  constexpr std::int64_t kIndex = std::int64_t{1} << 30;
  return OutputGrid{RoundedPrivUnit::Granularity(scale), -kIndex, kIndex};
}

int SphereSign(std::span<const double> x, const UnitScaling& scaling, double clip, bool fair,
               Rng& rng) {
  const double sumsq = scaling.SquaredNorm(x);
  const double c = clip * scaling.factors[0] * scaling.factors[1], w = 2 * Uniform01(rng) - 1;
  // In arithmetic, not a branch: at x = 0 the sign is a fair coin a branch
  // mispredicts half the time, at ||x|| = C it is always + (6 ns apart).
  const int plus = static_cast<int>(w < 0) | (static_cast<int>(!fair) & (w * w * c * c < sumsq));
  return 2 * plus - 1;
}

void PrivUnitG::Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const {
  const UnitScaling scaling = UnitScaling::Of(x);  // one pass over x for both
  const int sign = SphereSign(x, scaling, clip(), false, rng);
  sampler_.Sample(x, scaling, sign, clip() * parameters_.sigma, out, rng);
}

void PrivUnitG::RandomizeUnit(std::span<const double> u, int sign, double scale,
                              std::span<double> out, Rng& rng) const {
  sampler_.Sample(u, sign, scale * parameters_.sigma, out, rng);
}

extern const VectorRandomizerKind kPrivUnitGKind;
constinit const VectorRandomizerKind kPrivUnitGKind = {
    "privunitg",
    "PrivUnitG (Asi, Feldman & Talwar 2022): optimal error, pure eps",
    {},
    MadeByCreate<PrivUnitG>,
    kPrivUnitGFloatingPoint};

}  // namespace fedldp
