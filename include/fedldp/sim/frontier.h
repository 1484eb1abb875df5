// The accuracy-privacy frontier: every method at every total budget, with
// and without the shuffler, on the same folds and seeds, each with its
// hyper-parameters chosen on validation rows carved from each fold's
// training rows (nested cross-validation, tuning.h), beside the
// non-private model tuned the same way and the majority class.
//
// The x of every row is an honest total per client over the run:
//   - local: the run's eps (one report per client; FedSel's two stages and
//     LDP-FL's d coordinates at eps/d each compose to it); the Gaussian's
//     delta is its per-report delta;
//   - shuffled: the central (eps, delta) of `fedldp account run`, the local
//     eps of each fold calibrated to the largest that meets the target.
#ifndef FEDLDP_SIM_FRONTIER_H_
#define FEDLDP_SIM_FRONTIER_H_

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/privacy/privacy_record.h"
#include "fedldp/sim/tuning.h"

namespace fedldp {

// FedSel PS-PM, the flat PM, LDP-FL's per-weight two-point, the Gaussian
// baseline, PrivUnitG and FastProjUnit.
std::vector<FedSelVariant> FrontierMethods();

struct FrontierConfig {
  std::vector<FedSelVariant> methods = FrontierMethods();
  std::vector<double> epsilons = {0.5, 1, 2, 4, 8};
  bool local = true;
  bool shuffled = true;
  double delta = 1e-6;  // shuffled: the total delta per client; Gaussian: per report
  CrossValidationOptions cv{1, 5, 1};
  TuningOptions tuning;
  std::optional<FedSelGrid> grid;  // nullopt: DefaultGrid(method, shuffled)
  Status Validate() const;
};

struct FrontierRow {
  std::string method;  // the variant's name
  bool shuffled = false;
  double target_epsilon = 0;  // the budget asked for (total per client)
  double total_epsilon = 0;   // what the runs spent, at most the target (largest over folds)
  double total_delta = 0;
  double local_epsilon = 0;              // per report (smallest over folds)
  std::optional<PrivacyRecord> privacy;  // the fold that spent the most (none: np, skipped)
  CrossValidationResult cv;
  std::vector<FedSelConfig> chosen;  // per fold
  bool learned = false;              // mean - 2 SE above the majority class
  std::string skipped;               // non-empty: why the row did not run
};

struct Frontier {
  std::vector<FrontierRow> rows;
  FrontierRow nonprivate;  // np, tuned the same way
  double majority = 0;     // mean over folds
  double seconds = 0;
  // A stop was requested: the row in progress was dropped and the rest not
  // run; `rows` holds the rows that finished.
  bool stopped = false;
};

// progress(done, total, what) after every row. A stop requested on `stop`
// ends the row in progress after its fold and returns the rows done
// (stopped).
Result<Frontier> RunFrontier(
    const FrontierConfig& config, const Dataset& data, ThreadPool& pool,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress = {},
    std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_SIM_FRONTIER_H_
