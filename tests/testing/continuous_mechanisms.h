// PM, Laplace and the Gaussian randomizer as fedldp sampled them before issue
// 39: formulas on doubles,
// whose set of outputs depends on the input through rounding. Kept only to
// show that the support check catches them (tests/mechanism) and for the
// benchmarks' before-and-after (bench/mechanism_bench.cc). Never for use.
//
// Each can also answer, by recomputing its sampler exactly, whether an input
// could have produced an output at all (CanProduce): the attack of Mironov
// (CCS 2012) that issue 39 measured.
#ifndef FEDLDP_TESTS_TESTING_CONTINUOUS_MECHANISMS_H_
#define FEDLDP_TESTS_TESTING_CONTINUOUS_MECHANISMS_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/random/normal.h"
#include "fedldp/vector/baselines.h"
#include "fedldp/vector/privunitg.h"

namespace fedldp::testing {

// Whether f(k) == y for some k in [0, 2^53), for f non-decreasing in k: the
// smallest k with f(k) >= y, by bisection.
template <typename F>
bool HitsNonDecreasing(F&& f, double y) {
  std::uint64_t lo = 0, hi = std::uint64_t{1} << 53;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (f(mid) >= y) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo < (std::uint64_t{1} << 53) && f(lo) == y;
}

class ContinuousPiecewise final : public ValueMechanism {
 public:
  explicit ContinuousPiecewise(double eps)
      : eps_(eps),
        c_(1 / std::tanh(eps / 4)),
        p_center_(std::exp(eps / 2) / (std::exp(eps / 2) + 1)) {}
  std::string name() const override { return "pm-continuous"; }
  double epsilon() const override { return eps_; }
  Interval input_domain() const override { return {-1, 1}; }
  Interval output_domain() const override { return {-c_, c_}; }
  bool CanOutput(double y) const override { return y >= -c_ && y <= c_; }
  double Sample(double x, Rng& rng) const override {
    const double lo = Low(x), hi = lo + c_ - 1;
    if (Uniform01(rng) < p_center_) return lo + (c_ - 1) * Uniform01(rng);
    const double v = (c_ + 1) * Uniform01(rng);
    return v < lo + c_ ? -c_ + v : hi + (v - (lo + c_));
  }
  double Variance(double x) const override {
    const double t = Clip(x), a = std::expm1(eps_ / 2);
    return t * t / a + (a + 4) / (3 * a * a);
  }
  double Cdf(double y, double x) const override {  // the paper's, for completeness
    if (y <= -c_) return 0;
    if (y >= c_) return 1;
    const double lo = Low(x), hi = lo + c_ - 1;
    const double high = p_center_ / (c_ - 1), low = (1 - p_center_) / (c_ + 1);
    return low * (std::fmin(y, lo) + c_ + std::fmax(0.0, y - hi)) +
           high * std::fmax(0.0, std::fmin(y, hi) - lo);
  }
  // Some 53-bit uniform of either branch yields exactly y from x.
  bool CanProduce(double y, double x) const {
    const double lo = Low(x), hi = lo + c_ - 1;
    const auto u = [](std::uint64_t k) { return static_cast<double>(k) * 0x1.0p-53; };
    const auto centre = [&](std::uint64_t k) { return lo + (c_ - 1) * u(k); };
    const auto outer = [&](std::uint64_t k) {
      const double v = (c_ + 1) * u(k);
      return v < lo + c_ ? -c_ + v : hi + (v - (lo + c_));
    };
    return HitsNonDecreasing(centre, y) || HitsNonDecreasing(outer, y);
  }

 private:
  double Low(double x) const { return (c_ + 1) / 2 * Clip(x) - (c_ - 1) / 2; }
  double eps_, c_, p_center_;
};

class ContinuousLaplace final : public ValueMechanism {
 public:
  explicit ContinuousLaplace(double eps) : eps_(eps), scale_(2 / eps) {}
  std::string name() const override { return "laplace-continuous"; }
  double epsilon() const override { return eps_; }
  Interval input_domain() const override { return {-1, 1}; }
  Interval output_domain() const override {
    return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
  bool CanOutput(double y) const override { return std::isfinite(y); }
  double Sample(double x, Rng& rng) const override {
    const std::uint64_t word = rng();
    const double magnitude = Magnitude(word >> 11);
    return Clip(x) + ((word & 1) ? magnitude : -magnitude);
  }
  double Variance(double) const override { return 2 * scale_ * scale_; }
  double Cdf(double y, double x) const override {
    const double z = (y - Clip(x)) / scale_;
    return z < 0 ? 0.5 * std::exp(z) : 1 - 0.5 * std::exp(-z);
  }
  // Some 53-bit uniform and sign yield exactly y from x (the magnitude falls as k grows).
  bool CanProduce(double y, double x) const {
    const double t = Clip(x);
    const std::uint64_t top = (std::uint64_t{1} << 53) - 1;
    const auto minus = [&](std::uint64_t k) { return t - Magnitude(k); };
    const auto plus = [&](std::uint64_t k) { return t + Magnitude(top - k); };
    return HitsNonDecreasing(minus, y) || HitsNonDecreasing(plus, y);
  }

 private:
  double Magnitude(std::uint64_t k) const {
    return -scale_ * std::log(static_cast<double>(k + 1) * 0x1.0p-53);
  }
  double eps_, scale_;
};

// The Gaussian randomizer before issue 39: x + sigma z added in doubles (z
// from the ziggurat), claiming the repaired randomizer's grid, so the audit's
// support check (reports off the grid) has a mutant to catch.
class ContinuousGaussian final : public VectorRandomizer {
 public:
  explicit ContinuousGaussian(GaussianRandomizer exact)
      : VectorRandomizer(exact.dimension(), exact.clip()), exact_(std::move(exact)) {}
  std::string name() const override { return "gaussian-continuous"; }
  double epsilon() const override { return exact_.epsilon(); }
  double delta() const override { return exact_.delta(); }
  ExactPrivacy ImplementedPrivacy() const override { return exact_.ImplementedPrivacy(); }
  std::optional<OutputGrid> Grid() const override { return exact_.Grid(); }
  double SquaredError(double norm) const override { return exact_.SquaredError(norm); }
  double WorstCaseSquaredError() const override { return exact_.WorstCaseSquaredError(); }
  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override {
    ClipInto(x, out);
    for (double& v : out) v += exact_.sigma() * ZigguratNormal(rng);
  }
  using VectorRandomizer::Randomize;
  Status ValidateReport(std::span<const double> report) const override {
    return exact_.ValidateReport(report);
  }

 private:
  GaussianRandomizer exact_;
};

// PrivUnitG as it was before issue 39's repair: C sigma (g - <g, u> u + a u)
// computed in doubles from the ziggurat's g and a tail sampler's a, off any
// grid: the baseline of the benchmark and the mutant the support check must
// catch.
class ContinuousPrivUnitG final : public VectorRandomizer {
 public:
  explicit ContinuousPrivUnitG(PrivUnitG exact)
      : VectorRandomizer(exact.dimension(), exact.clip()), exact_(std::move(exact)) {}
  std::string name() const override { return "privunitg-continuous"; }
  double epsilon() const override { return exact_.epsilon(); }
  ExactPrivacy ImplementedPrivacy() const override { return exact_.ImplementedPrivacy(); }
  std::optional<OutputGrid> Grid() const override { return exact_.Grid(); }
  double SquaredError(double norm) const override { return exact_.SquaredError(norm); }
  double WorstCaseSquaredError() const override { return exact_.WorstCaseSquaredError(); }
  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override {
    const PrivUnitGParameters& pr = exact_.parameters();
    std::vector<double> u(x.size());
    const double norm = ClipInto(x, u);
    const double sign = Uniform01(rng) < 0.5 * (1 + norm / clip()) ? 1.0 : -1.0;
    for (double& v : u) v = norm == 0 ? 0.0 : sign * v / norm;
    if (norm == 0) u[0] = sign;
    FillStandardNormal(out, rng);
    double dot = 0;
    for (std::size_t i = 0; i < u.size(); ++i) dot += out[i] * u[i];
    const double a = Bernoulli(rng, pr.p) ? NormalAbove(pr.gamma, rng) : NormalBelow(pr.gamma, rng);
    const double s = clip() * pr.sigma;
    for (std::size_t i = 0; i < u.size(); ++i) out[i] = s * (out[i] + (a - dot) * u[i]);
  }
  using VectorRandomizer::Randomize;

 private:
  PrivUnitG exact_;
};

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_CONTINUOUS_MECHANISMS_H_
