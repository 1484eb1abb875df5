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

nlohmann::ordered_json FiniteOrNull(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

namespace {

nlohmann::ordered_json GuaranteeJson(const DpGuarantee& g) {
  return {{"epsilon", FiniteOrNull(g.epsilon)}, {"delta", g.delta}};
}

nlohmann::ordered_json TextOrNull(const std::string& text) {
  return text.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(text);
}

}  // namespace

nlohmann::ordered_json PrivacyJson(const std::optional<PrivacyRecord>& record) {
  if (!record) return nullptr;
  const PrivacyRecord& r = *record;
  nlohmann::ordered_json j;
  j["mechanism"] = r.mechanism;
  j["local"] = GuaranteeJson(r.local);
  j["per_round"] = GuaranteeJson(r.per_round);
  j["total"] = GuaranteeJson(r.total);
  j["local_total"] = GuaranteeJson(r.local_total);
  j["rule"] = r.rule;
  j["rounds"] = r.rounds;
  j["reports_per_round"] =
      r.reports_per_round > 0 ? nlohmann::ordered_json(r.reports_per_round) : nullptr;
  j["sampling_rate"] = r.sampling_rate;
  j["allowance"] = r.allowance;
  j["warning"] = TextOrNull(r.warning);
  j["arguments"] = TextOrNull(r.arguments);
  j["floating_point"] = r.floating_point;
  return j;
}

nlohmann::ordered_json CrossValidationRecord(const std::string& dataset, const Dataset& data,
                                             const FedSelConfig& config,
                                             const CrossValidationOptions& cv,
                                             const CrossValidationResult& result,
                                             std::optional<double> nonprivate_mean,
                                             const std::optional<PrivacyRecord>& privacy) {
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
  j["privacy"] = PrivacyJson(privacy);
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
