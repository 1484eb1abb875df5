#include "fedldp/mechanism/value_mechanism.h"

#include <algorithm>
#include <cmath>

#include "fedldp/mechanism/hybrid.h"
#include "fedldp/mechanism/laplace.h"
#include "fedldp/mechanism/piecewise.h"
#include "fedldp/mechanism/two_point.h"

namespace fedldp {

double ValueMechanism::Clip(double x) const {
  const Interval d = input_domain();
  if (std::isnan(x)) return d.center();
  return x < d.lo ? d.lo : (x > d.hi ? d.hi : x);
}

void ValueMechanism::SampleMany(std::span<const double> in, std::span<double> out, Rng& rng) const {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = Sample(in[i], rng);
}

double ValueMechanism::Mass(double, double) const { return 0.0; }

double ValueMechanism::Likelihood(double y, double x) const {
  const auto atoms = Atoms();
  const bool atom = std::find(atoms.begin(), atoms.end(), y) != atoms.end();
  return atom ? Mass(y, x) : Density(y, x);
}
double ValueMechanism::Density(double, double) const { return 0.0; }

std::vector<std::string> ValueMechanismNames() {
  return {"duchi", "pm", "hm", "laplace", "twopoint"};
}

Result<std::shared_ptr<const ValueMechanism>> MakeValueMechanism(const std::string& name,
                                                                 double epsilon, double center,
                                                                 double radius) {
  if (name == "duchi") return ShareAs<ValueMechanism>(TwoPointMechanism::CreateDuchi(epsilon));
  if (name == "twopoint")
    return ShareAs<ValueMechanism>(TwoPointMechanism::Create(epsilon, center, radius));
  if (name == "pm") return ShareAs<ValueMechanism>(PiecewiseMechanism::Create(epsilon));
  if (name == "hm") return ShareAs<ValueMechanism>(HybridMechanism::Create(epsilon));
  if (name == "laplace") return ShareAs<ValueMechanism>(LaplaceMechanism::Create(epsilon));
  return Error{"unknown mechanism '" + name + "' (expected duchi, pm, hm, laplace or twopoint)"};
}

}  // namespace fedldp
