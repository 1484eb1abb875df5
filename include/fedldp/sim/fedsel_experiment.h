// One FedSel experiment as `fedldp train` runs it, as a library call: load
// a dataset (named, or the user's CSV/LIBSVM file), cross-validate one
// configuration (or tune it per fold on validation rows only), beside the
// non-private model on the same folds and the majority class, with the
// privacy statement of a shuffled run; the result carries its JSON record.
//
//   FedSelExperimentConfig config;                  // adult, ps-pm, eps 2
//   config.training = DefaultFedSelConfig(ParseFedSelVariant("privunitg").value());
//   if (Status s = config.Validate(); !s.ok()) ...
//   Result<FedSelExperiment> e = RunFedSelExperiment(config, observer, stop);
#ifndef FEDLDP_SIM_FEDSEL_EXPERIMENT_H_
#define FEDLDP_SIM_FEDSEL_EXPERIMENT_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/sim/cross_validation.h"
#include "fedldp/sim/tuning.h"

namespace fedldp {

struct FedSelExperimentConfig {
  // The data: a named dataset (loaders.h: adult, bank, kdd, a9a, syn-...,
  // mnist, fmnist) from data_dir, or, when data_file is set, the user's CSV
  // (label_column: a header name or 0-based index; "": the last) or LIBSVM
  // file. mnist and fmnist run on their standard split (cv.repeats runs, no
  // folds), pooled pool x pool when pool > 1. Then feature_center is
  // subtracted from every feature (data/dataset.h: CenterFeatures).
  std::string dataset = "adult";
  std::string data_dir;  // "": DefaultDataDir()
  std::string data_file;
  std::string label_column;
  int pool = 1;
  double feature_center = 0;

  FedSelConfig training = DefaultFedSelConfig(FedSelVariant{});  // ps-pm
  // With training.shuffle: the total central eps per client instead of
  // training.epsilon; each fold runs at the largest local eps that meets
  // it. central_delta is the run's total delta.
  std::optional<double> central_epsilon;
  double central_delta = 1e-6;

  // Tuning: each fold chooses its point of `grid` (nullopt: DefaultGrid) on
  // validation rows carved from its training rows.
  bool tune = false;
  std::optional<FedSelGrid> grid;
  TuningOptions tuning;
  // The grid tuning searches: `grid`, or DefaultGrid(training).
  FedSelGrid SearchedGrid() const { return grid.value_or(DefaultGrid(training)); }

  CrossValidationOptions cv;  // 10 x 5 folds, seed 1 (test_from: set from the data)
  // The non-private reference on the same folds: np at reference_lr, with
  // the private run's epochs, loss, lambda and scaling, and m / N from
  // reference_batch_fraction (nullopt: np's default 0.01); with tune, tuned
  // on np's own grid and the same validation rows.
  bool reference = true;
  double reference_lr = 1.0;
  std::optional<double> reference_batch_fraction;
  std::size_t threads = 0;  // 0: all cores

  // OK, or the first thing wrong. What needs the data (the plan, the
  // accountant's statement) is checked by RunFedSelExperiment before it
  // trains.
  Status Validate() const;
};

struct FedSelExperiment {
  FedSelExperimentConfig config;
  std::string dataset_label;            // "adult", "mnist pooled 2 x 2", or the file
  std::shared_ptr<const Dataset> data;  // what ran: with test_from, train then test rows
  std::size_t test_from = 0;            // > 0: the standard split's first test row
  std::size_t threads = 0;              // the pool's size (per process)
  int processes = 1;                    // the cluster's (MPI processes)
  // The configuration of the last fold as it ran (tuned or calibrated).
  FedSelConfig effective;
  CrossValidationResult result;
  std::optional<CrossValidationResult> reference;
  std::vector<FedSelConfig> chosen;  // per fold, with tune or central_epsilon
  // A private run's statement by the accountant (the last fold's), and what
  // `account run` takes to state it again.
  std::optional<RunPrivacy> privacy;
  std::optional<RunPrivacyConfig> accounting;
  // What the data say before training (a user's file far from unit scale:
  // FeatureScaleWarning); printed with the header.
  std::vector<std::string> warnings;

  bool stopped() const { return result.stopped || (reference && reference->stopped); }
  // The non-private reference ran and does not beat the majority class:
  // its settings do not fit the data (train refuses to exit 0 on it).
  bool weak_reference() const;
  // The mean minus 2 standard errors is above the majority class.
  bool learned() const;
  // One JSON object (no newline): CrossValidationRecord (records.h).
  std::string RecordJson() const;
};

struct FedSelObserver {
  // After the data loaded and every check passed, before any training.
  std::function<void(const FedSelExperiment&)> started;
  // progress(label, done, total) while a stage runs: the private run
  // (label "private"), then the reference ("reference").
  std::function<void(const std::string& label, std::size_t done, std::size_t total)> progress;
};

// `fedldp tune`: every point of the grid (config.grid, else DefaultGrid)
// trained on config.tuning's validation splits of the training rows (all
// rows, or a standard split's training rows; never its test rows).
struct FedSelTuningRun {
  FedSelExperimentConfig config;
  std::string dataset_label;
  std::shared_ptr<const Dataset> data;
  std::size_t test_from = 0;
  std::size_t points = 0;   // of the grid
  std::size_t threads = 0;  // the pool's size
  FedSelTuning tuning;
  // One JSON line per grid point (its configuration, validation accuracy,
  // sd and score in percent, the privacy a run of it on a split states at
  // config.central_delta, or why it was refused), each ending in "\n".
  std::string RecordLines() const;
};

struct FedSelTuningObserver {
  std::function<void(const FedSelTuningRun&)> started;  // checked and loaded; nothing run
  std::function<void(std::size_t done, std::size_t total)> progress;
};

// A stop requested on `stop` skips the (point, split) runs not yet started:
// tuning.stopped, and the points that did not run are refused.
Result<FedSelTuningRun> RunFedSelTuning(const FedSelExperimentConfig& config,
                                        const FedSelTuningObserver& observer = {},
                                        std::stop_token stop = {});

// Runs the experiment. A stop requested on `stop` ends it before the next
// fold; the folds done are returned (stopped()), and an error if none had
// finished. Errors: the configuration, the data. On a cluster of MPI
// processes (mpi/mpi.h) every process runs it alike and gets the same
// experiment; the clients of each training run are spread over them.
Result<FedSelExperiment> RunFedSelExperiment(const FedSelExperimentConfig& config,
                                             const FedSelObserver& observer = {},
                                             std::stop_token stop = {},
                                             Cluster& cluster = OneProcess());

}  // namespace fedldp

#endif  // FEDLDP_SIM_FEDSEL_EXPERIMENT_H_
