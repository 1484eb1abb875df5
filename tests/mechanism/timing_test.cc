// Issue 39, item 3: a mechanism's running time must not reveal its input.
// Each sampler is timed at both ends of its input domain on the same random
// streams; a sampler that draws one more random word for one end is caught.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "fedldp/audit/mechanism_checks.h"
#include "fedldp/audit/vector_checks.h"
#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/vector/baselines.h"
#include "fedldp/vector/fastprojunit.h"
#include "fedldp/vector/privunitg.h"

namespace fedldp {
namespace {

constexpr std::size_t kCalls = 1000000;

bool Sanitized() { return FEDLDP_SANITIZED; }

TEST(Timing, NoSamplerTakesLongerAtOneEndOfItsDomain) {
  if (Sanitized()) GTEST_SKIP() << "times under sanitizers measure the instrumentation";
  for (const auto& name : ValueMechanismNames()) {
    for (double eps : {0.5, 4.0}) {
      const auto m = MakeValueMechanism(name, eps, 0.3, 0.075).value();
      const auto v = audit::CheckTimingOf(*m, kCalls, 17);
      std::printf("%-9s eps %.1f: %s\n", name.c_str(), eps, v.reason.c_str());
      EXPECT_TRUE(v.pass) << name << " eps " << eps << ": " << v.reason;
    }
  }
}

// Clipping takes no longer than not clipping: an input far outside the
// domain (and NaN) against the domain's centre.
TEST(Timing, ClippingAnInputTakesNoLonger) {
  if (Sanitized()) GTEST_SKIP() << "times under sanitizers measure the instrumentation";
  for (const auto& name : ValueMechanismNames()) {
    const auto m = MakeValueMechanism(name, 1.0, 0.3, 0.075).value();
    const Interval d = m->input_domain();
    for (double outside : {d.lo - 10 * (d.hi - d.lo), std::numeric_limits<double>::quiet_NaN()}) {
      const auto v = audit::CheckTimingBetween(*m, outside, d.center(), kCalls, 19);
      std::printf("%-9s clipped %g: %s\n", name.c_str(), outside, v.reason.c_str());
      EXPECT_TRUE(v.pass) << name << ": " << v.reason;
    }
  }
}

// PM that does more for a positive input: draws one more random word (the
// kind of input-dependent rejection loop the check exists for), or computes
// an exponential it throws away (work that draws nothing).
class SlowerAboveZero final : public ValueMechanism {
 public:
  enum class Extra { kWord, kExp };
  SlowerAboveZero(std::shared_ptr<const ValueMechanism> m, Extra extra)
      : m_(std::move(m)), extra_(extra) {}
  std::string name() const override { return "slower"; }
  double epsilon() const override { return m_->epsilon(); }
  Interval input_domain() const override { return m_->input_domain(); }
  Interval output_domain() const override { return m_->output_domain(); }
  bool CanOutput(double y) const override { return m_->CanOutput(y); }
  double Sample(double x, Rng& rng) const override {
    if (Clip(x) > 0) {
      if (extra_ == Extra::kWord) {
        rng();
      } else {
        volatile double wasted = std::exp(x * 1e-3);
        (void)wasted;
      }
    }
    return m_->Sample(x, rng);
  }
  double Variance(double x) const override { return m_->Variance(x); }
  double Cdf(double y, double x) const override { return m_->Cdf(y, x); }

 private:
  std::shared_ptr<const ValueMechanism> m_;
  Extra extra_;
};

TEST(Timing, CatchesASamplerThatDrawsMoreForOneInput) {
  if (Sanitized()) GTEST_SKIP() << "times under sanitizers measure the instrumentation";
  const SlowerAboveZero m(MakeValueMechanism("pm", 1.0).value(), SlowerAboveZero::Extra::kWord);
  const auto v = audit::CheckTimingOf(m, kCalls, 17);
  EXPECT_FALSE(v.pass) << v.reason;
  EXPECT_NE(v.reason.find("random words"), std::string::npos) << v.reason;
}

TEST(Timing, CatchesASamplerThatComputesMoreForOneInput) {
  if (Sanitized()) GTEST_SKIP() << "times under sanitizers measure the instrumentation";
  const SlowerAboveZero m(MakeValueMechanism("pm", 1.0).value(), SlowerAboveZero::Extra::kExp);
  const auto v = audit::CheckTimingOf(m, kCalls, 17);
  std::printf("pm with an exponential above 0: %s\n", v.reason.c_str());
  EXPECT_FALSE(v.pass) << v.reason;
  EXPECT_LT(v.value, -4) << v.reason;  // slower at the high end
}

// The Gaussian randomizer's coordinate sampler (an exact normal rounded to
// the grid) at the two ends of a coordinate's range, -C and C (C = 1: this
// caught a branch on the input's sign), and at 0 against C.
TEST(Timing, TheGaussianGridSamplerTakesAsLongAtEitherEnd) {
  if (Sanitized()) GTEST_SKIP() << "times under sanitizers measure the instrumentation";
  for (double eps : {0.5, 4.0}) {
    const auto g = GaussianRandomizer::Create(100, eps, 1e-6, 1, false).value();
    for (const double low : {-1.0, 0.0}) {
      const auto v = audit::CheckGaussianTiming(g, kCalls / 4, 23, low);
      std::printf("gaussian  eps %.1f: %s\n", eps, v.reason.c_str());
      EXPECT_TRUE(v.pass) << eps << ": " << v.reason;
    }
  }
}

// PrivUnitG and FastProjUnit, whole reports at x = 0 and ||x|| = C (issue
// 39: this caught GMP's operand-size time, a division loop and frexp's exit
// skipped at 0, and a branch on the rounding's sign, a fair coin at 0).
TEST(Timing, PrivUnitGAndFastProjUnitTakeAsLongAtZeroAsAtTheClip) {
  if (Sanitized()) GTEST_SKIP() << "times under sanitizers measure the instrumentation";
  const auto p = PrivUnitG::Create(16, 2, 1).value();
  const auto f = FastProjUnit::Create(16, 2, 1, 4, false).value();
  for (const VectorRandomizer* r : std::initializer_list<const VectorRandomizer*>{&p, &f}) {
    const auto v = audit::CheckVectorTiming(*r, kCalls / 4, 29);
    std::printf("%s: %s\n", r->name().c_str(), v.reason.c_str());
    EXPECT_TRUE(v.pass) << r->name() << ": " << v.reason;
  }
}

}  // namespace
}  // namespace fedldp
