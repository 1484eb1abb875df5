// Pieces shared by `fedldp train` and `fedldp reproduce`.
#ifndef FEDLDP_APPS_FEDLDP_EXPERIMENT_H_
#define FEDLDP_APPS_FEDLDP_EXPERIMENT_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fedldp/base/units.h"
#include "fedldp/data/dataset.h"
#include "fedldp/sim/cross_validation.h"

namespace fedldp::cli {

// `given`, else DefaultDataDir(): $FEDLDP_DATA_DIR, else the data/ the repository carries.
std::string DataDir(const std::string& given);

// --out, checked before any work (an hour of training must not end in
// "cannot write"); throws UsageError. Nothing for an empty path.
void CheckOut(const std::string& path);
// Appends one result line to --out, or throws (exit 1: disk full is a
// failure, never a silent success).
void AppendOut(const std::string& path, const std::string& line);
// Replaces `path` with `text` whole (WriteFileAtomically): a reader, or a
// run killed midway, sees the old file or the new one, never a part.
void ReplaceOut(const std::string& path, const std::string& text);

// --mu: a number in [0, 1), or "auto" (nullopt: the hyper-parameter-free
// rule); throws UsageError otherwise.
std::optional<double> ParseMu(const std::string& text);

// " (give the folder with --data-dir or FEDLDP_DATA_DIR)" when `error` says a
// file could not be opened, else "".
std::string DataDirHint(const std::string& error);

// Cross-validates `config`, drawing a progress bar labelled `label` on a
// terminal; throws UsageError on a configuration error.
CrossValidationResult RunCrossValidation(const FedSelConfig& config, const Dataset& data,
                                         const CrossValidationOptions& cv, ThreadPool& pool,
                                         const std::string& label);

// The fields every JSON record starts with: fedldp's version and the unit of
// its accuracies (kAccuracyUnit, percent).
void StartRecord(nlohmann::ordered_json& j);

// The effective configuration of a FedSel run, as JSON fields added to `j`:
// variant, model, gradient_scaling, epsilon, epochs, lr, momentum,
// batch_fraction, lambda, clip, tail_average, shuffle, sample_clients,
// clients (0: one per row), dirichlet_alpha.
void AddConfigFields(nlohmann::ordered_json& j, const FedSelConfig& config);

// One JSON object (no newline) describing a cross-validated run: fedldp's
// version, the effective configuration, the seed and the results, with
// per_fold: each fold's repeat, fold, accuracy and majority (all accuracies
// in percent);
// nonprivate_mean < 0 (not run) is written as null.
std::string ResultJson(const std::string& dataset, const Dataset& data, const FedSelConfig& config,
                       const CrossValidationOptions& cv, const CrossValidationResult& result,
                       double nonprivate_mean);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_EXPERIMENT_H_
