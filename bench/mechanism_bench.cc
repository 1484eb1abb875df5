// Dense two-point perturbation of a float vector (LDP-FL's per-weight
// mechanism) and scalar draws of every value mechanism.
#include <cmath>
#include <vector>

#include "bench_util.h"
#include "fedldp/mechanism/two_point.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/secure_rng.h"
#include "testing/continuous_mechanisms.h"

namespace fedldp::bench {
namespace {

template <typename G>
void PerturbDense(benchmark::State& state, G& rng) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = TwoPointMechanism::Create(5, 0, 0.075).value();
  std::vector<float> in(n), out(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = 0.1f * std::sin(static_cast<float>(i));
  for (auto _ : state) {
    m.PerturbDense(in, out, rng);
    benchmark::DoNotOptimize(out.data());
  }
  Declare(state, static_cast<std::int64_t>(n), static_cast<std::int64_t>(n * sizeof(float)));
}

void BM_TwoPointDenseCounter(benchmark::State& state) {
  CounterRng rng(1);
  PerturbDense(state, rng);
}
BENCHMARK(BM_TwoPointDenseCounter)
    ->Name("twopoint/dense/counter")
    ->Arg(1000)
    ->Arg(1000000)
    ->Arg(10000000);

void BM_TwoPointDenseSecure(benchmark::State& state) {
  SecureRng rng;
  PerturbDense(state, rng);
}
BENCHMARK(BM_TwoPointDenseSecure)->Name("twopoint/dense/secure")->Arg(1000000);

void BM_ScalarOf(benchmark::State& state, const ValueMechanism& m) {
  CounterRng rng(1);
  std::vector<double> in(4096), out(4096);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::sin(static_cast<double>(i));
  for (auto _ : state) {
    m.SampleMany(in, out, rng);
    benchmark::DoNotOptimize(out.data());
  }
  Declare(state, static_cast<std::int64_t>(in.size()),
          static_cast<std::int64_t>(in.size() * sizeof(double)));
}

void BM_Scalar(benchmark::State& state, const char* name) {
  BM_ScalarOf(state, *MakeValueMechanism(name, 1.0).value());
}
BENCHMARK_CAPTURE(BM_Scalar, duchi, "duchi")->Name("scalar/duchi");
BENCHMARK_CAPTURE(BM_Scalar, pm, "pm")->Name("scalar/pm");
BENCHMARK_CAPTURE(BM_Scalar, hm, "hm")->Name("scalar/hm");
BENCHMARK_CAPTURE(BM_Scalar, laplace, "laplace")->Name("scalar/laplace");

// The samplers before issue 39 (formulas on doubles, tests/testing), for the
// before-and-after in one run: scalar/pm against scalar/pm-before, etc.
void BM_PiecewiseBefore(benchmark::State& state) {
  BM_ScalarOf(state, testing::ContinuousPiecewise(1.0));
}
BENCHMARK(BM_PiecewiseBefore)->Name("scalar/pm-before");
void BM_LaplaceBefore(benchmark::State& state) {
  BM_ScalarOf(state, testing::ContinuousLaplace(1.0));
}
BENCHMARK(BM_LaplaceBefore)->Name("scalar/laplace-before");

}  // namespace
}  // namespace fedldp::bench
