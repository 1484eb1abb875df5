#include "fedldp/vector/seeded_privunit.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "fedldp/base/words.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/exact_privunit.h"
#include "fedldp/random/normal.h"
#include "fedldp/vector/privunitg.h"

namespace fedldp {
namespace {

constexpr std::size_t kBlock = 256;
// Candidates are generated and summed a chunk at a time (in cache); the
// chunks are whole blocks of the ziggurat's 256 words, so the encoder's and
// the decoder's calls draw the same normals.
constexpr std::size_t kChunk = 16 * kBlock;
constexpr double kMaxExpectedTrials = 1e5;

// gamma_m = m u / (1 - m u), u = 2^-53: the relative error of a sum whose
// every term passes through m roundings.
double RoundingGamma(double m) {
  const double mu = m * 0x1p-53;
  return mu / (1 - mu);
}

// sum a_i b_i over one block of at most kBlock terms, in 4 lanes: each term
// passes through 1 + kBlock / 4 + 3 + 2 roundings.
double BlockDot(const double* a, const double* b, std::size_t n) {
  double s[4] = {0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (std::size_t j = 0; j < 4; ++j) s[j] += a[i + j] * b[i + j];
  }
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// <a, b> in blocks summed in order: at most 258 + d / 256 roundings a term.
double BlockedDot(std::span<const double> a, std::span<const double> b) {
  double total = 0;
  for (std::size_t start = 0; start < a.size(); start += kBlock) {
    total += BlockDot(a.data() + start, b.data() + start, std::min(kBlock, a.size() - start));
  }
  return total;
}

// Delta of the header: how far the share of seeds in a cap can move from
// Q(gamma), from the test's rounding and the finite seed space.
double CapShareSlackOf(std::size_t dimension, double gamma) {
  const auto d = static_cast<double>(dimension);
  const double m = 258 + std::ceil(d / kBlock);
  const double radius = std::sqrt(d) + 12;
  const double band =
      RoundingGamma(m) * radius + std::fabs(gamma) * RoundingGamma(m + 3) + d * 0x1p-1073;
  const double rounding = 2 * band / std::sqrt(2 * std::numbers::pi) + std::exp(-72.0);
  const double seeds = std::sqrt((64 * d + 65) * std::numbers::ln2 * 0x1p-121);
  return rounding + seeds;
}

// ceil(64 ln 2 / p'): the trials after which none accepted has probability
// at most 2^-64.
std::uint64_t MaxTrials(double p_off) {
  return static_cast<std::uint64_t>(std::ceil(64 * std::numbers::ln2 / p_off));
}

double OffCapAcceptance(std::uint64_t threshold) {
  return static_cast<double>(threshold) * 0x1p-64;
}

// What eps' adds to ln(1 / p'): the acceptance's spread and the fallback.
// Both shrink as p' grows.
double Extras(double p, double q, double slack) {
  const double a_lo = p + (1 - p) * std::max(0.0, q - slack);
  const double spread = (1 - p) * (std::min(1.0, q + slack) - std::max(0.0, q - slack));
  const double r = std::exp(static_cast<double>(MaxTrials(p)) * std::log1p(-p));
  return std::log1p(spread / a_lo) + std::log1p(r) - std::log1p(-r);
}

// eps' of the header for the threshold t' = p' 2^64.
double LogRatio(std::uint64_t threshold, double q, double slack) {
  return 64 * std::numbers::ln2 - std::log(static_cast<double>(threshold)) +
         Extras(OffCapAcceptance(threshold), q, slack);
}

// The least t' (to a few units) whose eps' is at most eps, or 0 if none: p'
// = e^-(eps - Extras(e^-eps)) is above e^-eps, so its extras are smaller.
std::uint64_t ThresholdFor(double epsilon, double q, double slack) {
  const double target = epsilon - Extras(std::exp(-epsilon), q, slack);
  if (!(target > 0x1p-40)) return 0;
  const double t = std::ceil(std::ldexp(std::exp(-target), 64));
  if (!(t < 0x1p64)) return 0;
  auto threshold = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(t));
  // exp's last bit: step up until the stated ratio is within eps.
  for (int i = 0; i < 16 && LogRatio(threshold, q, slack) > epsilon; ++i) {
    threshold += std::max<std::uint64_t>(1, threshold >> 48);
  }
  return LogRatio(threshold, q, slack) <= epsilon ? threshold : 0;
}

// v = sign x p (x's direction scaled by UnitScaling's power of two),
// non-finite entries read as 0, sign e_1 for x = 0.
void Direction(std::span<const double> x, const UnitScaling& scaling, int sign,
               std::span<double> v) {
  const double f = static_cast<double>(sign) * scaling.factors[0];
  for (std::size_t i = 0; i < x.size(); ++i) {
    v[i] = std::isfinite(x[i]) ? (x[i] * f) * scaling.factors[1] : 0.0;
  }
  if (scaling.max_abs == 0) v[0] = sign;
}

}  // namespace

SeededPrivUnitG::SeededPrivUnitG(std::size_t dimension, double epsilon, double clip, double gamma,
                                 std::uint64_t off_cap_threshold)
    : VectorRandomizer(dimension, clip),
      epsilon_(epsilon),
      gamma_(gamma),
      off_cap_threshold_(off_cap_threshold),
      p_off_(OffCapAcceptance(off_cap_threshold)),
      max_trials_(MaxTrials(p_off_)) {
  // mu' = phi(gamma) (1 - p') / A, sigma' = 1 / mu'.
  sigma_ = acceptance() / (NormalDensity(gamma_) * (1 - p_off_));
}

Result<SeededPrivUnitG> SeededPrivUnitG::Create(std::size_t dimension, double epsilon,
                                                double clip) {
  VectorRandomizerConfig config;  // PrivUnitG's rules on d, eps and the clip
  config.dimension = dimension;
  config.epsilon = epsilon;
  config.clip = clip;
  if (const Status s = config.Validate(); !s.ok()) return Error{s.error()};
  const double gamma = PrivUnitGParameters::Optimal(epsilon, dimension).gamma;
  const double q = NormalUpperTail(gamma);
  const double trials = 1 / (q + std::exp(-epsilon) * (1 - q));
  std::ostringstream e;
  if (!(trials <= kMaxExpectedTrials)) {
    e << "privunitg-seed: at eps = " << epsilon << " a report takes " << trials
      << " trials of d normals on average (at most " << kMaxExpectedTrials
      << " allowed): lower eps or use privunitg";
    return Error{e.str()};
  }
  const std::uint64_t threshold = ThresholdFor(epsilon, q, CapShareSlackOf(dimension, gamma));
  if (threshold == 0) {
    e << "privunitg-seed: eps = " << epsilon << " is too small for the seed compression to"
      << " state (its slack is " << CapShareSlackOf(dimension, gamma) << " at d = " << dimension
      << "): raise eps or use privunitg";
    return Error{e.str()};
  }
  return SeededPrivUnitG(dimension, epsilon, clip, gamma, threshold);
}

SeededPrivUnitG SeededPrivUnitG::WithAcceptance(std::size_t dimension, double epsilon, double clip,
                                                double gamma, double p_off) {
  const double t = std::clamp(std::ceil(std::ldexp(p_off, 64)), 1.0, 0x1p63);
  return SeededPrivUnitG(dimension, epsilon, clip, gamma, static_cast<std::uint64_t>(t));
}

double SeededPrivUnitG::acceptance() const {
  const double q = NormalUpperTail(gamma_);
  return q + p_off_ * (1 - q);
}

double SeededPrivUnitG::cap_share_slack() const { return CapShareSlackOf(dimension(), gamma_); }

double SeededPrivUnitG::SquaredError(double norm) const {
  const double c2 = clip() * clip();
  return c2 * (sigma_ * sigma_ * static_cast<double>(dimension()) + sigma_ * gamma_) - norm * norm;
}

VectorRandomizer::ExactPrivacy SeededPrivUnitG::ImplementedPrivacy() const {
  return {LogRatio(off_cap_threshold_, NormalUpperTail(gamma_), cap_share_slack()), 0};
}

std::optional<VectorRandomizer::CapLaw> SeededPrivUnitG::Cap() const {
  const double a = acceptance();
  return CapLaw{clip() * sigma_ * gamma_, NormalUpperTail(gamma_) / a,
                CapShareAtOpposite(gamma_, 1 / a, p_off_ / a)};
}

double SeededPrivUnitG::CandidateDot(const SeedReport& seed, std::span<const double> v,
                                     std::span<double> chunk) const {
  CounterRng candidate(seed.hi, seed.lo);
  double total = 0;
  for (std::size_t start = 0; start < v.size(); start += kChunk) {
    const std::size_t n = std::min(kChunk, v.size() - start);
    FillStandardNormal(chunk.first(n), candidate);
    for (std::size_t b = 0; b < n; b += kBlock) {
      total += BlockDot(chunk.data() + b, v.data() + start + b, std::min(kBlock, n - b));
    }
  }
  return total;
}

SeedReport SeededPrivUnitG::Encode(std::span<const double> x, Rng& rng) const {
  const UnitScaling scaling = UnitScaling::Of(x);
  const int sign = SphereSign(x, scaling, clip(), false, rng);
  return EncodeScaled(x, scaling, sign, rng);
}

SeedReport SeededPrivUnitG::EncodeUnit(std::span<const double> v, int sign, Rng& rng) const {
  return EncodeScaled(v, UnitScaling::Of(v), sign, rng);
}

SeedReport SeededPrivUnitG::EncodeScaled(std::span<const double> x, const UnitScaling& scaling,
                                         int sign, Rng& rng) const {
  std::vector<double> v(dimension()), chunk(std::min(dimension(), kChunk));
  Direction(x, scaling, sign, v);
  const double threshold = gamma_ * std::sqrt(BlockedDot(v, v));
  for (std::uint64_t t = 0; t < max_trials_; ++t) {
    const SeedReport seed{rng(), rng()};
    const bool in_cap = CandidateDot(seed, v, chunk) >= threshold;
    const bool off_cap = rng() < off_cap_threshold_;
    if (in_cap || off_cap) return seed;
  }
  return {rng(), rng()};
}

void SeededPrivUnitG::Decode(const SeedReport& seed, std::span<double> out) const {
  DecodeUnit(seed, clip(), out);
}

void SeededPrivUnitG::DecodeUnit(const SeedReport& seed, double scale,
                                 std::span<double> out) const {
  CounterRng candidate(seed.hi, seed.lo);
  for (std::size_t start = 0; start < out.size(); start += kChunk) {
    FillStandardNormal(out.subspan(start, std::min(kChunk, out.size() - start)), candidate);
  }
  const double s = scale * sigma_;
  for (double& v : out) v *= s;
}

Status SeededPrivUnitG::DecodeSent(std::string_view bytes, std::span<double> out) const {
  const auto seed = SeedFromBytes(bytes);
  if (!seed) {
    return Error{"a privunitg-seed report is " + std::to_string(kSeedReportBytes) + " bytes, got " +
                 std::to_string(bytes.size())};
  }
  Decode(*seed, out);
  return {};
}

std::string SeedBytes(const SeedReport& seed) {
  std::string bytes;
  AppendWord(bytes, seed.hi);
  AppendWord(bytes, seed.lo);
  return bytes;
}

std::optional<SeedReport> SeedFromBytes(std::string_view bytes) {
  if (bytes.size() != kSeedReportBytes) return std::nullopt;
  return SeedReport{ReadWord(bytes, 0), ReadWord(bytes, 8)};
}

void SeededPrivUnitG::Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const {
  Decode(Encode(x, rng), out);
}

extern const VectorRandomizerKind kSeededPrivUnitGKind;
constinit const VectorRandomizerKind kSeededPrivUnitGKind = {
    "privunitg-seed",
    "PrivUnitG sent as a 16-byte seed (rejection sampling, Feldman & Talwar 2021): pure eps",
    {.generator_model = true},
    MadeByCreate<SeededPrivUnitG>,
    kSeededPrivUnitGFloatingPoint,
    "privunitg"};

}  // namespace fedldp
