#include "fedldp/vector/vector_randomizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "fedldp/base/names.h"
#include "fedldp/vector/baselines.h"
#include "fedldp/vector/fastprojunit.h"
#include "fedldp/vector/privunitg.h"

namespace fedldp {
namespace {

constexpr EnumName<VectorMechanism> kNames[] = {
    {VectorMechanism::kPrivUnitG, "privunitg"},
    {VectorMechanism::kFastProjUnit, "fastprojunit"},
    {VectorMechanism::kFastProjUnitCorr, "fastprojunit-corr"},
    {VectorMechanism::kGaussian, "gaussian"},
    {VectorMechanism::kGaussianClassic, "gaussian-classic"},
    {VectorMechanism::kDuchi, "duchi"},
};

bool IsGaussian(VectorMechanism m) {
  return m == VectorMechanism::kGaussian || m == VectorMechanism::kGaussianClassic;
}
bool IsProjected(VectorMechanism m) {
  return m == VectorMechanism::kFastProjUnit || m == VectorMechanism::kFastProjUnitCorr;
}

template <typename T>
Result<std::unique_ptr<VectorRandomizer>> Own(Result<T> made) {
  if (!made.ok()) return Error{made.error()};
  return std::unique_ptr<VectorRandomizer>(std::make_unique<T>(std::move(made).value()));
}

}  // namespace

std::vector<double> VectorRandomizer::Randomize(std::span<const double> x, Rng& rng) const {
  std::vector<double> out(dimension());
  Randomize(x, out, rng);
  return out;
}

Status VectorRandomizer::ValidateReport(std::span<const double> report) const {
  if (report.size() != dimension())
    return Error{"a " + name() + " report has " + std::to_string(report.size()) +
                 " entries, expected " + std::to_string(dimension())};
  for (double v : report)
    if (!std::isfinite(v)) return Error{"a " + name() + " report has a non-finite entry"};
  if (const auto grid = Grid()) {
    for (double v : report)
      if (!grid->IndexOf(v)) return Error{"a " + name() + " report has an entry off its grid"};
  }
  return {};
}

double VectorRandomizer::ClipInto(std::span<const double> x, std::span<double> out) const {
  double maxabs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = std::isfinite(x[i]) ? x[i] : 0.0;
    maxabs = std::max(maxabs, std::fabs(out[i]));
  }
  if (maxabs == 0) return 0;
  // The norm of out / maxabs, so that no square over- or underflows.
  double sumsq = 0;
  for (double v : out) sumsq += (v / maxabs) * (v / maxabs);
  const double norm = maxabs * std::sqrt(sumsq);
  if (norm <= clip_) return norm;
  const double scale = clip_ / norm;
  for (double& v : out) v = (v / maxabs) * (scale * maxabs);
  return clip_;
}

std::size_t DefaultProjection(std::size_t dimension) {
  return std::min<std::size_t>(dimension, 1000);
}

Status VectorRandomizerConfig::Validate() const {
  const std::string name(VectorMechanismName(mechanism));
  std::ostringstream e;
  if (dimension < 1 || dimension > kMaxVectorDimension) {
    e << "the dimension must be in [1, " << kMaxVectorDimension << "], got " << dimension;
  } else if (!(std::isfinite(epsilon) && epsilon > 0 && epsilon <= 100)) {
    e << "epsilon must be a finite number in (0, 100], got " << epsilon;
  } else if (!(std::isfinite(clip) && clip > 0 && clip <= 1e100)) {
    e << "the clip norm must be a finite number in (0, 1e100], got " << clip;
  } else if (IsGaussian(mechanism) && !(delta > 0 && delta < 1)) {
    e << name << " needs a delta in (0, 1), got " << delta;
  } else if (!IsGaussian(mechanism) && delta != 0) {
    e << name << " is pure eps-LDP and takes no delta (got " << delta << ")";
  } else if (IsProjected(mechanism) && k > dimension) {
    e << "k must be in [1, d = " << dimension << "], got " << k;
  } else if (!IsProjected(mechanism) && k != 0) {
    e << "k applies to fastprojunit only, not to " << name;
  } else {
    return {};
  }
  return Error{e.str()};
}

Result<std::unique_ptr<VectorRandomizer>> MakeVectorRandomizer(const VectorRandomizerConfig& c) {
  if (const Status s = c.Validate(); !s.ok()) return Error{s.error()};
  switch (c.mechanism) {
    case VectorMechanism::kPrivUnitG:
      return Own(PrivUnitG::Create(c.dimension, c.epsilon, c.clip));
    case VectorMechanism::kFastProjUnit:
    case VectorMechanism::kFastProjUnitCorr:
      return Own(FastProjUnit::Create(
          c.dimension, c.epsilon, c.clip, c.k == 0 ? DefaultProjection(c.dimension) : c.k,
          c.mechanism == VectorMechanism::kFastProjUnitCorr, c.public_seed));
    case VectorMechanism::kGaussian:
    case VectorMechanism::kGaussianClassic:
      return Own(GaussianRandomizer::Create(c.dimension, c.epsilon, c.delta, c.clip,
                                            c.mechanism == VectorMechanism::kGaussianClassic));
    case VectorMechanism::kDuchi:
      return Own(DuchiVectorRandomizer::Create(c.dimension, c.epsilon, c.clip));
  }
  return Error{"unknown vector mechanism"};
}

std::string_view VectorMechanismName(VectorMechanism m) { return NameIn(kNames, m); }

Result<VectorMechanism> ParseVectorMechanism(std::string_view name) {
  return ParseIn(kNames, name, "vector mechanism");
}

std::vector<std::string> VectorMechanismNames() { return NamesIn(kNames); }

std::string FloatingPointStatement(std::optional<VectorMechanism> vector, std::string_view also) {
  if (vector == VectorMechanism::kGaussian || vector == VectorMechanism::kGaussianClassic) {
    return "floating point: every value reported is a point of a public grid fixed before any "
           "input is seen, the nearest to x + sigma Z with Z an exact normal and the "
           "rounding decided exactly: no report rules an input out, and delta includes the "
           "proven allowance (1 + e^eps) d 2^-218 of the sampler's 256-bit cap "
           "(docs/methods.md)";
  }
  if (vector == VectorMechanism::kPrivUnitG || vector == VectorMechanism::kFastProjUnit ||
      vector == VectorMechanism::kFastProjUnitCorr) {
    return "floating point: every value reported is a point of a public grid fixed before any "
           "input is seen, the nearest to PrivUnitG's real report with every normal drawn "
           "exactly and the rounding decided exactly: no report rules an input out; the law "
           "as run is within a proven total variation of the ideal one (below 2^-194 for d <= "
           "2^24 at eps <= 30), which adds (1 + e^eps) times it to a report's delta: the "
           "accountant's deltas include it (account run --report-deviation; docs/methods.md)";
  }
  return "floating point: every value reported is fixed before any input is seen (two atoms "
         "or a public grid) and drawn with exact probabilities" +
         std::string(also) +
         ": no report rules an input out, and the ratio bound holds of the program as it "
         "runs (docs/methods.md)";
}

}  // namespace fedldp
