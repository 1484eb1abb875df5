#include "fedldp/vector/baselines.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "fedldp/base/bisect.h"
#include "fedldp/random/exact_normal.h"
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
  return Bisect(
             lo, hi,
             [&](double sigma) { return GaussianDelta(sigma, epsilon, sensitivity) <= delta; },
             1e-13)
      .hi;
}

double ClassicGaussianSigma(double epsilon, double delta, double sensitivity) {
  return sensitivity * std::sqrt(2 * std::log(1.25 / delta)) / epsilon;
}

double GaussianRandomizer::Allowance(std::size_t dimension, double epsilon) {
  return (1 + std::exp(epsilon)) * static_cast<double>(dimension) *
         RoundedGaussian::kDeviationPerDraw;
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
  const double allowance = Allowance(dimension, epsilon);
  if (!classic && allowance > delta / 2) {
    return Error{"the Gaussian's delta is too small for its floating-point allowance"};
  }
  const double sensitivity = SensitivityFor(clip);
  const double sigma = classic ? ClassicGaussianSigma(epsilon, delta, sensitivity)
                               : AnalyticGaussianSigma(epsilon, delta - allowance, sensitivity);
  auto noise = RoundedGaussian::Create(sigma);
  if (!noise.ok()) return Error{noise.error()};
  // The margins of baselines.h: the clipped input's norm and the pre-rounding.
  const double g = noise.value().granularity();
  const double rounding = std::sqrt(static_cast<double>(dimension)) * g * 0x1p-64;
  if (2 * clip * 0x1p-27 + rounding > 2 * clip * 0x1p-24 ||
      clip * (1 + 0x1p-28) > RoundedGaussian::kMaxCells * g) {
    return Error{"the Gaussian's sigma is out of scale with its clip"};
  }
  const double stated = classic ? GaussianDelta(sigma, epsilon, sensitivity) + allowance : delta;
  return GaussianRandomizer(dimension, clip, epsilon, stated, noise.value(), classic);
}

std::optional<OutputGrid> GaussianRandomizer::Grid() const {
  constexpr std::int64_t kIndex = std::int64_t{1} << 53;
  return OutputGrid{noise_.granularity(), -kIndex, kIndex};
}

VectorRandomizer::ExactPrivacy GaussianRandomizer::ImplementedPrivacy() const {
  return {std::numeric_limits<double>::quiet_NaN(),
          GaussianDelta(sigma(), epsilon_, sensitivity()) + Allowance(dimension(), epsilon_)};
}

double GaussianRandomizer::SquaredError(double) const {
  const double s = noise_.sigma(), g = noise_.granularity();
  return static_cast<double>(dimension()) * (s * s + g * g / 12);
}

void GaussianRandomizer::Randomize(std::span<const double> x, std::span<double> out,
                                   Rng& rng) const {
  ClipInto(x, out);
  noise_.SampleMany(out, rng);  // each m g, as Grid().Value(m) computes it
}

Result<DuchiVectorRandomizer> DuchiVectorRandomizer::Create(std::size_t dimension, double epsilon,
                                                            double clip) {
  if (const Status s = CheckCommon(dimension, epsilon, clip); !s.ok()) return Error{s.error()};
  // eps / d may underflow to 0: said as the user's eps, not the share's.
  const double share = epsilon / static_cast<double>(dimension);
  if (!(share > 0)) {
    std::ostringstream e;
    e << "duchi: eps " << epsilon << " over " << dimension
      << " coordinates is too small to implement exactly";
    return Error{e.str()};
  }
  auto m = TwoPointMechanism::Create(share, 0.0, clip);
  if (!m.ok()) return Error{m.error()};
  return DuchiVectorRandomizer(dimension, clip, epsilon, std::move(m).value());
}

VectorRandomizer::ExactPrivacy DuchiVectorRandomizer::ImplementedPrivacy() const {
  const Interval in = coordinate_.input_domain();
  double worst = 0;
  for (const double y : coordinate_.Atoms()) {
    worst = std::max(worst,
                     std::fabs(std::log(coordinate_.Mass(y, in.lo) / coordinate_.Mass(y, in.hi))));
  }
  return {static_cast<double>(dimension()) * worst, 0};
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
  FEDLDP_RETURN_IF_ERROR(VectorRandomizer::ValidateReport(report));
  // Without a branch per entry: the entries are +-C B at random, and a
  // branch would be mispredicted on half of them.
  const double low = coordinate_.low(), high = coordinate_.high();
  bool ok = true;
  for (double v : report) ok &= (v == low) | (v == high);
  if (!ok) return Error{"a duchi report has an entry other than +-C B"};
  return {};
}

namespace {

Result<std::unique_ptr<VectorRandomizer>> MakeGaussian(const VectorRandomizerConfig& c) {
  return Owned(GaussianRandomizer::Create(c.dimension, c.epsilon, c.delta, c.clip, false));
}

Result<std::unique_ptr<VectorRandomizer>> MakeGaussianClassic(const VectorRandomizerConfig& c) {
  return Owned(GaussianRandomizer::Create(c.dimension, c.epsilon, c.delta, c.clip, true));
}

constexpr std::string_view kGaussianFloatingPoint =
    "floating point: every value reported is a point of a public grid fixed before any "
    "input is seen, the nearest to x + sigma Z with Z an exact normal and the "
    "rounding decided exactly: no report rules an input out, and delta includes the "
    "proven allowance (1 + e^eps) d 2^-218 of the sampler's 256-bit cap "
    "(docs/methods.md)";

}  // namespace

extern const VectorRandomizerKind kGaussianKind, kGaussianClassicKind, kDuchiKind;
constinit const VectorRandomizerKind kGaussianKind = {
    "gaussian",
    "Gaussian, analytic calibration (Balle & Wang 2018): (eps, delta)",
    {.needs_delta = true},
    MakeGaussian,
    kGaussianFloatingPoint};
constinit const VectorRandomizerKind kGaussianClassicKind = {
    "gaussian-classic",
    "Gaussian, sigma = 2C sqrt(2 ln(1.25 / delta)) / eps: (eps, delta)",
    {.needs_delta = true},
    MakeGaussianClassic,
    kGaussianFloatingPoint};
constinit const VectorRandomizerKind kDuchiKind = {
    "duchi",
    "Duchi's two-point mechanism on every coordinate at eps / d",
    {},
    MadeByCreate<DuchiVectorRandomizer>,
    {}};

}  // namespace fedldp
