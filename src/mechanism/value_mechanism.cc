#include "fedldp/mechanism/value_mechanism.h"

#include <algorithm>
#include <cmath>

#include "fedldp/base/names.h"
#include "fedldp/mechanism/hybrid.h"
#include "fedldp/mechanism/laplace.h"
#include "fedldp/mechanism/piecewise.h"
#include "fedldp/mechanism/two_point.h"

namespace fedldp {

double ValueMechanism::Clip(double x) const {
  // Without a branch on x, so that clipping takes the same time whether or
  // not the input was outside the domain (issue 39): std::min and std::max
  // compile to minsd/maxsd. For NaN, min(hi, max(lo, NaN)) = lo and
  // max(lo, min(hi, NaN)) = hi, so the mean is the centre; for any other x
  // both are the clipped x and (a + a) / 2 = a exactly.
  const Interval d = input_domain();
  const double up = std::min(d.hi, std::max(d.lo, x));
  const double down = std::max(d.lo, std::min(d.hi, x));
  return 0.5 * (up + down);
}

void ValueMechanism::SampleMany(std::span<const double> in, std::span<double> out, Rng& rng) const {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = Sample(in[i], rng);
}

double ValueMechanism::Mass(double, double) const { return 0.0; }

std::optional<std::int64_t> OutputGrid::IndexOf(double y) const {
  const double q = y / step;
  // Also false for NaN and +-inf.
  if (!(q >= static_cast<double>(lo) - 2 && q <= static_cast<double>(hi) + 2)) return std::nullopt;
  // Value() is increasing in m, so y can only be the value of an integer next to q.
  const auto near = static_cast<std::int64_t>(std::llround(q));
  for (std::int64_t m = near - 1; m <= near + 1; ++m) {
    if (m >= lo && m <= hi && Value(m) == y) return m;
  }
  return std::nullopt;
}

bool ValueMechanism::OnPublicSupport(double y) const {
  const auto atoms = Atoms();
  if (std::find(atoms.begin(), atoms.end(), y) != atoms.end()) return true;
  const auto grid = Grid();
  return grid && grid->IndexOf(y).has_value();
}

double ValueMechanism::Likelihood(double y, double x) const {
  return OnPublicSupport(y) ? Mass(y, x) : Density(y, x);
}
double ValueMechanism::Density(double, double) const { return 0.0; }

namespace {

constexpr EnumName<ValueMechanismKind> kMechanismNames[] = {
    {ValueMechanismKind::kDuchi, "duchi"},       {ValueMechanismKind::kPiecewise, "pm"},
    {ValueMechanismKind::kHybrid, "hm"},         {ValueMechanismKind::kLaplace, "laplace"},
    {ValueMechanismKind::kTwoPoint, "twopoint"},
};

}  // namespace

std::string_view ValueMechanismName(ValueMechanismKind kind) {
  return NameIn(kMechanismNames, kind);
}

Result<ValueMechanismKind> ParseValueMechanism(std::string_view name) {
  return ParseIn(kMechanismNames, name, "mechanism");
}

std::vector<std::string> ValueMechanismNames() { return NamesIn(kMechanismNames); }

Result<std::shared_ptr<const ValueMechanism>> MakeValueMechanism(ValueMechanismKind kind,
                                                                 double epsilon, double center,
                                                                 double radius) {
  switch (kind) {
    case ValueMechanismKind::kDuchi:
      return ShareAs<ValueMechanism>(TwoPointMechanism::CreateDuchi(epsilon));
    case ValueMechanismKind::kTwoPoint:
      return ShareAs<ValueMechanism>(TwoPointMechanism::Create(epsilon, center, radius));
    case ValueMechanismKind::kPiecewise:
      return ShareAs<ValueMechanism>(PiecewiseMechanism::Create(epsilon));
    case ValueMechanismKind::kHybrid:
      return ShareAs<ValueMechanism>(HybridMechanism::Create(epsilon));
    case ValueMechanismKind::kLaplace:
      return ShareAs<ValueMechanism>(LaplaceMechanism::Create(epsilon));
  }
  return Error{"unknown mechanism"};
}

Result<std::shared_ptr<const ValueMechanism>> MakeValueMechanism(std::string_view name,
                                                                 double epsilon, double center,
                                                                 double radius) {
  auto kind = ParseValueMechanism(name);
  if (!kind.ok()) return Error{kind.error()};
  return MakeValueMechanism(*kind, epsilon, center, radius);
}

}  // namespace fedldp
