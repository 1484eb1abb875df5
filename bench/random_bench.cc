// Generators and the baseline every ratio is taken against.
#include <cstring>
#include <random>
#include <vector>

#include "bench_util.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/secure_rng.h"

namespace fedldp::bench {
namespace {

// The baseline: copy `bytes` bytes.
void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<char> in(bytes, 1), out(bytes);
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), bytes);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  Declare(state, static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(bytes));
}
// The sizes the other benchmarks process: floats for dense perturbation,
// doubles for the selectors.
BENCHMARK(BM_Memcpy)->Name("memcpy")->Arg(4000)->Arg(4000000)->Arg(40000000);
BENCHMARK(BM_Memcpy)->Name("memcpy")->Arg(80)->Arg(800)->Arg(8000)->Arg(80000)->Arg(800000)->Arg(
    8000000);

template <typename G>
void BM_Fill(benchmark::State& state, G& rng) {
  std::vector<std::uint64_t> words(1 << 16);
  for (auto _ : state) {
    rng.Fill(words);
    benchmark::DoNotOptimize(words.data());
  }
  Declare(state, static_cast<std::int64_t>(words.size()),
          static_cast<std::int64_t>(words.size() * sizeof(std::uint64_t)));
}

void BM_CounterRng(benchmark::State& state) {
  CounterRng rng(1);
  BM_Fill(state, rng);
}
BENCHMARK(BM_CounterRng)->Name("rng/counter/words");

void BM_SecureRng(benchmark::State& state) {
  SecureRng rng;
  BM_Fill(state, rng);
}
BENCHMARK(BM_SecureRng)->Name("rng/secure/words");

// What a naive loop reaches: mt19937 with uniform_real_distribution.
void BM_Mt19937Floats(benchmark::State& state) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> out(1 << 16);
  for (auto _ : state) {
    for (auto& v : out) v = u(rng);
    benchmark::DoNotOptimize(out.data());
  }
  Declare(state, static_cast<std::int64_t>(out.size()),
          static_cast<std::int64_t>(out.size() * sizeof(float)));
}
BENCHMARK(BM_Mt19937Floats)->Name("rng/mt19937/floats");

}  // namespace
}  // namespace fedldp::bench
