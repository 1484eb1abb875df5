#ifndef FEDLDP_BENCH_BENCH_UTIL_H_
#define FEDLDP_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fedldp/data/dataset.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp::bench {

// `rows` images of 784 uniform pixels with uniform labels of 10 classes:
// the time of a training step does not depend on what the pixels show.
inline Dataset RandomImages(std::size_t rows, std::uint64_t seed = 3) {
  Dataset data;
  data.dimension = 784;
  data.classes = 10;
  CounterRng rng(seed);
  std::vector<float> x(784);
  for (std::size_t i = 0; i < rows; ++i) {
    for (float& v : x) v = static_cast<float>(Uniform01(rng));
    data.Append(x, static_cast<int>(UniformIndex(rng, 10)));
  }
  return data;
}

// Declares what one iteration processes, for the ratio-to-memcpy table.
inline void Declare(benchmark::State& state, std::int64_t items, std::int64_t bytes) {
  state.SetItemsProcessed(state.iterations() * items);
  state.counters["items"] = static_cast<double>(items);
  state.counters["bytes"] = static_cast<double>(bytes);
}

}  // namespace fedldp::bench

#endif  // FEDLDP_BENCH_BENCH_UTIL_H_
