// Random allocation's PLD against what is known exactly (randomized response
// allocated to one of t steps: the count of ones among the t outputs) and
// against the published package's values on its own Gaussian examples.
#include "fedldp/privacy/random_allocation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

namespace fedldp {
namespace {

using Atoms = std::vector<std::pair<double, double>>;  // (loss, probability)

// One epoch of randomized response at eps0 allocated to one of t steps,
// exactly, in both directions: with k ones among the t outputs, S / t =
// (k e^eps0 + (t - k) e^-eps0) / t, B^t(k) binomial at 1 / (1 + e^eps0), A_t(k)
// = B^t(k) S / t.
std::pair<Atoms, Atoms> ExactAllocatedRr(double eps0, int t) {
  const double b = 1 / (1 + std::exp(eps0));
  Atoms remove, add;
  for (int k = 0; k <= t; ++k) {
    const double pmf = std::exp(std::lgamma(t + 1) - std::lgamma(k + 1) - std::lgamma(t - k + 1) +
                                k * std::log(b) + (t - k) * std::log1p(-b));
    const double ratio = (k * std::exp(eps0) + (t - k) * std::exp(-eps0)) / t;
    remove.emplace_back(std::log(ratio), pmf * ratio);
    add.emplace_back(-std::log(ratio), pmf);
  }
  return {remove, add};
}

Atoms Compose(const Atoms& x, const Atoms& y) {
  Atoms out;
  for (const auto& [lx, px] : x) {
    for (const auto& [ly, py] : y) out.emplace_back(lx + ly, px * py);
  }
  return out;
}

double Delta(const Atoms& atoms, double eps) {
  double delta = 0;
  for (const auto& [loss, p] : atoms) {
    if (loss > eps) delta += p * -std::expm1(eps - loss);
  }
  return delta;
}

Atoms RrAtoms(double eps0) {
  const double alpha = 1 / (1 + std::exp(-eps0));
  return {{eps0, alpha}, {-eps0, 1 - alpha}};
}

// Never below the exact delta in either direction, and close to it: the
// sums are spread, not rounded up, so an epoch costs under half a grid step
// of eps (rounded up, every doubling could add a step). Allocating over one more step than there
// are (more amplification than exists) falls below it.
TEST(RandomAllocation, RandomizedResponseHoldsAgainstTheExactCount) {
  const double grid = 1e-3;
  for (const double eps0 : {0.5, 1.0, 3.0}) {
    const Pld step = SymmetricPldFromAtoms(RrAtoms(eps0), grid);
    for (const int t : {2, 5, 12}) {
      const auto [remove, add] = ExactAllocatedRr(eps0, t);
      for (const int epochs : {1, 3}) {
        Atoms r = remove, a = add;
        for (int e = 1; e < epochs; ++e) r = Compose(r, remove), a = Compose(a, add);
        const auto ours = AllocationEpochPld(step, t, 1e-14);
        ASSERT_TRUE(ours.ok()) << ours.error();
        const DirectionalPld run = ComposeDirectional(*ours, epochs, 1e-14);
        const DirectionalPld fewer =
            ComposeDirectional(*AllocationEpochPld(step, t + 1, 1e-14), epochs, 1e-14);
        bool below = false;
        for (double eps = 0; eps < epochs * eps0; eps += 0.02) {
          const double exact = std::max(Delta(r, eps), Delta(a, eps));
          const double d = DirectionalDelta(run, eps);
          EXPECT_GE(d, exact - 1e-14) << eps0 << " " << t << " " << epochs << " at " << eps;
          const double near = eps - epochs * grid / 2;
          EXPECT_LE(d, std::max(Delta(r, near), Delta(a, near)) + 1e-12)
              << eps0 << " " << t << " " << epochs << " at " << eps;
          below = below || DirectionalDelta(fewer, eps) < exact - 1e-9;
        }
        EXPECT_TRUE(below) << eps0 << " " << t << " " << epochs;
      }
    }
  }
}

}  // namespace
}  // namespace fedldp
