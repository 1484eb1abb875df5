// Parallel clients in the LDP-FL simulator (issue 22): four rounds of 10
// clients of 600 MNIST-sized rows (one local epoch each, the CNN, the
// two-point mechanism) with the clients trained on 1 and on 2 threads, each
// client's Torch ops on one thread; and, as before issue 22, one client at a
// time with Torch's ops on 2 threads. Items are clients: the ratios of the
// throughputs, measured in the same run, are the speed-ups.
#include <cstddef>
#include <functional>
#include <numeric>
#include <vector>

#include "bench_util.h"
#include "fedldp/data/dataset.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/sim/thread_pool.h"

namespace fedldp::bench {
namespace {

// range(0): clients at once; range(1): Torch's intra-op threads.
void BM_LdpFlRound(benchmark::State& state) {
  NeuralNet::SetThreads(static_cast<int>(state.range(1)));
  const auto threads = static_cast<std::size_t>(state.range(0));
  static const Dataset train = RandomImages(6000, 3), test = RandomImages(100, 4);
  LdpFlConfig config;
  config.clients = 10;
  config.rounds = 4;
  config.epsilon = 1;
  ThreadPool pool(threads);
  const ParallelFor parallel = pool.AsParallelFor();
  for (auto _ : state) {
    auto run = TrainLdpFl(config, train, test, 1, {}, {}, parallel);
    if (!run.ok()) state.SkipWithError(run.error().c_str());
    benchmark::DoNotOptimize(run);
  }
  Declare(state, static_cast<std::int64_t>(config.clients) * config.rounds,
          static_cast<std::int64_t>(train.size() * 784 * 4));
}
BENCHMARK(BM_LdpFlRound)
    ->Args({1, 2})
    ->Name("ldpfl/4-rounds-of-10-clients/one-at-a-time-torch-threads:2")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LdpFlRound)
    ->Args({1, 1})
    ->Name("ldpfl/4-rounds-of-10-clients/threads:1")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LdpFlRound)
    ->Args({2, 1})
    ->Name("ldpfl/4-rounds-of-10-clients/threads:2")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Issue 42: one round of 1,024 single-example clients of the CNN, each one
// local step, on 2 threads (Torch's ops on one each): range(0) clients a
// batched pass (0: each client alone, the loop), range(1) 1 for PrivUnitG
// reports at eps 4 (0: noise-free, the updates clipped alike), so the
// training's speed-up and the whole client step's are both measured.
void BM_OneStepRound(benchmark::State& state) {
  NeuralNet::SetThreads(1);
  static const Dataset train = RandomImages(1024, 5), test = RandomImages(100, 6);
  LdpFlConfig config;
  config.clients = 1024;
  config.rounds = 1;
  config.batch = 1;
  config.learning_rate = 0.1;
  config.vector = VectorMechanism::kPrivUnitG;
  config.epsilon = 4;
  config.client_batch = static_cast<std::size_t>(state.range(0));
  config.is_private = state.range(1) != 0;
  ThreadPool pool(2);
  const ParallelFor parallel = pool.AsParallelFor();
  for (auto _ : state) {
    auto run = TrainLdpFl(config, train, test, 1, {}, {}, parallel);
    if (!run.ok()) state.SkipWithError(run.error().c_str());
    benchmark::DoNotOptimize(run);
  }
  Declare(state, static_cast<std::int64_t>(config.clients), 0);
}
BENCHMARK(BM_OneStepRound)
    ->ArgNames({"client-batch", "private"})
    ->Args({0, 0})
    ->Args({64, 0})
    ->Args({256, 0})
    ->Args({0, 1})
    ->Args({64, 1})
    ->Name("ldpfl/one-step-round-of-1024/threads:2")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace fedldp::bench
