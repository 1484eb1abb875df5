// Vector randomizers at d = 10^6 (issue 19): coordinates per second, with the
// memcpy of the same bytes (8 MB, "memcpy/8000000") as the baseline of the
// ratio table. Seeded (counter) and secure (libsodium) generators side by side.
#include <vector>

#include "bench_util.h"
#include "fedldp/audit/vector_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/normal.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/vector/fastprojunit.h"
#include "fedldp/vector/privunitg.h"
#include "fedldp/vector/seeded_privunit.h"
#include "fedldp/vector/srht.h"
#include "testing/continuous_mechanisms.h"

namespace fedldp::bench {
namespace {

constexpr std::size_t kD = 1'000'000;

// The generator of a benchmark: seeded (simulations) or secure (deployments).
template <typename G>
G MakeGenerator();
template <>
CounterRng MakeGenerator<CounterRng>() {
  return CounterRng(1);
}
template <>
SecureRng MakeGenerator<SecureRng>() {
  return SecureRng();
}

template <typename G>
void BM_Normals(benchmark::State& state) {
  G rng = MakeGenerator<G>();
  std::vector<double> out(kD);
  for (auto _ : state) {
    FillStandardNormal(out, rng);
    benchmark::DoNotOptimize(out.data());
  }
  Declare(state, kD, kD * sizeof(double));
}
BENCHMARK(BM_Normals<CounterRng>)
    ->Name("vector/normals/counter/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Normals<SecureRng>)
    ->Name("vector/normals/secure/1000000")
    ->Unit(benchmark::kMillisecond);

// PrivUnitG over D coordinates at eps = Eps; Before: the sampler in doubles
// it replaced (issue 39), for the ratio in the same run.
template <typename G, std::size_t D, int Eps, bool Before = false>
void BM_PrivUnitG(benchmark::State& state) {
  G rng = MakeGenerator<G>();
  const auto exact = PrivUnitG::Create(D, Eps, 1).value();
  const testing::ContinuousPrivUnitG before(exact);
  const VectorRandomizer& r = Before ? static_cast<const VectorRandomizer&>(before) : exact;
  const auto x = audit::TestDirection(D, 0.7, 1);
  std::vector<double> out(D);
  for (auto _ : state) {
    r.Randomize(x, out, rng);
    benchmark::DoNotOptimize(out.data());
  }
  Declare(state, D, D * sizeof(double));
}
BENCHMARK(BM_PrivUnitG<CounterRng, kD, 4>)
    ->Name("vector/privunitg/counter/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivUnitG<CounterRng, kD, 4, true>)
    ->Name("vector/privunitg-before/counter/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivUnitG<SecureRng, kD, 4>)
    ->Name("vector/privunitg/secure/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivUnitG<SecureRng, kD, 4, true>)
    ->Name("vector/privunitg-before/secure/1000000")
    ->Unit(benchmark::kMillisecond);
// The update of LDP-FL's CNN (21,840 weights) at eps = 8: beside its local
// training step in cnn_bench.cc.
BENCHMARK(BM_PrivUnitG<SecureRng, 21840, 8>)
    ->Name("cnn/privunitg/secure/21840")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivUnitG<CounterRng, 21840, 8>)
    ->Name("cnn/privunitg/counter/21840")
    ->Unit(benchmark::kMillisecond);

// PrivUnitG sent as a 16-byte seed (issue 45, item 4) at eps 4: the client's
// encode and the server's decode per report, beside PrivUnitG's report
// (privunitg/secure/D) at d in {10^3, 10^5, 10^6} in the same run.
template <std::size_t D>
void BM_SeededEncode(benchmark::State& state) {
  SecureRng rng;
  const auto r = SeededPrivUnitG::Create(D, 4, 1).value();
  const auto x = audit::TestDirection(D, 0.7, 1);
  for (auto _ : state) benchmark::DoNotOptimize(r.Encode(x, rng));
  Declare(state, D, D * sizeof(double));
}
template <std::size_t D>
void BM_SeededDecode(benchmark::State& state) {
  SecureRng rng;
  const auto r = SeededPrivUnitG::Create(D, 4, 1).value();
  std::vector<double> out(D);
  for (auto _ : state) {
    r.Decode({rng(), rng()}, out);
    benchmark::DoNotOptimize(out.data());
  }
  Declare(state, D, D * sizeof(double));
}
BENCHMARK(BM_SeededEncode<1000>)->Name("vector/privunitg-seed-encode/secure/1000");
BENCHMARK(BM_SeededDecode<1000>)->Name("vector/privunitg-seed-decode/secure/1000");
BENCHMARK(BM_PrivUnitG<SecureRng, 1000, 4>)->Name("vector/privunitg/secure/1000");
BENCHMARK(BM_SeededEncode<100000>)
    ->Name("vector/privunitg-seed-encode/secure/100000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SeededDecode<100000>)
    ->Name("vector/privunitg-seed-decode/secure/100000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivUnitG<SecureRng, 100000, 4>)
    ->Name("vector/privunitg/secure/100000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SeededEncode<kD>)
    ->Name("vector/privunitg-seed-encode/secure/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SeededDecode<kD>)
    ->Name("vector/privunitg-seed-decode/secure/1000000")
    ->Unit(benchmark::kMillisecond);

// FastProjUnit's client step (Encode: project, normalise, PrivUnitG in k = 1000).
template <typename G>
void BM_FastProjUnit(benchmark::State& state) {
  G rng = MakeGenerator<G>();
  const auto r = FastProjUnit::Create(kD, 4, 1, 1000, false).value();
  const auto x = audit::TestDirection(kD, 0.7, 1);
  for (auto _ : state) {
    auto report = r.Encode(x, rng);
    benchmark::DoNotOptimize(report.z.data());
  }
  Declare(state, kD, kD * sizeof(double));
}
BENCHMARK(BM_FastProjUnit<CounterRng>)
    ->Name("vector/fastprojunit-encode/counter/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FastProjUnit<SecureRng>)
    ->Name("vector/fastprojunit-encode/secure/1000000")
    ->Unit(benchmark::kMillisecond);

// The Gaussian randomizer at eps = 4, delta = 1e-6: on its public grid (exact
// normals, issue 39) and as before (ziggurat noise added in doubles), in the
// same run.
void BM_GaussianOf(benchmark::State& state, const VectorRandomizer& r, Rng& rng) {
  const auto x = audit::TestDirection(r.dimension(), 0.7, 1);
  std::vector<double> out(r.dimension());
  for (auto _ : state) {
    r.Randomize(x, out, rng);
    benchmark::DoNotOptimize(out.data());
  }
  Declare(state, r.dimension(), r.dimension() * sizeof(double));
}
template <typename G, bool Before>
void BM_Gaussian(benchmark::State& state) {
  G rng = MakeGenerator<G>();
  const auto g = GaussianRandomizer::Create(kD, 4, 1e-6, 1, false).value();
  if constexpr (Before) {
    BM_GaussianOf(state, testing::ContinuousGaussian(g), rng);
  } else {
    BM_GaussianOf(state, g, rng);
  }
}
BENCHMARK(BM_Gaussian<CounterRng, false>)
    ->Name("vector/gaussian/counter/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gaussian<CounterRng, true>)
    ->Name("vector/gaussian-before/counter/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gaussian<SecureRng, false>)
    ->Name("vector/gaussian/secure/1000000")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gaussian<SecureRng, true>)
    ->Name("vector/gaussian-before/secure/1000000")
    ->Unit(benchmark::kMillisecond);

void BM_WalshHadamard(benchmark::State& state) {
  std::vector<double> v(std::size_t{1} << 20, 0.5);
  for (auto _ : state) {
    WalshHadamardUnnormalised(v);
    benchmark::DoNotOptimize(v.data());
  }
  Declare(state, static_cast<std::int64_t>(v.size()), static_cast<std::int64_t>(v.size() * 8));
}
BENCHMARK(BM_WalshHadamard)->Name("vector/walsh-hadamard/1048576")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fedldp::bench
