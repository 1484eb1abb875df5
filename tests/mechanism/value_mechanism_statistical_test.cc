// Every value mechanism, for every eps in {0.1, 0.5, 1, 2, 4, 8}, checked
// against its mathematics: unbiasedness, variance against the closed form,
// output domain, public support (issue 39), the exact law (chi-square) and the
// eps-LDP ratio bound.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "fedldp/audit/mechanism_checks.h"
#include "fedldp/mechanism/value_mechanism.h"
#include "testing/mutant.h"

namespace fedldp {
namespace {

using audit::AdversarialInputs;

constexpr std::size_t kSamples = 200000;

std::shared_ptr<const ValueMechanism> Make(const std::string& name, double eps) {
  // LDP-FL's range for MNIST weights, off-centre to catch sign or centre slips.
  auto made = MakeValueMechanism(name, eps, /*center=*/0.3, /*radius=*/0.075);
  EXPECT_TRUE(made.ok()) << made.error();
  return made.value();
}

class MechanismMath : public ::testing::TestWithParam<std::tuple<std::string, double>> {};

TEST_P(MechanismMath, UnbiasedWithClosedFormVarianceAndExactLaw) {
  const auto [name, eps] = GetParam();
  const auto m = Make(name, eps);
  std::uint64_t seed = 1;
  for (double x : AdversarialInputs(*m)) {
    const auto samples = audit::Draw(*m, x, kSamples, seed++);
    SCOPED_TRACE("x = " + std::to_string(x));
    const auto mean = audit::CheckMeanOf(samples, *m, x);
    EXPECT_TRUE(mean.pass) << mean.reason;
    // The implemented mean is the clipped input, to the 2^-31 discretisation
    // of the two-point threshold.
    EXPECT_NEAR(m->Mean(x), m->Clip(x), 1e-9 * (1 + std::fabs(m->output_domain().hi)));
    const auto variance = audit::CheckVarianceOf(samples, *m, x);
    EXPECT_TRUE(variance.pass) << variance.reason;
    const auto domain = audit::CheckDomainOf(samples, *m);
    EXPECT_TRUE(domain.pass) << domain.reason;
    const auto support = audit::CheckSupportOf(samples, *m);
    EXPECT_TRUE(support.pass) << support.reason;
    const auto law = audit::CheckLawOf(samples, *m, x);
    EXPECT_TRUE(law.pass) << law.reason;
  }
}

TEST_P(MechanismMath, RatioBoundHoldsExactly) {
  const auto [name, eps] = GetParam();
  const auto verdict = audit::CheckPrivacyOf(*Make(name, eps));
  EXPECT_TRUE(verdict.pass) << verdict.reason;
}

INSTANTIATE_TEST_SUITE_P(AllMechanisms, MechanismMath,
                         ::testing::Combine(::testing::Values("duchi", "pm", "hm", "laplace",
                                                              "twopoint"),
                                            ::testing::Values(0.1, 0.5, 1.0, 2.0, 4.0, 8.0)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_eps" +
                                  std::to_string(static_cast<int>(std::get<1>(info.param) * 10)) +
                                  "tenths";
                         });

}  // namespace
}  // namespace fedldp
