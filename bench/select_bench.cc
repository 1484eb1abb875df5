// Selectors from d = 10 to d = 10^6: O(d) expected time per client shows as a
// flat items/s (items = dimensions scanned). The full sort the papers
// describe is the contrast.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "bench_util.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/select/ranking.h"
#include "fedldp/select/selector.h"

namespace fedldp::bench {
namespace {

std::vector<double> Gradient(std::size_t d) {
  std::vector<double> r(d);
  CounterRng rng(3);
  for (auto& v : r) v = StandardNormal(rng) * std::exp(2 * StandardNormal(rng));
  return r;
}

void BM_Select(benchmark::State& state, const char* name) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const auto s = MakeSelector(name, 1.0, d, std::max<std::size_t>(1, d / 10)).value();
  const auto r = Gradient(d);
  CounterRng rng(1);
  for (auto _ : state) benchmark::DoNotOptimize(s->Select(r, rng));
  Declare(state, static_cast<std::int64_t>(d), static_cast<std::int64_t>(d * sizeof(double)));
}
#define FEDLDP_SELECT_BENCH(id)         \
  BENCHMARK_CAPTURE(BM_Select, id, #id) \
      ->Name("select/" #id)             \
      ->RangeMultiplier(10)             \
      ->Range(10, 1000000)
FEDLDP_SELECT_BENCH(exp);
FEDLDP_SELECT_BENCH(pe);
FEDLDP_SELECT_BENCH(ps);
FEDLDP_SELECT_BENCH(topk);

// The papers' route: sort |r| to get ranks (O(d log d)).
void BM_SortRanking(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const auto r = Gradient(d);
  for (auto _ : state) benchmark::DoNotOptimize(Ranking(r).data());
  Declare(state, static_cast<std::int64_t>(d), static_cast<std::int64_t>(d * sizeof(double)));
}
BENCHMARK(BM_SortRanking)->Name("select/full-sort")->RangeMultiplier(10)->Range(10, 1000000);

}  // namespace
}  // namespace fedldp::bench
