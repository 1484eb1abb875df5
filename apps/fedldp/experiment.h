// Pieces shared by `fedldp train` and `fedldp reproduce`.
#ifndef FEDLDP_APPS_FEDLDP_EXPERIMENT_H_
#define FEDLDP_APPS_FEDLDP_EXPERIMENT_H_

#include <string>

#include "fedldp/data/dataset.h"
#include "fedldp/sim/cross_validation.h"

namespace fedldp::cli {

// `given`, else DefaultDataDir(): $FEDLDP_DATA_DIR, else the data/ the repository carries.
std::string DataDir(const std::string& given);

// " (give the folder with --data-dir or FEDLDP_DATA_DIR)" when `error` says a
// file could not be opened, else "".
std::string DataDirHint(const std::string& error);

// Cross-validates `config`, drawing a progress bar labelled `label` on a
// terminal; throws UsageError on a configuration error.
CrossValidationResult RunCrossValidation(const FedSelConfig& config, const Dataset& data,
                                         const CrossValidationOptions& cv, ThreadPool& pool,
                                         const std::string& label);

// One JSON object (no newline) describing a cross-validated run.
std::string ResultJson(const std::string& dataset, const Dataset& data, const FedSelConfig& config,
                       const CrossValidationOptions& cv, const CrossValidationResult& result,
                       double nonprivate_mean);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_EXPERIMENT_H_
