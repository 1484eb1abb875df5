#include "fedldp/vector/fastprojunit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fedldp/base/words.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp {
namespace {

// The SRHT's padded work buffer, kept per thread: a fresh 8 MiB buffer per
// report would cost more in page faults than the transform.
std::span<double> Work(std::size_t n) {
  thread_local std::vector<double> work;
  if (work.size() < n) work.resize(n);
  return std::span(work).first(n);
}

// Stream of the public seed's generator that draws the shared signs, and of a
// report's seed that draws its rows and signs.
constexpr std::uint64_t kSharedSignsStream = 0x5349474e53ULL;  // "SIGNS"
constexpr std::uint64_t kProjectionStream = 0x50524f4aULL;     // "PROJ"

}  // namespace

Result<FastProjUnit> FastProjUnit::Create(std::size_t dimension, double epsilon, double clip,
                                          std::size_t k, bool shared_signs,
                                          std::uint64_t public_seed, bool seeded) {
  VectorRandomizerConfig config;
  config.mechanism =
      shared_signs ? VectorMechanism::kFastProjUnitCorr : VectorMechanism::kFastProjUnit;
  config.dimension = dimension;
  config.epsilon = epsilon;
  config.clip = clip;
  config.k = k;
  config.public_seed = public_seed;
  if (const Status s = config.Validate(); !s.ok()) return Error{s.error()};
  auto inner = PrivUnitG::Create(k, epsilon, 1.0);
  if (!inner.ok()) return Error{inner.error()};
  std::shared_ptr<const SeededPrivUnitG> seeded_inner;
  if (seeded) {
    if (shared_signs) return Error{"fastprojunit-seed draws its signs per client"};
    auto made = SeededPrivUnitG::Create(k, epsilon, 1.0);
    if (!made.ok()) return Error{made.error()};
    seeded_inner = std::make_shared<const SeededPrivUnitG>(std::move(made).value());
  }
  SignBits signs;
  if (shared_signs) {
    CounterRng public_rng(public_seed, kSharedSignsStream);
    signs = DrawSigns(PaddedDimension(dimension), public_rng);
  }
  return FastProjUnit(dimension, clip, k, shared_signs, std::move(signs),
                      std::make_shared<const PrivUnitG>(std::move(inner).value()),
                      std::move(seeded_inner));
}

FastProjUnit::FastProjUnit(std::size_t dimension, double clip, std::size_t k, bool shared,
                           SignBits signs, std::shared_ptr<const PrivUnitG> inner,
                           std::shared_ptr<const SeededPrivUnitG> seeded)
    : VectorRandomizer(dimension, clip),
      k_(k),
      padded_(PaddedDimension(dimension)),
      shared_(shared),
      shared_signs_(std::move(signs)),
      inner_(std::move(inner)),
      seeded_(std::move(seeded)) {}

std::string FastProjUnit::name() const {
  return seeded_ ? "fastprojunit-seed" : shared_ ? "fastprojunit-corr" : "fastprojunit";
}

double FastProjUnit::beta() const {
  if (padded_ == 1) return 0;
  const double dp = static_cast<double>(padded_), k = static_cast<double>(k_);
  return 2 * (dp - k) / (k * (dp - 1));
}

double FastProjUnit::ErrorBound(double norm, bool upper) const {
  // The seeded form's sigma' (PrivUnitG's to 1e-6) at the same gamma.
  const double sigma = seeded_ ? seeded_->sigma() : inner_->parameters().sigma;
  const double d = static_cast<double>(dimension()), k = static_cast<double>(k_);
  const double c2 = clip() * clip();
  const double base = sigma * sigma * d;
  const double term = sigma * inner_->parameters().gamma;
  if (norm == 0) return c2 * (base + term * d / k);        // exact: T = d / k
  const double spread = static_cast<double>(padded_) / k;  // T in [1, d' / k]
  if (upper) return c2 * (base + std::max(term, term * spread)) - norm * norm * (1 - 2 * beta());
  return c2 * (base + std::min(term, term * spread)) - norm * norm;
}

double FastProjUnit::SquaredError(double norm) const { return ErrorBound(norm, true); }

double FastProjUnit::SquaredErrorLowerBound(double norm) const { return ErrorBound(norm, false); }

double FastProjUnit::WorstCaseSquaredError() const {
  return std::max(SquaredError(0), SquaredError(clip()));
}

Srht FastProjUnit::Projection(std::uint64_t seed, SignBits& signs,
                              std::vector<std::uint32_t>& rows) const {
  CounterRng projection(seed, kProjectionStream);
  if (!shared_) signs = DrawSigns(padded_, projection);
  rows = DrawRows(padded_, k_, projection);
  return Srht(dimension(), shared_ ? &shared_signs_ : &signs, rows);
}

ProjectedReport FastProjUnit::Encode(std::span<const double> x, Rng& rng) const {
  ProjectedReport report;
  report.seed = rng();
  SignBits signs;
  std::vector<std::uint32_t> rows;
  const Srht w = Projection(report.seed, signs, rows);

  // Only the direction enters W: x scaled by a power of two (exact), the
  // non-finite entries read as 0, for every input alike (no branch on x).
  std::vector<double> clean(x.size());
  const UnitScaling scaling = UnitScaling::Of(x);
  const auto [s0, s1] = scaling.factors;
  for (std::size_t i = 0; i < x.size(); ++i) {
    clean[i] = (std::isfinite(x[i]) ? x[i] : 0.0) * s0 * s1;
  }
  std::vector<double> y(k_);
  w.Forward(clean, y, Work(padded_));
  double ny = 0;
  for (double v : y) ny += v * v;
  // y = 0 (x = 0 or in W's null space): e_1 with a fair sign.
  const int sign = SphereSign(x, scaling, clip(), !(ny > 0), rng);
  if (seeded_) {
    report.candidate = seeded_->EncodeUnit(y, sign, rng);
  } else {
    report.z.resize(k_);
    inner_->RandomizeUnit(y, sign, 1.0, report.z, rng);
  }
  return report;
}

void FastProjUnit::Decode(const ProjectedReport& report, std::span<double> out) const {
  SignBits signs;
  std::vector<std::uint32_t> rows;
  const Srht w = Projection(report.seed, signs, rows);
  if (report.candidate) {
    std::vector<double> z(k_);
    seeded_->DecodeUnit(*report.candidate, 1.0, z);
    w.Backward(z, out, Work(padded_));
  } else {
    w.Backward(report.z, out, Work(padded_));
  }
  for (double& v : out) v *= clip();
}

void FastProjUnit::Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const {
  Decode(Encode(x, rng), out);
}

std::optional<std::string> FastProjUnit::EncodeSent(std::span<const double> x, Rng& rng) const {
  const ProjectedReport report = Encode(x, rng);
  std::string bytes;
  AppendWord(bytes, report.seed);
  if (report.candidate) return bytes + SeedBytes(*report.candidate);
  for (double v : report.z) AppendDouble(bytes, v);
  return bytes;
}

std::size_t FastProjUnit::MaxSentBytes() const { return 8 + (seeded_ ? kSeedReportBytes : 8 * k_); }

Status FastProjUnit::DecodeSent(std::string_view bytes, std::span<double> out) const {
  if (bytes.size() != MaxSentBytes()) {
    return Error{"a " + name() + " report is " + std::to_string(MaxSentBytes()) + " bytes, got " +
                 std::to_string(bytes.size())};
  }
  ProjectedReport report;
  report.seed = ReadWord(bytes, 0);
  if (seeded_) {
    report.candidate = SeedFromBytes(bytes.substr(8));
  } else {
    report.z.resize(k_);
    for (std::size_t i = 0; i < k_; ++i) report.z[i] = ReadDouble(bytes, 8 + 8 * i);
  }
  FEDLDP_RETURN_IF_ERROR(ValidateProjected(report));
  Decode(report, out);
  return {};
}

Status FastProjUnit::ValidateProjected(const ProjectedReport& report) const {
  // The seeded form: any 16 bytes are a seed it can send.
  if (seeded_ || report.candidate) {
    if (seeded_ && report.candidate && report.z.empty()) return {};
    return Error{"a FastProjUnit report must carry a seed exactly when the randomizer is seeded"};
  }
  if (report.z.size() != k_)
    return Error{"a FastProjUnit report has " + std::to_string(report.z.size()) +
                 " entries, expected k = " + std::to_string(k_)};
  const OutputGrid grid = *inner_->UnitGrid(1.0);
  for (double v : report.z) {
    if (!std::isfinite(v)) return Error{"a FastProjUnit report has a non-finite entry"};
    if (!grid.IndexOf(v)) return Error{"a FastProjUnit report has an entry off its grid"};
  }
  return {};
}

std::vector<double> FastProjUnit::ProjectionBias(std::span<const double> x, std::size_t draws,
                                                 Rng& rng) const {
  const std::size_t d = dimension();
  std::vector<double> unit(d), mean(d, 0.0), y(k_), back(d);
  double norm = 0;
  for (double v : x) norm += v * v;
  norm = std::sqrt(norm);
  for (std::size_t i = 0; i < d; ++i) unit[i] = x[i] / norm;
  for (std::size_t n = 0; n < draws; ++n) {
    SignBits signs;
    std::vector<std::uint32_t> rows;
    const Srht w = Projection(rng(), signs, rows);
    w.Forward(unit, y, Work(padded_));
    double ny = 0;
    for (double v : y) ny += v * v;
    ny = std::sqrt(ny);
    if (ny == 0) continue;  // contributes mean 0 (fair sign)
    for (double& v : y) v /= ny;
    w.Backward(y, back, Work(padded_));
    for (std::size_t i = 0; i < d; ++i) mean[i] += back[i];
  }
  const double t = std::min(1.0, norm / clip());
  for (std::size_t i = 0; i < d; ++i)
    mean[i] =
        clip() * t * mean[i] / static_cast<double>(draws) - x[i] * std::min(1.0, clip() / norm);
  return mean;
}

double FastProjUnit::BiasBound(std::span<const double> x) const {
  double norm = 0, fourth = 0;
  for (double v : x) norm += v * v;
  norm = std::sqrt(norm);
  if (norm == 0) return 0;
  const double dp = static_cast<double>(padded_), k = static_cast<double>(k_);
  const double finite = padded_ == 1 ? 0.0 : (dp - k) / (k * (dp - 1));
  double spread;  // E[d' sum y^4] - 1
  if (shared_) {
    std::vector<double> unit(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) unit[i] = x[i] / norm;
    const Srht rotation(dimension(), &shared_signs_, {});
    std::span<double> work = Work(padded_);
    rotation.Rotate(unit, work);
    for (double v : work) fourth += v * v * v * v;
    spread = dp * fourth - 1;
  } else {
    for (double v : x) fourth += std::pow(v / norm, 4);
    spread = 2 - 2 * fourth;
  }
  const double t = std::min(1.0, norm / clip());
  return clip() * t * std::sqrt(std::max(0.0, spread * finite));
}

Status FastProjUnit::DrawAndCheckSent(std::span<const double> x, Rng& rng) const {
  return ValidateProjected(Encode(x, rng));
}

namespace {

Result<std::unique_ptr<VectorRandomizer>> MakeFastProjUnit(const VectorRandomizerConfig& c) {
  const bool shared = c.mechanism.traits().shared_seed;
  return Owned(FastProjUnit::Create(c.dimension, c.epsilon, c.clip,
                                    c.k == 0 ? DefaultProjection(c.dimension) : c.k, shared,
                                    c.public_seed));
}

Result<std::unique_ptr<VectorRandomizer>> MakeFastProjUnitSeed(const VectorRandomizerConfig& c) {
  return Owned(FastProjUnit::Create(c.dimension, c.epsilon, c.clip,
                                    c.k == 0 ? DefaultProjection(c.dimension) : c.k, false, 0,
                                    true));
}

}  // namespace

extern const VectorRandomizerKind kFastProjUnitKind, kFastProjUnitCorrKind, kFastProjUnitSeedKind;
constinit const VectorRandomizerKind kFastProjUnitKind = {
    "fastprojunit",
    "FastProjUnit (Asi et al. 2023): PrivUnitG in k dimensions, per-client random signs",
    {.takes_k = true},
    MakeFastProjUnit,
    kPrivUnitGFloatingPoint};
constinit const VectorRandomizerKind kFastProjUnitCorrKind = {
    "fastprojunit-corr",
    "FastProjUnit with the signs shared from a public seed",
    {.takes_k = true, .shared_seed = true},
    MakeFastProjUnit,
    kPrivUnitGFloatingPoint};

constinit const VectorRandomizerKind kFastProjUnitSeedKind = {
    "fastprojunit-seed",
    "FastProjUnit with PrivUnitG in k dimensions sent as a seed: 24 bytes a report, pure eps",
    {.takes_k = true, .generator_model = true},
    MakeFastProjUnitSeed,
    kSeededPrivUnitGFloatingPoint,
    "fastprojunit"};

}  // namespace fedldp
