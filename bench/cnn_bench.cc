// The CNN's client step (issue 20): one client's local training of LDP-FL's
// CNN (21,840 weights), on one Torch thread as one client of the simulator
// runs, beside the PrivUnitG report of its whole update
// ("cnn/privunitg/..." in vector_bench.cc). The issue asks that privatising
// cost less than training.
#include <vector>

#include "bench_util.h"
#include "fedldp/data/dataset.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp::bench {
namespace {

// One local epoch of mini-batches of 10 over `rows` rows (state.range(0)).
void BM_CnnLocalEpoch(benchmark::State& state) {
  NeuralNet::SetThreads(1);
  const auto rows = static_cast<std::size_t>(state.range(0));
  const Dataset data = RandomImages(rows);
  std::vector<std::size_t> all(rows);
  for (std::size_t i = 0; i < rows; ++i) all[i] = i;
  NeuralNet net = NeuralNet::Create("cnn", 1).value();
  const std::vector<float> start = net.GetWeights();
  for (auto _ : state) {
    net.SetWeights(start);
    benchmark::DoNotOptimize(net.Train(data, all, 1, 10, 0.03, 1));
  }
  Declare(state, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(rows * 784 * 4));
}
BENCHMARK(BM_CnnLocalEpoch)->Arg(10)->Name("cnn/local-step/10-rows")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CnnLocalEpoch)
    ->Arg(600)
    ->Name("cnn/local-epoch/600-rows")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fedldp::bench
