#include "fedldp/sim/fedsel_experiment.h"

#include <cmath>
#include <numeric>
#include <utility>

#include "fedldp/base/format.h"
#include "fedldp/base/limits.h"
#include "fedldp/base/names.h"
#include "fedldp/base/units.h"
#include "fedldp/data/loaders.h"
#include "fedldp/model/linear.h"
#include "fedldp/sim/records.h"

namespace fedldp {

namespace {

// Datasets that come with their test set (the registry's images): train on
// it, test on it.
bool IsImageDataset(const std::string& name) {
  const DatasetKind* kind = FindDataset(name);
  return kind != nullptr && kind->image();
}

// The data the configuration names, and its label; with an image dataset,
// the training rows then the test rows (test_from: the first test row).
Status Load(const FedSelExperimentConfig& c, FedSelExperiment& e) {
  Dataset data;
  if (!c.data_file.empty()) {
    auto loaded = LoadDataFile(c.data_file, c.label_column);
    if (!loaded.ok()) return Error{"data file: " + loaded.error()};
    data = std::move(loaded).value();
    e.dataset_label = c.data_file;
    if (std::string w = FeatureScaleWarning(data); !w.empty()) e.warnings.push_back(std::move(w));
  } else if (IsImageDataset(c.dataset)) {
    auto split = LoadImageSplit(c.dataset, c.data_dir);
    if (!split.ok()) return Error{split.error()};
    TrainTest parts = std::move(split).value();
    if (c.pool > 1) {
      for (Dataset* part : {&parts.train, &parts.test}) {
        auto pooled = AveragePool(*part, static_cast<std::size_t>(c.pool));
        if (!pooled.ok()) return Error{"pool: " + pooled.error()};
        *part = std::move(pooled).value();
      }
    }
    data = std::move(parts.train);
    data.name = c.dataset;
    e.test_from = data.size();
    for (std::size_t i = 0; i < parts.test.size(); ++i) {
      data.Append(parts.test.row(i), parts.test.labels[i]);
    }
    const std::string f = std::to_string(c.pool);
    e.dataset_label = c.pool > 1 ? c.dataset + " pooled " + f + " x " + f : c.dataset;
  } else {
    auto loaded = LoadNamed(c.dataset, c.data_dir.empty() ? DefaultDataDir() : c.data_dir);
    if (!loaded.ok()) return Error{loaded.error()};
    data = std::move(loaded).value();
    e.dataset_label = c.dataset;
  }
  if (c.feature_center != 0) {
    FEDLDP_RETURN_IF_ERROR(CenterFeatures(data, c.feature_center));
    e.dataset_label += ", features centred on " + Significant(c.feature_center, 6);
  }
  e.data = std::make_shared<const Dataset>(std::move(data));
  return {};
}

}  // namespace

Status FedSelExperimentConfig::Validate() const {
  FEDLDP_RETURN_IF_ERROR(training.variant.Validate());
  const FedSelVariant* variant = &training.variant;
  if (!label_column.empty() && data_file.empty()) {
    return Error{"a label column applies to a CSV data file only"};
  }
  if (pool < 1) return Error{"pool must be >= 1"};
  FEDLDP_RETURN_IF_ERROR(CheckFeatureCenter(feature_center));
  if (pool > 1 && (!data_file.empty() || !IsImageDataset(dataset))) {
    return Error{"pooling applies to the image datasets (" + Listed(DatasetNames(true)) + ") only"};
  }
  FEDLDP_RETURN_IF_ERROR(CheckFedSelEpsilon(training.epsilon, training.epochs));
  const bool gaussian = NeedsDelta(*variant);
  if (training.shuffle) {
    if (!variant->is_private()) {
      return Error{"shuffle: variant " + FedSelVariantName(training.variant) + " is not private"};
    }
    if (gaussian) return Error{"shuffle: no amplification is proven for the Gaussian's reports"};
  }
  if (central_epsilon) {
    if (!training.shuffle) return Error{"a central epsilon needs the shuffler"};
    FEDLDP_RETURN_IF_ERROR(CheckEpsilon(*central_epsilon, "central epsilon"));
  }
  FEDLDP_RETURN_IF_ERROR(CheckDelta(central_delta, "central delta"));
  if (training.dirichlet_alpha != 0 && training.clients == 0) {
    return Error{"a Dirichlet alpha needs clients (the rows are split among them)"};
  }
  if (grid && !tune) return Error{"a grid needs tuning"};
  FEDLDP_RETURN_IF_ERROR(tuning.Validate());
  FEDLDP_RETURN_IF_ERROR(cv.Validate());
  return CheckLearningRate(reference_lr, "the reference's learning rate");
}

bool FedSelExperiment::learned() const {
  if (result.folds.empty()) return false;
  return result.MeanAccuracy() -
             2 * result.StdAccuracy() / std::sqrt(static_cast<double>(result.folds.size())) >
         result.MeanMajority();
}

bool FedSelExperiment::weak_reference() const {
  return reference && !reference->folds.empty() &&
         reference->MeanAccuracy() <= reference->MeanMajority();
}

std::string FedSelExperiment::RecordJson() const {
  CrossValidationOptions cv = config.cv;
  cv.test_from = test_from;
  auto j = CrossValidationRecord(
      config.data_file.empty() ? config.dataset : config.data_file, *data, effective, cv, result,
      reference && !reference->folds.empty() ? std::optional<double>(reference->MeanAccuracy())
                                             : std::nullopt,
      privacy ? std::optional(FedSelPrivacyRecord(*privacy, effective.variant)) : std::nullopt);
  j["pool"] = config.pool;
  j["feature_center"] = config.feature_center;
  j["reference_weak"] = weak_reference();
  j["stopped"] = stopped();
  j["processes"] = processes;
  return j.dump();
}

namespace {

// What both runners share: the data loaded, the folds and the per-fold
// preparation, everything checked before any training.
struct Setup {
  FedSelExperiment e;
  CrossValidationOptions cv;
  PreparePoint prepare;
};

Result<Setup> MakeSetup(const FedSelExperimentConfig& config) {
  if (Status s = config.Validate(); !s.ok()) return Error{s.error()};
  Setup setup;
  FedSelExperiment& e = setup.e;
  e.config = config;
  e.effective = config.training;
  if (Status s = Load(config, e); !s.ok()) return Error{s.error()};
  const Dataset& data = *e.data;
  setup.cv = config.cv;
  setup.cv.test_from = e.test_from;
  if (Status s = CheckFolds(setup.cv, data.size()); !s.ok()) return Error{s.error()};
  // A fold's plan, and with the shuffler what the accountant states.
  const std::size_t fold_rows =
      e.test_from > 0 ? e.test_from
                      : data.size() - data.size() / static_cast<std::size_t>(config.cv.folds);
  setup.prepare = [d = LinearParameters(data), central = config.central_epsilon,
                   delta = config.central_delta](const FedSelConfig& c,
                                                 std::size_t clients) -> Result<FedSelConfig> {
    if (!central) return c;
    return CalibrateToCentral(c, clients, d, *central, delta);
  };
  auto prepared = setup.prepare(config.training, fold_rows);
  if (!prepared.ok()) return Error{prepared.error()};
  auto plan = PlanFedSel(*prepared, fold_rows, LinearParameters(data));
  if (!plan.ok()) return Error{plan.error()};
  if (config.training.shuffle) {
    if (auto p = AccountRun(FedSelRunPrivacy(*plan, *prepared, config.central_delta)); !p.ok()) {
      return Error{"shuffle: " + p.error()};
    }
  }
  return setup;
}

}  // namespace

namespace {

// A private run's statement, by the accountant on the last fold's plan.
Status StatePrivacy(const FedSelExperimentConfig& config, FedSelExperiment& e) {
  if (!e.effective.variant.is_private()) return {};
  e.accounting = FedSelRunPrivacy(e.result.last.plan, e.effective, config.central_delta);
  auto stated = AccountRun(*e.accounting);
  if (!stated.ok()) return Error{"the accountant: " + stated.error()};
  e.privacy = std::move(stated).value();
  return {};
}

// The non-private model as FedSel's paper trains it (m = 0.01 N, the last
// iterate, lr reference_lr), whatever the private variant's batch and
// averaging: a reference weakened by a private run's settings would flatter
// it. With tuning, the reference is tuned too, on its own grid and the same
// validation rows (never the test rows), as the private run is.
Result<CrossValidationResult> RunReference(
    const FedSelExperimentConfig& config, const FedSelConfig& effective, const Dataset& data,
    const CrossValidationOptions& cv, ThreadPool& pool,
    const std::function<void(std::size_t, std::size_t)>& progress, std::stop_token stop,
    Cluster& cluster) {
  const FedSelVariant np_variant = ParseFedSelVariant("np").value();
  FedSelConfig np = DefaultFedSelConfig(np_variant);
  np.loss = effective.loss;
  np.epochs = effective.epochs;
  np.lambda = effective.lambda;
  np.gradient_scaling = effective.gradient_scaling;
  if (config.reference_batch_fraction) np.batch_fraction = *config.reference_batch_fraction;
  np.learning_rate = config.reference_lr;
  if (!config.tune) return CrossValidateFedSel(np, data, cv, pool, progress, stop, cluster);
  auto tuned = CrossValidateTuned(np, DefaultGrid(np), data, cv, config.tuning, pool, {}, progress,
                                  stop, cluster);
  if (!tuned.ok()) return Error{tuned.error()};
  return std::move(tuned->result);
}

}  // namespace

Result<FedSelExperiment> RunFedSelExperiment(const FedSelExperimentConfig& config,
                                             const FedSelObserver& observer, std::stop_token stop,
                                             Cluster& cluster) {
  auto made = MakeSetup(config);
  if (!made.ok()) return Error{made.error()};
  Setup setup = std::move(made).value();
  FedSelExperiment& e = setup.e;
  const Dataset& data = *e.data;
  const CrossValidationOptions& cv = setup.cv;
  const PreparePoint& prepare = setup.prepare;
  ThreadPool pool(config.threads);
  e.threads = pool.size();
  e.processes = cluster.size();
  if (observer.started) observer.started(e);

  auto progress = [&](const std::string& label) {
    return [&observer, label](std::size_t done, std::size_t total) {
      if (observer.progress) observer.progress(label, done, total);
    };
  };
  if (config.tune || config.central_epsilon) {
    const FedSelGrid grid = config.tune ? config.SearchedGrid() : FedSelGrid{};
    auto tuned = CrossValidateTuned(config.training, grid, data, cv, config.tuning, pool, prepare,
                                    progress("private"), stop, cluster);
    if (!tuned.ok()) return Error{tuned.error()};
    e.result = std::move(tuned->result);
    e.chosen = std::move(tuned->chosen);
    if (!e.chosen.empty()) e.effective = e.chosen.back();
  } else {
    auto r =
        CrossValidateFedSel(config.training, data, cv, pool, progress("private"), stop, cluster);
    if (!r.ok()) return Error{r.error()};
    e.result = std::move(r).value();
  }
  if (e.result.folds.empty()) return Error{"stopped before the first fold finished"};
  FEDLDP_RETURN_IF_ERROR(StatePrivacy(config, e));
  if (config.reference && !TraitsOf(config.training.variant).is_reference &&
      !cluster.Any(stop.stop_requested())) {
    auto r =
        RunReference(config, e.effective, data, cv, pool, progress("reference"), stop, cluster);
    if (!r.ok()) return Error{r.error()};
    if (!r->folds.empty()) e.reference = std::move(r).value();
  }
  return std::move(e);
}

Result<FedSelTuningRun> RunFedSelTuning(const FedSelExperimentConfig& config,
                                        const FedSelTuningObserver& observer,
                                        std::stop_token stop) {
  auto made = MakeSetup(config);
  if (!made.ok()) return Error{made.error()};
  Setup setup = std::move(made).value();
  FedSelTuningRun t;
  t.config = config;
  t.dataset_label = setup.e.dataset_label;
  t.data = setup.e.data;
  t.test_from = setup.e.test_from;
  // Tuning reads the training rows only: all, or a standard split's.
  std::vector<std::size_t> rows(t.test_from > 0 ? t.test_from : t.data->size());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  const FedSelGrid grid = config.SearchedGrid();
  t.points = grid.Points(config.training).size();
  ThreadPool pool(config.threads);
  t.threads = pool.size();
  if (observer.started) observer.started(t);
  auto tuned = TuneFedSel(config.training, grid, *t.data, rows, config.tuning, pool, setup.prepare,
                          observer.progress, std::move(stop));
  if (!tuned.ok()) return Error{tuned.error()};
  t.tuning = std::move(tuned).value();
  return t;
}

std::string FedSelTuningRun::RecordLines() const {
  std::string lines;
  for (const TuningTrial& trial : tuning.trials) {
    nlohmann::ordered_json j;
    StartRecord(j);
    j["dataset"] = config.data_file.empty() ? config.dataset : config.data_file;
    j["pool"] = config.pool;
    j["feature_center"] = config.feature_center;
    AddFedSelConfigFields(j, trial.config);
    j["validation_fraction"] = config.tuning.validation_fraction;
    j["splits"] = config.tuning.splits;
    j["seed"] = config.tuning.seed;
    const bool ran = trial.refused.empty();
    j["validation_accuracy"] = ran ? nlohmann::json(Percent(trial.accuracy)) : nlohmann::json();
    j["validation_sd"] = ran ? nlohmann::json(Percent(trial.sd)) : nlohmann::json();
    j["score"] = ran ? nlohmann::json(Percent(trial.score)) : nlohmann::json();
    // What the point's run on a split spent (null: not private, or not run).
    j["privacy"] = PrivacyJson(
        ran && trial.plan ? FedSelPrivacyRecordOf(*trial.plan, trial.config, config.central_delta)
                          : std::nullopt);
    // Why the point was refused, or null when it ran.
    j["refused"] = ran ? nlohmann::json() : nlohmann::json(trial.refused);
    lines += j.dump() + "\n";
  }
  return lines;
}

}  // namespace fedldp
