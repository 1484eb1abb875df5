#include "experiment.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "fedldp/base/files.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "progress.h"

namespace fedldp::cli {

std::string DataDir(const std::string& given) {
  return given.empty() ? DefaultDataDir() : given;
}

void CheckOut(const std::string& path) {
  if (path.empty()) return;
  if (auto why = CheckOutputFile(path); !why.empty()) throw UsageError("--out: " + why);
}

void AppendOut(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  if (auto why = AppendToFile(path, line); !why.empty()) throw std::runtime_error(why);
}

void ReplaceOut(const std::string& path, const std::string& text) {
  if (auto why = WriteFileAtomically(path, text, 0644, /*overwrite=*/true); !why.empty()) {
    throw std::runtime_error(why);
  }
}

std::optional<double> ParseMu(const std::string& text) {
  if (text == "auto") return std::nullopt;
  char* end = nullptr;
  const double mu = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(mu >= 0 && mu < 1)) {
    throw UsageError("--mu must be a number in [0, 1) or 'auto', got '" + text + "'");
  }
  return mu;
}

std::string DataDirHint(const std::string& error) {
  return error.find("cannot open") != std::string::npos
             ? " (give the dataset folder with --data-dir or FEDLDP_DATA_DIR)"
             : "";
}

CrossValidationResult RunCrossValidation(const FedSelConfig& config, const Dataset& data,
                                         const CrossValidationOptions& cv, ThreadPool& pool,
                                         const std::string& label) {
  ProgressBar bar(label);
  auto r = CrossValidateFedSel(config, data, cv, pool, [&](std::size_t done, std::size_t total) {
    bar.Update(done, total);
  });
  if (!r.ok()) throw UsageError(r.error());
  return std::move(r).value();
}

void StartRecord(nlohmann::ordered_json& j) {
  j["version"] = std::string(Version());
  j["accuracy_unit"] = kAccuracyUnit;
}

void AddConfigFields(nlohmann::ordered_json& j, const FedSelConfig& config) {
  j["variant"] = config.variant;
  j["model"] = LossName(config.loss);
  j["gradient_scaling"] = config.gradient_scaling == GradientScaling::kClip ? "clip" : "normalize";
  j["epsilon"] = config.epsilon;
  j["epochs"] = config.epochs;
  j["lr"] = config.learning_rate;
  j["momentum"] = config.momentum;
  j["batch_fraction"] = config.batch_fraction;
  j["lambda"] = config.lambda;
  j["clip"] = config.clip;
  j["tail_average"] = config.tail_average;
  j["shuffle"] = config.shuffle;
  j["sample_clients"] = config.sample_clients;
  // 0: a client per row.
  j["clients"] = config.clients;
  j["dirichlet_alpha"] = config.dirichlet_alpha;
}

std::string ResultJson(const std::string& dataset, const Dataset& data, const FedSelConfig& config,
                       const CrossValidationOptions& cv, const CrossValidationResult& result,
                       double nonprivate_mean) {
  const FedSelRun& run = result.last;
  nlohmann::ordered_json j;
  StartRecord(j);
  j["dataset"] = dataset;
  j["d"] = data.dimension;
  j["classes"] = data.classes;
  j["weights"] = LinearParameters(data);
  j["records"] = data.size();
  j["test_from"] = cv.test_from;
  AddConfigFields(j, config);
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
  if (nonprivate_mean >= 0 && std::isfinite(nonprivate_mean)) {
    j["nonprivate_mean"] = Percent(nonprivate_mean);
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
  return j.dump();
}

}  // namespace fedldp::cli
