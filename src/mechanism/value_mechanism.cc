#include "fedldp/mechanism/value_mechanism.h"

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

void ValueMechanism::SampleMany(std::span<const double> in, std::span<double> out,
                                Rng& rng) const {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = Sample(in[i], rng);
}

double ValueMechanism::Mass(double, double) const { return 0.0; }
double ValueMechanism::Density(double, double) const { return 0.0; }

namespace {

template <typename M>
Result<std::shared_ptr<const ValueMechanism>> Share(Result<M> made) {
  if (!made.ok()) return Error{made.error()};
  return std::shared_ptr<const ValueMechanism>(std::make_shared<M>(std::move(made).value()));
}

}  // namespace

std::vector<std::string> ValueMechanismNames() {
  return {"duchi", "pm", "hm", "laplace", "twopoint"};
}

Result<std::shared_ptr<const ValueMechanism>> MakeValueMechanism(const std::string& name,
                                                                 double epsilon, double center,
                                                                 double radius) {
  if (name == "duchi") return Share(TwoPointMechanism::CreateDuchi(epsilon));
  if (name == "twopoint") return Share(TwoPointMechanism::Create(epsilon, center, radius));
  if (name == "pm") return Share(PiecewiseMechanism::Create(epsilon));
  if (name == "hm") return Share(HybridMechanism::Create(epsilon));
  if (name == "laplace") return Share(LaplaceMechanism::Create(epsilon));
  return Error{"unknown mechanism '" + name + "' (expected duchi, pm, hm, laplace or twopoint)"};
}

}  // namespace fedldp
