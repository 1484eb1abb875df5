// One LDP-FL experiment as `fedldp ldpfl` runs it, as a library call: load
// an image dataset, train LDP-FL (Sun, Qian & Chen) or a vector randomizer
// on whole updates, and the noise-free federated model from the same seed,
// beside the majority class; the result carries its JSON record.
//
//   LdpFlExperimentConfig config = DefaultLdpFlExperiment(ImageDataset::kMnist);
//   config.training.epsilon = 0.5;
//   if (Status s = config.Validate(); !s.ok()) ...
//   Result<LdpFlExperiment> e = RunLdpFlExperiment(config, observer, stop);
#ifndef FEDLDP_SIM_LDPFL_EXPERIMENT_H_
#define FEDLDP_SIM_LDPFL_EXPERIMENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "fedldp/base/status.h"
#include "fedldp/fl/ldpfl.h"

namespace fedldp {

enum class ImageDataset { kMnist, kFmnist, kCifar10 };

// "mnist", "fmnist", "cifar10".
std::string_view ImageDatasetName(ImageDataset dataset);
Result<ImageDataset> ParseImageDataset(std::string_view name);

struct LdpFlExperimentConfig {
  ImageDataset dataset = ImageDataset::kMnist;
  std::string data_dir;  // "": where setup put it (loaders.h)
  // training.arch: the dataset's network (the paper's CNN; VGG for
  // cifar10), or a TorchScript file (torch.jit.save; the "model" option)
  // taking (batch, features) rows, each parameter tensor a layer with its
  // own range.
  LdpFlConfig training;
  std::size_t train_rows = 0, test_rows = 0;  // the first rows only; 0: all
  // > 0: this many of the training rows held out (HoldOut, seeded by `seed`)
  // and scored instead of the test split, to choose hyper-parameters on;
  // the clients share the other rows. Not beside test_rows.
  std::size_t validation_rows = 0;
  bool reference = true;  // also the noise-free federated model
  // Clients of a round trained at once (0: one per core), each on one
  // Torch thread (Torch's intra-op threads are set to 1 for the process;
  // a TorchScript model's clients train one after another, on this many).
  int threads = 0;
  std::uint64_t seed = 1;

  // OK, or the first thing wrong, in the CLI's words (e.g. "epsilon must be
  // in (0, 500]"). What needs the data (rows, the model file) is checked by
  // RunLdpFlExperiment before it trains.
  Status Validate() const;
};

// The paper's setting for `dataset`: its network (cnn; vgg for cifar10), lr
// 0.03 (0.015 for cifar10) and the fixed range (0, r) with r = 0.075
// (mnist), 0.015 (fmnist), 1 (cifar10).
LdpFlExperimentConfig DefaultLdpFlExperiment(ImageDataset dataset);

struct LdpFlExperiment {
  LdpFlExperimentConfig config;  // as run
  std::size_t train_rows = 0;    // the clients' rows
  std::size_t test_rows = 0;     // the rows scored: the test split's, or the validation rows
  bool validation() const { return config.validation_rows > 0; }
  LdpFlRun run;
  std::optional<LdpFlRun> reference;  // noise-free; nullopt if not asked for, or stopped first
  int processes = 1;                  // the cluster's (MPI processes)
  bool stopped() const { return run.stopped || (reference && reference->stopped); }
  // One JSON object (no newline): fedldp's version, accuracies in percent
  // (base/units.h), the effective configuration and seed, the accuracy per
  // round with each stage's time, the majority class, the noise-free model
  // (null if not run) and the privacy statement.
  std::string RecordJson() const;
};

struct LdpFlObserver {
  // After the data loaded and every check passed, before any training; the
  // experiment holds its config and row counts, no run yet.
  std::function<void(const LdpFlExperiment&)> started;
  // After each round of the private run (`reference` false) or the
  // noise-free one.
  std::function<void(bool reference, const LdpFlRound&, int rounds)> round;
};

// Runs the experiment. A stop requested on `stop` ends the current run after
// its round and skips the rest: the rounds done are returned (stopped()).
// Errors: the configuration, the data, the model file.
// On a cluster of MPI processes (mpi/mpi.h) every process runs it alike
// and gets the same experiment; each round's clients are spread over them.
Result<LdpFlExperiment> RunLdpFlExperiment(const LdpFlExperimentConfig& config,
                                           const LdpFlObserver& observer = {},
                                           std::stop_token stop = {},
                                           Cluster& cluster = OneProcess());

}  // namespace fedldp

#endif  // FEDLDP_SIM_LDPFL_EXPERIMENT_H_
