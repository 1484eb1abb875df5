// Mechanisms built with a wrong constant, to show that the checks can fail.
#ifndef FEDLDP_TESTS_TESTING_MUTANT_H_
#define FEDLDP_TESTS_TESTING_MUTANT_H_

#include <memory>

#include "fedldp/mechanism/value_mechanism.h"

namespace fedldp::testing {

// A mechanism built with a wrong constant, for showing that each check can
// fail: it claims `claimed_epsilon`, reports `math`'s law, variance and mean,
// and samples from `sampler`, scaling outputs about the input domain's centre
// by `output_scale`.
class Mutant final : public ValueMechanism {
 public:
  Mutant(std::shared_ptr<const ValueMechanism> math, std::shared_ptr<const ValueMechanism> sampler,
         double claimed_epsilon, double output_scale = 1.0)
      : math_(std::move(math)),
        sampler_(std::move(sampler)),
        claimed_epsilon_(claimed_epsilon),
        output_scale_(output_scale) {}

  std::string name() const override { return "mutant-" + math_->name(); }
  double epsilon() const override { return claimed_epsilon_; }
  Interval input_domain() const override { return math_->input_domain(); }
  Interval output_domain() const override { return math_->output_domain(); }
  bool CanOutput(double y) const override { return math_->CanOutput(y); }
  std::optional<OutputGrid> Grid() const override { return math_->Grid(); }
  double Sample(double x, Rng& rng) const override {
    const double c = input_domain().center();
    return c + output_scale_ * (sampler_->Sample(x, rng) - c);
  }
  double Mean(double x) const override { return math_->Mean(x); }
  double Variance(double x) const override { return math_->Variance(x); }
  std::vector<double> Atoms() const override { return math_->Atoms(); }
  double Mass(double y, double x) const override { return math_->Mass(y, x); }
  double Density(double y, double x) const override { return math_->Density(y, x); }
  double Cdf(double y, double x) const override { return math_->Cdf(y, x); }

 private:
  std::shared_ptr<const ValueMechanism> math_, sampler_;
  double claimed_epsilon_, output_scale_;
};

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_MUTANT_H_
