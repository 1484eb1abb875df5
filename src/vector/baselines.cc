#include "fedldp/vector/baselines.h"

#include <algorithm>
#include <cmath>

#include "fedldp/random/normal.h"

namespace fedldp {
namespace {

Status CheckCommon(std::size_t dimension, double epsilon, double clip) {
  VectorRandomizerConfig c;
  c.mechanism = VectorMechanism::kDuchi;
  c.dimension = dimension;
  c.epsilon = epsilon;
  c.clip = clip;
  return c.Validate();
}

}  // namespace

double GaussianDelta(double sigma, double epsilon, double sensitivity) {
  const double a = sensitivity / (2 * sigma), b = epsilon * sigma / sensitivity;
  const double first = NormalCdf(a - b);
  const double tail = NormalCdf(-a - b);
  const double second = tail > 0 ? std::exp(epsilon + std::log(tail)) : 0.0;
  return std::max(0.0, first - second);
}

double AnalyticGaussianSigma(double epsilon, double delta, double sensitivity) {
  double lo = sensitivity, hi = sensitivity;
  while (GaussianDelta(lo, epsilon, sensitivity) <= delta) lo /= 2;
  while (GaussianDelta(hi, epsilon, sensitivity) > delta) hi *= 2;
  while (hi - lo > 1e-13 * hi) {
    const double mid = 0.5 * (lo + hi);
    (GaussianDelta(mid, epsilon, sensitivity) <= delta ? hi : lo) = mid;
  }
  return hi;
}

double ClassicGaussianSigma(double epsilon, double delta, double sensitivity) {
  return sensitivity * std::sqrt(2 * std::log(1.25 / delta)) / epsilon;
}

Result<GaussianRandomizer> GaussianRandomizer::Create(std::size_t dimension, double epsilon,
                                                      double delta, double clip, bool classic) {
  VectorRandomizerConfig c;
  c.mechanism = classic ? VectorMechanism::kGaussianClassic : VectorMechanism::kGaussian;
  c.dimension = dimension;
  c.epsilon = epsilon;
  c.delta = delta;
  c.clip = clip;
  if (const Status s = c.Validate(); !s.ok()) return Error{s.error()};
  const double sensitivity = 2 * clip;
  const double sigma = classic ? ClassicGaussianSigma(epsilon, delta, sensitivity)
                               : AnalyticGaussianSigma(epsilon, delta, sensitivity);
  const double stated = classic ? GaussianDelta(sigma, epsilon, sensitivity) : delta;
  return GaussianRandomizer(dimension, clip, epsilon, stated, sigma, classic);
}

double GaussianRandomizer::SquaredError(double) const {
  return static_cast<double>(dimension()) * sigma_ * sigma_;
}

void GaussianRandomizer::Randomize(std::span<const double> x, std::span<double> out,
                                   Rng& rng) const {
  ClipInto(x, out);
  // The noise in blocks (multiples of the ziggurat's 256 draws: the same
  // deviates as one call over all of out), with no d-sized buffer.
  constexpr std::size_t kBlock = 1024;
  double noise[kBlock];
  for (std::size_t start = 0; start < out.size(); start += kBlock) {
    const std::size_t n = std::min(kBlock, out.size() - start);
    FillStandardNormal(std::span(noise, n), rng);
    for (std::size_t i = 0; i < n; ++i) out[start + i] += sigma_ * noise[i];
  }
}

Result<DuchiVectorRandomizer> DuchiVectorRandomizer::Create(std::size_t dimension, double epsilon,
                                                            double clip) {
  if (const Status s = CheckCommon(dimension, epsilon, clip); !s.ok()) return Error{s.error()};
  auto m = TwoPointMechanism::Create(epsilon / static_cast<double>(dimension), 0.0, clip);
  if (!m.ok()) return Error{m.error()};
  return DuchiVectorRandomizer(dimension, clip, epsilon, std::move(m).value());
}

double DuchiVectorRandomizer::SquaredError(double norm) const {
  const double cb = clip() * coordinate_.bound();
  return static_cast<double>(dimension()) * cb * cb - norm * norm;
}

void DuchiVectorRandomizer::Randomize(std::span<const double> x, std::span<double> out,
                                      Rng& rng) const {
  ClipInto(x, out);
  coordinate_.SampleMany(out, out, rng);  // element by element: in place is safe
}

Status DuchiVectorRandomizer::ValidateReport(std::span<const double> report) const {
  if (const Status s = VectorRandomizer::ValidateReport(report); !s.ok()) return s;
  // Without a branch per entry: the entries are +-C B at random, and a
  // branch would be mispredicted on half of them.
  const double low = coordinate_.low(), high = coordinate_.high();
  bool ok = true;
  for (double v : report) ok &= (v == low) | (v == high);
  if (!ok) return Error{"a duchi report has an entry other than +-C B"};
  return {};
}

}  // namespace fedldp
