#include "fedldp/vector/privunitg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

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
  constexpr double kLo = -4, kHi = 40, kStep = 0.01;
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
  const double g = 0.5 * (a + b);
  return cost(g) <= best_cost ? ForGamma(g, epsilon) : ForGamma(best, epsilon);
}

Result<PrivUnitG> PrivUnitG::Create(std::size_t dimension, double epsilon, double clip) {
  VectorRandomizerConfig config;
  config.mechanism = VectorMechanism::kPrivUnitG;
  config.dimension = dimension;
  config.epsilon = epsilon;
  config.clip = clip;
  if (const Status s = config.Validate(); !s.ok()) return Error{s.error()};
  return PrivUnitG(dimension, epsilon, clip, PrivUnitGParameters::Optimal(epsilon, dimension));
}

PrivUnitG PrivUnitG::WithParameters(std::size_t dimension, double epsilon, double clip,
                                    const PrivUnitGParameters& parameters) {
  return PrivUnitG(dimension, epsilon, clip, parameters);
}

double PrivUnitG::SquaredError(double norm) const {
  return clip() * clip() * parameters_.SecondMoment(dimension()) - norm * norm;
}

namespace {

// v with non-finite entries read as 0, divided by `divisor` (a division, not a
// product with the reciprocal, which overflows for subnormal divisors).
inline double Entry(const double* v, std::size_t i) {
  const double x = v[i];
  return std::isfinite(x) ? x : 0.0;
}
inline double Entry(const double* v, std::size_t i, double divisor) {
  return Entry(v, i) / divisor;
}

// The PrivUnitG step shared by both entry points: draws g into out, rounds the
// direction of v (or takes it as is when `round` is false), draws a, and
// writes scale * sigma * (g - <g, u> u + a u).
void Privatize(const PrivUnitGParameters& pr, std::span<const double> v, bool round, double clip,
               double scale, std::span<double> out, Rng& rng) {
  const std::size_t d = v.size();
  const double* x = v.data();
  double* o = out.data();
  // Pass 1: the Gaussian, and in the same blocks the sums <g, v>, ||v||^2 and max |v_i|.
  double sumsq = 0, gv = 0, maxabs = 0;
  constexpr std::size_t kBlock = 1024;
  for (std::size_t start = 0; start < d; start += kBlock) {
    const std::size_t n = std::min(kBlock, d - start);
    FillStandardNormal(out.subspan(start, n), rng);
    for (std::size_t i = start; i < start + n; ++i) {
      const double xi = Entry(x, i);
      sumsq += xi * xi;
      gv += o[i] * xi;
      maxabs = std::max(maxabs, std::fabs(xi));
    }
  }
  // Rescale when the squares over- or underflow.
  double divisor = 1.0;
  if (maxabs > 0 && (!(maxabs < 1e150) || maxabs < 1e-150)) {
    divisor = maxabs;
    sumsq = 0, gv = 0;
    for (std::size_t i = 0; i < d; ++i) {
      const double xi = Entry(x, i, divisor);
      sumsq += xi * xi;
      gv += o[i] * xi;
    }
  }
  const double norm = std::sqrt(sumsq);  // of v / divisor
  const bool zero = maxabs == 0;
  // u = kappa * v / divisor, or e_1 for v = 0.
  double sign = 1;
  if (round) {
    const double t = zero ? 0.0 : std::min(1.0, norm * divisor / clip);
    sign = Uniform01(rng) < 0.5 * (1 + t) ? 1.0 : -1.0;
  }
  const double kappa = zero ? 0.0 : sign / norm;
  const double dot = zero ? sign * o[0] : kappa * gv;
  const double a = Bernoulli(rng, pr.p) ? NormalAbove(pr.gamma, rng) : NormalBelow(pr.gamma, rng);
  const double s = scale * pr.sigma;
  const double coef = (a - dot) * kappa;
  if (divisor == 1.0) {
    for (std::size_t i = 0; i < d; ++i) o[i] = s * (o[i] + coef * Entry(x, i));
  } else {
    for (std::size_t i = 0; i < d; ++i) o[i] = s * (o[i] + coef * Entry(x, i, divisor));
  }
  if (zero) o[0] += s * (a - dot) * sign;
}

}  // namespace

void RoundToSphere(std::span<const double> x, double norm, double clip, std::span<double> unit,
                   Rng& rng) {
  const double sign = Uniform01(rng) < 0.5 * (1 + std::min(1.0, norm / clip)) ? 1.0 : -1.0;
  if (norm == 0) {
    std::fill(unit.begin(), unit.end(), 0.0);
    unit[0] = sign;
    return;
  }
  for (std::size_t i = 0; i < x.size(); ++i) unit[i] = sign * x[i] / norm;
}

void PrivUnitG::Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const {
  Privatize(parameters_, x, /*round=*/true, clip(), clip(), out, rng);
}

void PrivUnitG::RandomizeUnit(std::span<const double> u, double scale, std::span<double> out,
                              Rng& rng) const {
  Privatize(parameters_, u, /*round=*/false, 1.0, scale, out, rng);
}

}  // namespace fedldp
