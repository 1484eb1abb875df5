// The Laplace mechanism on the l2 ball (Dwork, McSherry, Nissim & Smith,
// "Calibrating noise to sensitivity in private data analysis", TCC 2006):
// a pure eps-LDP baseline beside the Gaussian's (eps, delta), registered as
// "laplace-l1". It is the example of issue 40: a randomizer added through the
// registry alone (this file, its line in registry.cc, a build rule, its
// tests); the CLI, Python, the audit and the accountant take it from there.
//
// The mechanism. The ball of radius C has l1 diameter 2C sqrt(d) (x = C 1 /
// sqrt(d) against -x), so x + Lap(2C sqrt(d) / eps)^d is eps-DP. On real
// computers (issue 39) it is run on the public grid g Z, g = C / K, K = 2^k:
//   u_i = x_i / g,  j_i = u_i rounded at random to floor(u_i) or floor(u_i) + 1
//   (unbiased: RandomizedRound),  report_i = (j_i + Y_i) g,
// Y_i exact discrete Laplace draws, P[Y = y] proportional to exp(-r |y|) with
// r = s / t rational (CKS Algorithm 2, random/discrete.h). No floating-point
// arithmetic touches a report after the input is rounded, and every grid
// point is possible under every input.
//
// Privacy, exactly. A coordinate's law is the mixture (1 - f) L(m - a) + f
// L(m - a - 1) for a = floor(u_i); against another input's (a', f') each
// ratio L(m - b) / L(m - c) is at most e^(r |b - c|), and |b - c| <= |a - a'|
// + 1 <= |u_i - u'_i| + 2 (floors differ by at most the difference's floor
// plus one). Summed over coordinates: ln ratio <= r (||u - u'||_1 + 2d) <=
// r (2 sqrt(d) K + 2d), the l1 norm of the clipped input being at most
// sqrt(d) C (1 + 2^-28) (ClipInto's rounding). So with
//   L = ceil(2 sqrt(d) K (1 + 2^-24)) + 2d   and   r <= eps / L
// the randomizer is eps-LDP with no allowance; ImplementedPrivacy states
// r L from the integers s, t.
//
// The grid. K is the least power of two >= 64 sqrt(d), so the rounding's
// share 2d / L of the budget is below 1/64 (K <= 2^18 up to d = 2^24). Reports are clamped to |j +
// Y| <= 2^52 (post-processing; |Y| that large has probability below exp(-2^30)).
//
// Error, exactly. E[report_i] = x_i up to RoundUpProbability's 2^-53, and
//   E||R(x) - x||^2 = g^2 (sum_i f_i (1 - f_i) + d Var Y),
// Var Y = 2 e^-r / (1 - e^-r)^2: SquaredError states the worst case of the
// rounding, g^2 d / 4 + g^2 d Var Y, and SquaredErrorLowerBound the rounding-
// free g^2 d Var Y (the rounding's share is below 2^-20 of the noise's).
#include <algorithm>
#include <cmath>

#include "fedldp/random/discrete.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {
namespace {

constexpr std::int64_t kReportEnd = std::int64_t{1} << 52;

class LaplaceL1 final : public VectorRandomizer {
 public:
  static Result<std::unique_ptr<VectorRandomizer>> Make(const VectorRandomizerConfig& c) {
    const double root = std::sqrt(static_cast<double>(c.dimension));
    const double levels = std::exp2(std::ceil(std::log2(64 * root)));
    const double sensitivity =
        std::ceil(2 * root * levels * (1 + 0x1p-24)) + 2 * static_cast<double>(c.dimension);
    auto rate = RationalRateBelow(c.epsilon / sensitivity);
    if (!rate.ok()) return Error{"laplace-l1: " + rate.error()};
    return std::unique_ptr<VectorRandomizer>(new LaplaceL1(c, levels, sensitivity, *rate));
  }

  std::string name() const override { return "laplace-l1"; }
  double epsilon() const override { return epsilon_; }
  ExactPrivacy ImplementedPrivacy() const override {
    return {sensitivity_ * static_cast<double>(rate_.s) / static_cast<double>(rate_.t), 0};
  }
  std::optional<OutputGrid> Grid() const override {
    return OutputGrid{step_, -kReportEnd, kReportEnd};
  }
  double SquaredError(double) const override {
    return step_ * step_ * static_cast<double>(dimension()) * (0.25 + NoiseVariance());
  }
  double SquaredErrorLowerBound(double) const override {
    return step_ * step_ * static_cast<double>(dimension()) * NoiseVariance();
  }
  double WorstCaseSquaredError() const override { return SquaredError(0); }

  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override {
    ClipInto(x, out);
    for (double& v : out) {
      // The level's draw, then the noise's (the order seeded runs record).
      // |level| <= levels (step_ is normal: MakeVectorRandomizer): the noise
      // clamped to 2^62 first leaves the clamped sum as it was, and the sum
      // cannot overflow (a noise of 2^63 - 1 has probability below e^-2^11).
      constexpr std::int64_t kNoiseEnd = std::int64_t{1} << 62;
      const std::int64_t level = RandomizedRound(v / step_, rng);
      const std::int64_t noise =
          std::clamp(DiscreteLaplace(rng, rate_.s, rate_.t), -kNoiseEnd, kNoiseEnd);
      const std::int64_t j = level + noise;
      v = static_cast<double>(std::clamp(j, -kReportEnd, kReportEnd)) * step_;
    }
  }
  using VectorRandomizer::Randomize;

 private:
  LaplaceL1(const VectorRandomizerConfig& c, double levels, double sensitivity, RationalRate rate)
      : VectorRandomizer(c.dimension, c.clip),
        epsilon_(c.epsilon),
        step_(c.clip / levels),
        sensitivity_(sensitivity),
        rate_(rate) {}

  // Var Y = 2 e^-r / (1 - e^-r)^2 of the discrete Laplace at rate r.
  double NoiseVariance() const {
    const double r = rate_.value();
    return 2 * std::exp(-r) / (-std::expm1(-r) * -std::expm1(-r));
  }

  double epsilon_, step_, sensitivity_;
  RationalRate rate_;
};

}  // namespace

extern const VectorRandomizerKind kLaplaceL1Kind;
constinit const VectorRandomizerKind kLaplaceL1Kind = {
    "laplace-l1",
    "Laplace mechanism on the l1 diameter 2C sqrt(d) (Dwork et al. 2006): pure eps",
    {},
    LaplaceL1::Make,
    {}};

}  // namespace fedldp
