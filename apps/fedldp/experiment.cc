#include "experiment.h"

#include <cstdlib>
#include <sstream>

#include "cli.h"
#include "fedldp/base/files.h"
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

std::string ResultJson(const std::string& dataset, const Dataset& data, const FedSelConfig& config,
                       const CrossValidationOptions& cv, const CrossValidationResult& result,
                       double nonprivate_mean) {
  const FedSelRun& run = result.last;
  std::ostringstream o;
  o.precision(10);
  o << "{\"dataset\":\"" << dataset << "\",\"d\":" << data.dimension
    << ",\"classes\":" << data.classes << ",\"weights\":" << LinearParameters(data)
    << ",\"records\":" << data.size() << ",\"test_from\":" << cv.test_from << ",\"model\":\""
    << LossName(config.loss) << "\",\"gradient_scaling\":\""
    << (config.gradient_scaling == GradientScaling::kClip ? "clip" : "normalize")
    << "\",\"variant\":\"" << config.variant << "\",\"epsilon\":" << config.epsilon
    << ",\"epochs\":" << config.epochs << ",\"eps_epoch\":" << run.budget.epoch_epsilon
    << ",\"eps_select\":" << run.budget.select_epsilon
    << ",\"eps_value\":" << run.budget.value_epsilon
    << ",\"eps_total_per_client\":" << run.budget.TotalPerClient() << ",\"mu\":" << run.budget.mu
    << ",\"m\":" << run.batch << ",\"k\":" << run.k << ",\"lr\":" << config.learning_rate
    << ",\"momentum\":" << config.momentum << ",\"batch_fraction\":" << config.batch_fraction
    << ",\"lambda\":" << config.lambda << ",\"clip\":" << config.clip
    << ",\"tail_average\":" << config.tail_average
    << ",\"shuffle\":" << (config.shuffle ? "true" : "false")
    << ",\"sample_clients\":" << (config.sample_clients ? "true" : "false")
    << ",\"rounds\":" << run.plan.rounds << ",\"repeats\":" << cv.repeats
    << ",\"folds\":" << cv.folds << ",\"seed\":" << cv.seed
    << ",\"accuracy_mean\":" << result.MeanAccuracy() << ",\"accuracy_sd\":" << result.StdAccuracy()
    << ",\"misclassification_mean\":" << 1 - result.MeanAccuracy()
    << ",\"majority_mean\":" << result.MeanMajority() << ",\"nonprivate_mean\":" << nonprivate_mean
    << ",\"seconds\":" << result.seconds << ",\"client_updates\":" << result.updates << "}";
  return o.str();
}

}  // namespace fedldp::cli
