// A check that cannot fail is not a check: each statistical check of the
// mechanism tests must reject a mechanism built with a wrong constant.
#include "testing/mutant.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fedldp/audit/mechanism_checks.h"
#include "fedldp/mechanism/value_mechanism.h"

namespace fedldp {
namespace {

using testing::Mutant;

constexpr double kEps = 2.0;
constexpr std::size_t kSamples = 200000;

std::shared_ptr<const ValueMechanism> Make(const std::string& name, double eps) {
  return MakeValueMechanism(name, eps, 0.3, 0.075).value();
}

// Factor by which a wrong constant scales the outputs: for the bounded
// mechanisms, an output bound computed with eps/2 instead of eps; for Laplace,
// an output multiplied by its sensitivity 2.
double WrongScale(const std::string& name) {
  if (name == "laplace") return 2.0;
  auto bound = [&](double eps) {
    const auto m = Make(name, eps);
    return (m->output_domain().hi - m->input_domain().center()) /
           (m->input_domain().hi - m->input_domain().center());
  };
  return bound(kEps / 2) / bound(kEps);
}

class MutantIsCaught : public ::testing::TestWithParam<std::string> {};

TEST_P(MutantIsCaught, ByTheRatioCheck) {
  // Samples and reports the law of 2 eps but claims eps.
  for (double factor : {2.0, 1.25}) {
    Mutant m(Make(GetParam(), factor * kEps), Make(GetParam(), factor * kEps), kEps);
    EXPECT_FALSE(audit::CheckPrivacyOf(m).pass) << "factor " << factor;
  }
}

TEST_P(MutantIsCaught, ByTheLawAndVarianceChecks) {
  // Samples with eps/2 or 2 eps, reports the law and variance of eps.
  for (double factor : {0.5, 2.0}) {
    Mutant m(Make(GetParam(), kEps), Make(GetParam(), factor * kEps), kEps);
    const double x = m.input_domain().hi;
    const auto samples = audit::Draw(m, x, kSamples, 7);
    EXPECT_FALSE(audit::CheckLawOf(samples, m, x).pass) << "factor " << factor;
    EXPECT_FALSE(audit::CheckVarianceOf(samples, m, x).pass) << "factor " << factor;
    // Both are unbiased: the mean check must still pass.
    EXPECT_TRUE(audit::CheckMeanOf(samples, m, x).pass) << "factor " << factor;
  }
}

TEST_P(MutantIsCaught, ByTheMeanCheck) {
  // Outputs scaled as if their bound had been computed with eps/2: biased.
  const double scale = WrongScale(GetParam());
  Mutant m(Make(GetParam(), kEps), Make(GetParam(), kEps), kEps, scale);
  const double x = m.input_domain().hi;
  const auto samples = audit::Draw(m, x, kSamples, 9);
  EXPECT_FALSE(audit::CheckMeanOf(samples, m, x).pass);
}

// Mechanisms with a bounded output domain (Laplace's is the real line).
class BoundedMutantIsCaught : public MutantIsCaught {};

TEST_P(BoundedMutantIsCaught, ByTheDomainCheck) {
  // Outputs of eps/2 reach beyond the output domain of eps.
  Mutant m(Make(GetParam(), kEps), Make(GetParam(), kEps / 2), kEps);
  const auto samples = audit::Draw(m, m.input_domain().hi, kSamples, 11);
  EXPECT_FALSE(audit::CheckDomainOf(samples, m).pass);
}

INSTANTIATE_TEST_SUITE_P(AllMechanisms, MutantIsCaught,
                         ::testing::Values("duchi", "pm", "hm", "laplace", "twopoint"));
INSTANTIATE_TEST_SUITE_P(BoundedMechanisms, BoundedMutantIsCaught,
                         ::testing::Values("duchi", "pm", "hm", "twopoint"));

}  // namespace
}  // namespace fedldp
