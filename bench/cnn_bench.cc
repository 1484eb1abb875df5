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

// Issue 42: a round's single-example clients, each one local step from the
// global model. The loop, as the simulator runs clients alone: set the
// weights, one step of Train, read the weights. Items: clients.
void BM_OneStepClientsAlone(benchmark::State& state) {
  NeuralNet::SetThreads(1);
  const auto clients = static_cast<std::size_t>(state.range(0));
  const Dataset data = RandomImages(clients);
  NeuralNet net = NeuralNet::Create("cnn", 1).value();
  const std::vector<float> start = net.GetWeights();
  for (auto _ : state) {
    for (std::size_t c = 0; c < clients; ++c) {
      net.SetWeights(start);
      const std::size_t row[] = {c};
      net.Train(data, row, 1, 1, 0.1, c);
      benchmark::DoNotOptimize(net.GetWeights());
    }
  }
  Declare(state, static_cast<std::int64_t>(clients), 0);
}
BENCHMARK(BM_OneStepClientsAlone)
    ->Arg(64)
    ->Name("cnn/one-step-clients/alone")
    ->Unit(benchmark::kMillisecond);

// The same clients in one batched pass of per-example gradients
// (NeuralNet::GroupGradients), each client's model the global one plus its
// step, as TrainLdpFl's passes make them.
void BM_OneStepClientsBatched(benchmark::State& state) {
  NeuralNet::SetThreads(1);
  const auto clients = static_cast<std::size_t>(state.range(0));
  const Dataset data = RandomImages(clients);
  NeuralNet net = NeuralNet::Create("cnn", 1).value();
  const std::vector<float> start = net.GetWeights();
  std::vector<std::size_t> rows(clients), sizes(clients, 1);
  std::vector<std::uint64_t> seeds(clients);
  for (std::size_t c = 0; c < clients; ++c) rows[c] = seeds[c] = c;
  std::vector<float> local(start.size());
  for (auto _ : state) {
    const std::vector<float> grads = net.GroupGradients(data, rows, sizes, seeds);
    for (std::size_t c = 0; c < clients; ++c) {
      for (std::size_t j = 0; j < start.size(); ++j) {
        local[j] = start[j] - 0.1f * grads[c * start.size() + j];
      }
      benchmark::DoNotOptimize(local.data());
    }
  }
  Declare(state, static_cast<std::int64_t>(clients), 0);
}
BENCHMARK(BM_OneStepClientsBatched)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->Name("cnn/one-step-clients/batched")
    ->Unit(benchmark::kMillisecond);

// The bound on the batched pass: the forward alone over the same images
// (NeuralNet::Accuracy: no dropout, no gradients, the CNN's convolutions and
// pooling as the pass runs them). A pass computes this forward and more, so
// its clients a second stay below these images a second.
void BM_CnnForwardOnly(benchmark::State& state) {
  NeuralNet::SetThreads(1);
  const auto images = static_cast<std::size_t>(state.range(0));
  const Dataset data = RandomImages(images);
  NeuralNet net = NeuralNet::Create("cnn", 1).value();
  for (auto _ : state) benchmark::DoNotOptimize(net.Accuracy(data));
  Declare(state, static_cast<std::int64_t>(images), 0);
}
BENCHMARK(BM_CnnForwardOnly)->Arg(64)->Name("cnn/forward-only")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fedldp::bench
