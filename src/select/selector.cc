#include "fedldp/select/selector.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "fedldp/base/bisect.h"
#include "fedldp/base/limits.h"
#include "fedldp/base/names.h"
#include "fedldp/select/ranking.h"
#include "fedldp/select/selectors.h"

namespace fedldp {

void Selector::CheckSize(std::span<const double> r) const {
  if (r.size() != d_) {
    throw std::invalid_argument("selector " + name() + " was built for d = " + std::to_string(d_) +
                                " but got a vector of " + std::to_string(r.size()));
  }
}

std::int64_t Selector::Select(std::span<const double> r, Rng& rng) const {
  CheckSize(r);
  const std::int64_t position = SamplePosition(rng);
  if (position == kNone) return kNone;
  return static_cast<std::int64_t>(
      RandomElementAtPosition(r, static_cast<std::size_t>(position), rng));
}

std::vector<double> Selector::Probabilities(std::span<const double> r) const {
  CheckSize(r);
  const std::vector<std::size_t> ranking = Ranking(r);
  const auto groups = TieGroups(r, ranking);
  // A member of a tie group is output with the group's total position
  // probability, shared equally.
  std::vector<double> p(d_);
  for (std::size_t m = 0; m < d_; ++m) {
    const auto [first, last] = groups[m];
    double total = 0;
    for (std::size_t q = first; q < last; ++q) total += PositionProbability(q);
    p[ranking[m]] = total / static_cast<double>(last - first);
  }
  return p;
}

double Selector::WorstCaseRatio() const {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (std::size_t m = 0; m < d_; ++m) {
    const double p = PositionProbability(m);
    lo = std::fmin(lo, p);
    hi = std::fmax(hi, p);
  }
  return lo > 0 ? hi / lo : std::numeric_limits<double>::infinity();
}

namespace {

Status CheckShape(std::size_t d, std::size_t k) {
  FEDLDP_RETURN_IF_ERROR(CheckCount(kDimension, d));
  if (k < 1 || k > d) {
    return Error{"k must be in [1, d] = [1, " + std::to_string(d) + "], got " + std::to_string(k)};
  }
  return {};
}

}  // namespace

namespace {

constexpr EnumName<SelectorKind> kSelectorNames[] = {
    {SelectorKind::kExp, "exp"},
    {SelectorKind::kPe, "pe"},
    {SelectorKind::kPePublished, "pe-published"},
    {SelectorKind::kPs, "ps"},
    {SelectorKind::kTopK, "topk"},
    {SelectorKind::kUniform, "uniform"},
};

}  // namespace

std::string_view SelectorName(SelectorKind kind) { return NameIn(kSelectorNames, kind); }

Result<SelectorKind> ParseSelector(std::string_view name) {
  return ParseIn(kSelectorNames, name, "selector");
}

std::vector<std::string> SelectorNames() { return NamesIn(kSelectorNames); }

Result<std::shared_ptr<const Selector>> MakeSelector(SelectorKind kind, double epsilon,
                                                     std::size_t d, std::size_t k) {
  FEDLDP_RETURN_IF_ERROR(CheckShape(d, k));
  switch (kind) {
    case SelectorKind::kExp:
      return ShareAs<Selector>(ExponentialSelection::Create(epsilon, d));
    case SelectorKind::kPe:
      return ShareAs<Selector>(PerturbedEncoding::Create(epsilon, d, k));
    case SelectorKind::kPePublished:
      return ShareAs<Selector>(PerturbedEncoding::CreatePublished(epsilon, d, k));
    case SelectorKind::kPs:
      return ShareAs<Selector>(PerturbedSampling::Create(epsilon, d, k));
    case SelectorKind::kTopK:
      return ShareAs<Selector>(TopKSelection::Create(d, k));
    case SelectorKind::kUniform:
      return ShareAs<Selector>(UniformSelection::Create(d));
  }
  return Error{"unknown selector"};
}

Result<std::shared_ptr<const Selector>> MakeSelector(std::string_view name, double epsilon,
                                                     std::size_t d, std::size_t k) {
  auto kind = ParseSelector(name);
  if (!kind.ok()) return Error{kind.error()};
  return MakeSelector(*kind, epsilon, d, k);
}

// ---- EXP ----

Result<ExponentialSelection> ExponentialSelection::Create(double epsilon, std::size_t d) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  FEDLDP_RETURN_IF_ERROR(CheckShape(d, 1));
  if (d == 1) return ExponentialSelection(epsilon, d, RationalRate{1, 1});  // unused
  auto rate = RationalRateBelow(epsilon / static_cast<double>(d - 1));
  if (!rate.ok()) return Error{"exp: " + rate.error()};
  return ExponentialSelection(epsilon, d, *rate);
}

ExponentialSelection::ExponentialSelection(double epsilon, std::size_t d, RationalRate rate)
    : Selector(d, 1), epsilon_(epsilon), rate_(rate) {
  const double r = rate_.value();
  log_norm_ = std::log(-std::expm1(-r)) - std::log(-std::expm1(-r * static_cast<double>(d)));
}

double ExponentialSelection::PositionProbability(std::size_t position) const {
  if (dimension() == 1) return 1.0;
  return std::exp(log_norm_ - rate_.value() * static_cast<double>(position));
}

std::int64_t ExponentialSelection::SamplePosition(Rng& rng) const {
  if (dimension() == 1) return 0;
  return static_cast<std::int64_t>(DiscreteGeometric(rng, rate_.s, rate_.t) % dimension());
}

// ---- PE ----

namespace {

// The flip probability used for eps': Q / 2^53 with Q = ceil(2^53 / (1 + e^eps'))
// (at least 1), so that it and 1 - Q / 2^53 are exact doubles, every formula
// below uses the probabilities the draws realise, and the draws are exact
// (BinomialDyadic).
constexpr int kFlipBits = 53;
std::uint64_t FlipNumerator(double flip_epsilon) {
  return static_cast<std::uint64_t>(
      std::max(1.0, std::ceil(0x1.0p53 / (1 + std::exp(flip_epsilon)))));
}

}  // namespace

double PerturbedEncoding::RatioFor(double flip_epsilon, std::size_t d, std::size_t k) {
  if (k == d) return 1.0;
  const double q = std::ldexp(static_cast<double>(FlipNumerator(flip_epsilon)), -kFlipBits);
  const double p = 1 - q;
  const double in = p * ExpectedInverseCount(k - 1, p, d - k, q);
  const double out = q * ExpectedInverseCount(k, p, d - k - 1, q);
  return in / out;
}

Result<PerturbedEncoding> PerturbedEncoding::Create(double epsilon, std::size_t d, std::size_t k) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  FEDLDP_RETURN_IF_ERROR(CheckShape(d, k));
  // The ratio grows from 1 (eps' = 0) past e^eps (eps' = eps). Bisection keeps
  // `lo` on the safe side, so the result meets the bound even where rounding
  // makes the ratio wobble; the target sits 1e-10 below e^eps, far above the
  // quadrature's ~1e-14 error, so the true ratio is below e^eps too.
  const double target = std::exp(epsilon) * (1 - 1e-10);
  double lo = 0, hi = epsilon;
  if (RatioFor(hi, d, k) <= target) {
    lo = hi;  // only when k == d
  } else {
    lo = Bisect(
             lo, hi, [&](double e) { return RatioFor(e, d, k) > target; }, 0, 1e-15 * epsilon)
             .lo;
  }
  PerturbedEncoding pe(lo, d, k, false);
  pe.guarantee_ = epsilon;
  return pe;
}

Result<PerturbedEncoding> PerturbedEncoding::CreatePublished(double epsilon, std::size_t d,
                                                             std::size_t k) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  FEDLDP_RETURN_IF_ERROR(CheckShape(d, k));
  return PerturbedEncoding(epsilon, d, k, true);
}

PerturbedEncoding::PerturbedEncoding(double flip_epsilon, std::size_t d, std::size_t k,
                                     bool published)
    : Selector(d, k), flip_numerator_(FlipNumerator(flip_epsilon)), published_(published) {
  flip_ = std::ldexp(static_cast<double>(flip_numerator_), -kFlipBits);
  keep_ = 1 - flip_;
  flip_epsilon_ = std::log(keep_ / flip_);  // what the rounding to 2^-53 leaves of eps
  in_ = keep_ * ExpectedInverseCount(k - 1, keep_, d - k, flip_);
  out_ = k < d ? flip_ * ExpectedInverseCount(k, keep_, d - k - 1, flip_) : 0.0;
  // Empty set: every Top-k bit flipped off, no other bit flipped on.
  none_ = std::exp(static_cast<double>(k) * std::log(flip_) +
                   static_cast<double>(d - k) * std::log(keep_));
  guarantee_ = k < d ? std::log(in_ / out_) : 0.0;
}

double PerturbedEncoding::PositionProbability(std::size_t position) const {
  return position < k() ? in_ : out_;
}

std::int64_t PerturbedEncoding::SamplePosition(Rng& rng) const {
  // |S and Top-k| ~ Bin(k, p) and |S minus Top-k| ~ Bin(d - k, 1 - p); given
  // their sizes both parts are uniform subsets, so a uniform member of S is a
  // uniform member of the Top-k with probability A / (A + B), else a uniform
  // member of the rest. Same law as Algorithm 3, with O(1) expected draws.
  const std::uint64_t keep = (std::uint64_t{1} << kFlipBits) - flip_numerator_;
  const std::uint64_t a = BinomialDyadic(rng, k(), keep, kFlipBits);
  const std::uint64_t b = BinomialDyadic(rng, dimension() - k(), flip_numerator_, kFlipBits);
  if (a + b == 0) return kNone;
  if (UniformIndex(rng, a + b) < a) return static_cast<std::int64_t>(UniformIndex(rng, k()));
  return static_cast<std::int64_t>(k() + UniformIndex(rng, dimension() - k()));
}

// ---- PS ----

Result<PerturbedSampling> PerturbedSampling::Create(double epsilon, std::size_t d, std::size_t k) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  FEDLDP_RETURN_IF_ERROR(CheckShape(d, k));
  // c >= 2^52: the ratio within 2^-52 of e^eps, as a double would have it.
  auto ratio = MakeIntegerExpRatio(epsilon, 52);
  if (!ratio.ok()) return Error{"ps: " + ratio.error()};
  return PerturbedSampling(epsilon, d, k, *ratio);
}

PerturbedSampling::PerturbedSampling(double epsilon, std::size_t d, std::size_t k,
                                     IntegerExpRatio ratio)
    : Selector(d, k), epsilon_(epsilon), shift_(ratio.shift), extra_(ratio.extra) {
  total_ = (static_cast<Uint128>(d) << shift_) + extra_ * k;
  const auto total = static_cast<long double>(total_);
  const long double b = std::ldexp(1.0L, shift_);
  in_ = static_cast<double>((b + static_cast<long double>(extra_)) / total);
  out_ = static_cast<double>(b / total);
}

double PerturbedSampling::PositionProbability(std::size_t position) const {
  return position < k() ? in_ : out_;
}

std::int64_t PerturbedSampling::SamplePosition(Rng& rng) const {
  if (k() == dimension()) return static_cast<std::int64_t>(UniformIndex(rng, k()));
  const Uint128 u = UniformIndex128(rng, total_);
  if (u < (static_cast<Uint128>(dimension()) << shift_)) {
    return static_cast<std::int64_t>(u >> shift_);
  }
  return static_cast<std::int64_t>(UniformIndex(rng, k()));
}

// ---- Top-k and uniform ----

Result<TopKSelection> TopKSelection::Create(std::size_t d, std::size_t k) {
  FEDLDP_RETURN_IF_ERROR(CheckShape(d, k));
  return TopKSelection(d, k);
}

double TopKSelection::epsilon() const {
  return k() == dimension() ? 0.0 : std::numeric_limits<double>::infinity();
}

double TopKSelection::PositionProbability(std::size_t position) const {
  return position < k() ? 1.0 / static_cast<double>(k()) : 0.0;
}

std::int64_t TopKSelection::SamplePosition(Rng& rng) const {
  return static_cast<std::int64_t>(UniformIndex(rng, k()));
}

Result<UniformSelection> UniformSelection::Create(std::size_t d) {
  FEDLDP_RETURN_IF_ERROR(CheckShape(d, 1));
  return UniformSelection(d);
}

std::int64_t UniformSelection::SamplePosition(Rng& rng) const {
  return static_cast<std::int64_t>(UniformIndex(rng, dimension()));
}

std::int64_t UniformSelection::Select(std::span<const double> r, Rng& rng) const {
  CheckSize(r);
  return SamplePosition(rng);  // a uniform position of any ranking is a uniform index
}

}  // namespace fedldp
