#include "fedldp/sim/ldpfl_experiment.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "fedldp/base/units.h"
#include "fedldp/data/loaders.h"
#include "fedldp/data/partition.h"
#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/sim/records.h"
#include "fedldp/sim/thread_pool.h"

namespace fedldp {

std::string_view ImageDatasetName(ImageDataset dataset) {
  switch (dataset) {
    case ImageDataset::kMnist:
      return "mnist";
    case ImageDataset::kFmnist:
      return "fmnist";
    case ImageDataset::kCifar10:
      return "cifar10";
  }
  return "?";
}

Result<ImageDataset> ParseImageDataset(std::string_view name) {
  for (const ImageDataset d :
       {ImageDataset::kMnist, ImageDataset::kFmnist, ImageDataset::kCifar10}) {
    if (ImageDatasetName(d) == name) return d;
  }
  return Error{"dataset must be mnist, fmnist or cifar10, not '" + std::string(name) + "'"};
}

LdpFlExperimentConfig DefaultLdpFlExperiment(ImageDataset dataset) {
  LdpFlExperimentConfig c;
  c.dataset = dataset;
  c.training.arch = dataset == ImageDataset::kCifar10 ? "vgg" : "cnn";
  c.training.learning_rate = dataset == ImageDataset::kCifar10 ? 0.015 : 0.03;
  c.training.fixed_range = {0, dataset == ImageDataset::kMnist    ? 0.075
                               : dataset == ImageDataset::kFmnist ? 0.015
                                                                  : 1.0};
  return c;
}

Status LdpFlExperimentConfig::Validate() const {
  if (threads < 0) return Error{"threads must be >= 0"};
  if (validation_rows > 0 && test_rows > 0) {
    return Error{
        "validation rows are scored instead of the test split: give test rows or "
        "validation rows, not both"};
  }
  // Everything but the client count, which needs the rows.
  return training.Validate();
}

Result<LdpFlExperiment> RunLdpFlExperiment(const LdpFlExperimentConfig& config,
                                           const LdpFlObserver& observer, std::stop_token stop,
                                           Cluster& cluster) {
  if (Status s = config.Validate(); !s.ok()) return Error{s.error()};
  auto loaded = LoadImageSplit(std::string(ImageDatasetName(config.dataset)), config.data_dir);
  if (!loaded.ok()) return Error{loaded.error()};
  TrainTest split = std::move(loaded).value();
  split.train = std::move(split.train).First(config.train_rows);
  split.test = std::move(split.test).First(config.test_rows);
  if (config.validation_rows > 0) {
    auto held = HoldOut(split.train, config.validation_rows, config.seed);
    if (!held.ok()) return Error{held.error()};
    split.train = std::move(held->fit);
    split.test = std::move(held->validation);
  }

  LdpFlExperiment e;
  e.config = config;
  e.train_rows = split.train.size();
  e.test_rows = split.test.size();
  e.processes = cluster.size();
  if (IsTorchScriptFile(config.training.arch)) {
    // Probe the model on one row before anything is printed or trained.
    auto net = NeuralNet::Create(e.config.training.arch, 0);
    if (!net.ok()) return Error{"model: " + net.error()};
    if (const Status s = net->CheckInput(split.train); !s.ok()) return Error{"model: " + s.error()};
  }
  LdpFlConfig first = e.config.training;  // the private run, the first to train
  first.is_private = true;
  FEDLDP_RETURN_IF_ERROR(CheckLdpFlRun(first, split.train, split.test, config.seed));
  FEDLDP_ASSIGN_OR_RETURN(e.config.training, ApplyCentralTarget(e.config.training));
  // A round's clients train at once, one per thread, each Torch op on its
  // own thread; a TorchScript model's clients train one after another, with
  // the threads inside Torch's ops instead.
  ThreadPool pool(static_cast<std::size_t>(config.threads));
  const bool concurrent = NeuralNet::TrainsConcurrently(e.config.training.arch);
  NeuralNet::SetThreads(concurrent ? 1 : static_cast<int>(pool.size()));
  const ParallelFor parallel = pool.AsParallelFor();
  if (observer.started) observer.started(e);

  auto train = [&](bool reference) -> Result<LdpFlRun> {
    LdpFlConfig c = e.config.training;
    c.is_private = !reference;
    return TrainLdpFl(
        c, split.train, split.test, config.seed,
        [&](const LdpFlRound& r) {
          if (observer.round) observer.round(reference, r, c.rounds);
        },
        stop, parallel, cluster);
  };
  auto run = train(false);
  if (!run.ok()) return Error{run.error()};
  e.run = std::move(run).value();
  if (config.reference && !cluster.Any(stop.stop_requested())) {
    auto reference = train(true);
    if (!reference.ok()) return Error{reference.error()};
    e.reference = std::move(reference).value();
  }
  return e;
}

std::string LdpFlExperiment::RecordJson() const {
  const LdpFlConfig& t = config.training;
  nlohmann::ordered_json j;
  StartRecord(j);
  j["dataset"] = std::string(ImageDatasetName(config.dataset));
  AddConfigFields(j, LdpFlOptions(), t);
  j["train_rows"] = train_rows;
  j["test_rows"] = test_rows;
  j["scored_on"] = validation() ? "validation" : "test";
  j["seed"] = config.seed;
  j["stopped"] = stopped();
  j["processes"] = processes;
  j["rounds_done"] = run.rounds.size();
  j["client_step"] = run.client_step;
  j["trained"] = run.trained;  // weights trained and reported (all but the frozen)
  j["accuracy"] = Percent(run.final_accuracy());
  j["accuracy_per_round"] = nlohmann::json::array();
  j["per_round"] = nlohmann::json::array();
  double seconds = 0;
  for (const LdpFlRound& r : run.rounds) {
    j["accuracy_per_round"].push_back(Percent(r.accuracy));
    j["per_round"].push_back({{"round", r.round},
                              {"accuracy", Percent(r.accuracy)},
                              {"train_seconds", r.train_seconds},
                              {"perturb_seconds", r.perturb_seconds},
                              {"shuffle_seconds", r.shuffle_seconds},
                              {"aggregate_seconds", r.aggregate_seconds}});
    seconds += r.train_seconds + r.perturb_seconds + r.shuffle_seconds + r.aggregate_seconds;
  }
  j["majority"] = Percent(run.majority);
  // Absent (not run) is null.
  j["noise_free"] =
      reference ? nlohmann::json(Percent(reference->final_accuracy())) : nlohmann::json();
  // The statement covers every configured round (an upper bound if stopped).
  j["privacy"] = PrivacyJson(LdpFlPrivacyRecord(t, run.privacy, run.vector_privacy));
  j["seconds"] = seconds;
  return j.dump();
}

}  // namespace fedldp
