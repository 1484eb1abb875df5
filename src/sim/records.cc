#include "fedldp/sim/records.h"

#include <cmath>

#include "fedldp/base/units.h"
#include "fedldp/base/version.h"
#include "fedldp/fl/fedsel_options.h"
#include "fedldp/model/linear.h"

namespace fedldp {

void StartRecord(nlohmann::ordered_json& j) {
  j["version"] = std::string(Version());
  j["accuracy_unit"] = kAccuracyUnit;
}

// The variant, then every recorded option (FedSelOptions), in its order.
void AddFedSelConfigFields(nlohmann::ordered_json& j, const FedSelConfig& config) {
  j["variant"] = FedSelVariantName(config.variant);
  AddConfigFields(j, FedSelOptions(), config);
}

nlohmann::ordered_json CrossValidationRecord(const std::string& dataset, const Dataset& data,
                                             const FedSelConfig& config,
                                             const CrossValidationOptions& cv,
                                             const CrossValidationResult& result,
                                             std::optional<double> nonprivate_mean) {
  const FedSelRun& run = result.last;
  nlohmann::ordered_json j;
  StartRecord(j);
  j["dataset"] = dataset;
  j["d"] = data.dimension;
  j["classes"] = data.classes;
  j["weights"] = LinearParameters(data);
  j["records"] = data.size();
  j["test_from"] = cv.test_from;
  AddFedSelConfigFields(j, config);
  j["eps_epoch"] = run.budget.epoch_epsilon;
  j["eps_select"] = run.budget.select_epsilon;
  j["eps_value"] = run.budget.value_epsilon;
  j["eps_total_per_client"] = run.budget.TotalPerClient();
  j["mu"] = run.budget.mu;
  j["m"] = run.batch;
  j["k"] = run.k;
  j["rounds"] = run.plan.rounds;
  j["repeats"] = cv.repeats;
  j["folds"] = cv.folds;
  j["seed"] = cv.seed;
  j["accuracy_mean"] = Percent(result.MeanAccuracy());
  j["accuracy_sd"] = Percent(result.StdAccuracy());
  j["misclassification_mean"] = Percent(1 - result.MeanAccuracy());
  j["majority_mean"] = Percent(result.MeanMajority());
  // Absent (not run) is null, never a made-up number.
  if (nonprivate_mean && std::isfinite(*nonprivate_mean)) {
    j["nonprivate_mean"] = Percent(*nonprivate_mean);
  } else {
    j["nonprivate_mean"] = nullptr;
  }
  j["seconds"] = result.seconds;
  j["client_updates"] = result.updates;
  // Each fold's (or fixed split's run's) figures, in run order.
  j["per_fold"] = nlohmann::json::array();
  for (const FoldResult& f : result.folds) {
    j["per_fold"].push_back({{"repeat", f.repeat},
                             {"fold", f.fold},
                             {"accuracy", Percent(f.accuracy)},
                             {"majority", Percent(f.majority)}});
  }
  return j;
}

}  // namespace fedldp
