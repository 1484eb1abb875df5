#ifndef FEDLDP_BENCH_BENCH_UTIL_H_
#define FEDLDP_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <cstdint>

namespace fedldp::bench {

// Declares what one iteration processes, for the ratio-to-memcpy table.
inline void Declare(benchmark::State& state, std::int64_t items, std::int64_t bytes) {
  state.SetItemsProcessed(state.iterations() * items);
  state.counters["items"] = static_cast<double>(items);
  state.counters["bytes"] = static_cast<double>(bytes);
}

}  // namespace fedldp::bench

#endif  // FEDLDP_BENCH_BENCH_UTIL_H_
