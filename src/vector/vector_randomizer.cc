#include "fedldp/vector/vector_randomizer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>

#include "fedldp/base/checked.h"
#include "fedldp/base/names.h"

namespace fedldp {
namespace {

// The names of the randomizers that take k.
std::vector<std::string> TakingK() {
  std::vector<std::string> names;
  for (const VectorRandomizerKind* k : VectorRandomizerKinds()) {
    if (k->traits.takes_k) names.emplace_back(k->name);
  }
  return names;
}

const VectorRandomizerKind* Find(std::string_view name) {
  for (const VectorRandomizerKind* k : VectorRandomizerKinds()) {
    if (k->name == name) return k;
  }
  return nullptr;
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

Status VectorRandomizer::DrawAndCheckSent(std::span<const double> x, Rng& rng) const {
  return ValidateReport(Randomize(x, rng));
}

Status VectorRandomizer::DecodeSent(std::string_view, std::span<double>) const {
  return Error{name() + " sends its d values, not bytes"};
}

namespace {

// a where `mask` is all ones, b where it is 0: a select no compiler turns
// into a branch.
double Select(std::uint64_t mask, double a, double b) {
  return std::bit_cast<double>((std::bit_cast<std::uint64_t>(a) & mask) |
                               (std::bit_cast<std::uint64_t>(b) & ~mask));
}

std::uint64_t MaskOf(bool b) { return 0 - static_cast<std::uint64_t>(b); }

}  // namespace

double VectorRandomizer::ClipInto(std::span<const double> x, std::span<double> out) const {
  // The same work for every input (issue 39: the time of a report must not
  // say whether x is 0, or inside the ball): both branches of the scaling
  // are computed and selected by masks.
  double maxabs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = Select(MaskOf(std::isfinite(x[i])), x[i], 0.0);
    maxabs = std::max(maxabs, std::fabs(out[i]));
  }
  // The norm of out / m, so that no square over- or underflows (m = 1 at 0).
  const double m = Select(MaskOf(maxabs > 0), maxabs, 1.0);
  double sumsq = 0;
  for (double v : out) sumsq += (v / m) * (v / m);
  const double norm = m * std::sqrt(sumsq);
  const std::uint64_t inside = MaskOf(norm <= clip_);
  const double scale = clip_ / Select(inside, 1.0, norm);
  for (double& v : out) v = Select(inside, v, (v / m) * (scale * m));
  return Select(inside, norm, clip_);
}

std::size_t DefaultProjection(std::size_t dimension) {
  return std::min<std::size_t>(dimension, 1000);
}

Status VectorRandomizerConfig::Validate() const {
  const std::string name(mechanism.name());
  const VectorRandomizerTraits& traits = mechanism.traits();
  FEDLDP_RETURN_IF_ERROR(CheckCount(kDimension, dimension));
  std::ostringstream e;
  if (!(std::isfinite(epsilon) && epsilon > 0 && epsilon <= 100)) {
    e << "epsilon must be a finite number in (0, 100], got " << epsilon;
  } else if (!(std::isfinite(clip) && clip > 0 && clip <= 1e100)) {
    e << "the clip norm must be a finite number in (0, 1e100], got " << clip;
  } else if (traits.needs_delta && !(delta > 0 && delta < 1)) {
    e << name << " needs a delta in (0, 1), got " << delta;
  } else if (!traits.needs_delta && delta != 0) {
    e << name << " is pure eps-LDP and takes no delta (got " << delta << ")";
  } else if (traits.takes_k && k > dimension) {
    e << "k must be in [1, d = " << dimension << "], got " << k;
  } else if (!traits.takes_k && k != 0) {
    e << "k applies to " << Listed(TakingK()) << " only, not to " << name;
  } else {
    return {};
  }
  return Error{e.str()};
}

namespace {

// A report's scale is checked by what the parameters imply (issue 41).
Status CheckReportScale(const VectorRandomizerConfig& c, const VectorRandomizer& r) {
  // A grid's step below the normal doubles loses the grid's exactness (the
  // step of laplace-l1 at clip 4.9e-324 was 0, every report 0).
  if (const auto grid = r.Grid(); grid && !std::isnormal(grid->step)) {
    std::ostringstream e;
    e << c.mechanism.name() << ": the clip " << c.clip
      << " is too small: the reports' grid step falls below the smallest normal double "
      << std::numeric_limits<double>::min() << "; raise the clip";
    return Error{e.str()};
  }
  // Its error's square root bounds how far a report strays, and sums of
  // reports must not overflow (PrivUnitG at eps 1e-300 reported 1e304).
  const double error = r.WorstCaseSquaredError();
  if (!(error <= kLargestReport * kLargestReport)) {
    std::ostringstream e;
    // The error itself may not be a number there (eps 1e-300 gave inf,
    // 5e-324 NaN): said only when it is one.
    e << c.mechanism.name() << ": at eps = " << c.epsilon << " and clip " << c.clip
      << " a report strays ";
    if (std::isfinite(error)) e << std::sqrt(error) << " ";
    e << "from its input (root mean square, at worst) past 2^450, where sums of reports "
         "overflow a double: raise epsilon or lower the clip";
    return Error{e.str()};
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<VectorRandomizer>> MakeVectorRandomizer(const VectorRandomizerConfig& c) {
  FEDLDP_RETURN_IF_ERROR(c.Validate());
  auto made = c.mechanism.kind().make(c);
  if (!made.ok()) return made;
  FEDLDP_RETURN_IF_ERROR(CheckReportScale(c, **made));
  return made;
}

const VectorRandomizerKind& VectorMechanism::kind() const { return *Find(name_); }

const VectorRandomizerTraits& VectorMechanism::traits() const { return kind().traits; }

std::string_view VectorMechanismName(VectorMechanism m) { return m.name(); }

Result<VectorMechanism> ParseVectorMechanism(std::string_view name) {
  const VectorRandomizerKind* k = Find(name);
  if (k == nullptr) {
    return Error{"unknown vector mechanism '" + std::string(name) + "' (expected " +
                 Listed(VectorMechanismNames(), " or ") + ")"};
  }
  return VectorMechanism(k->name);
}

std::vector<std::string> VectorMechanismNames() {
  std::vector<std::string> names;
  for (const VectorRandomizerKind* k : VectorRandomizerKinds()) names.emplace_back(k->name);
  return names;
}

std::string FloatingPointStatement(std::optional<VectorMechanism> vector, std::string_view also) {
  if (vector && !vector->kind().floating_point.empty()) {
    return std::string(vector->kind().floating_point);
  }
  return "floating point: every value reported is fixed before any input is seen (two atoms "
         "or a public grid) and drawn with exact probabilities" +
         std::string(also) +
         ": no report rules an input out, and the ratio bound holds of the program as it "
         "runs (docs/methods.md)";
}

}  // namespace fedldp
