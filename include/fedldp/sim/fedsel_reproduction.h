// FedSel's Table 3 (the gains and losses of private selection at eps = 2 on
// syn-L-0.01-0.9, BANK, KDD and ADULT, logistic regression and SVM), beside
// the paper's values, the non-private model and the majority class, then the
// data and plots of Fig. 2(f-i) and Fig. 3 on ADULT: what `fedldp reproduce
// fedsel` runs, as a library call that writes its folder.
//
//   FedSelReproductionConfig config;
//   config.out = "out/fedsel";
//   Result<FedSelReproduction> r = ReproduceFedSel(config, observer, stop);
#ifndef FEDLDP_SIM_FEDSEL_REPRODUCTION_H_
#define FEDLDP_SIM_FEDSEL_REPRODUCTION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/model/linear.h"
#include "fedldp/sim/cross_validation.h"
#include "fedldp/sim/figure.h"

namespace fedldp {

struct FedSelReproductionConfig {
  std::string data_dir;  // "": DefaultDataDir() (data/loaders.h)
  std::string out;       // the folder written (created if missing)
  // A smoke run: 1 x 2-fold CV instead of 10 x 5 (Table 3) and 2 x 5 (the
  // figures), and two points per sweep.
  bool quick = false;
  std::uint64_t seed = 1;
  std::size_t threads = 0;  // 0: all cores
  double epsilon = 2.0;     // Table 3's total budget per client
  bool figures = true;      // false: Table 3 only
  GradientScaling gradient_scaling = GradientScaling::kClip;

  // OK, or the first thing wrong (e.g. "epsilon must be in (0, 500]").
  Status Validate() const;
};

struct FedSelReproduction;

struct FedSelReproductionObserver {
  // Before the first run: one line saying what runs (budget, gradients,
  // CV, seed, threads, folder).
  std::function<void(const std::string& summary)> started;
  // While a configuration is cross-validated ("bank/svm ps-pm"): iterations
  // done of all its folds'.
  std::function<void(const std::string& label, std::size_t done, std::size_t total)> progress;
  // After each row of Table 3 ("bank/svm").
  std::function<void(const std::string& row)> row;
  // Once Table 3 is written: the result holds table3, learned_nothing,
  // seconds and updates (the figures are still to come).
  std::function<void(const FedSelReproduction& sofar)> table3;
  // After each figure is written; `note` says why its images were not
  // rendered ("" if they were).
  std::function<void(const Figure& figure, const std::string& note)> figure;
};

struct FedSelReproduction {
  FedSelReproductionConfig config;
  CrossValidationOptions table_cv, figure_cv;
  std::string table3;  // Markdown, as in DIR/table3.md
  // Table 3's accuracies not above the majority class, e.g. "bank/svm pm
  // 88.10 % <= 88.30 % majority".
  std::vector<std::string> learned_nothing;
  double seconds = 0;                     // Table 3's training time
  std::size_t updates = 0;                // Table 3's client updates
  std::vector<Figure> figures;            // as written into DIR
  std::vector<std::string> figure_notes;  // why an image was not rendered
  // A stop was requested: the configuration in progress ended after its
  // fold and nothing after it ran. Every finished configuration is in
  // runs.jsonl; Table 3's files are written only if all of it ran.
  bool stopped = false;
};

// Loads the four datasets, then runs Table 3 (DIR/table3.{md,csv}) and the
// figures (DIR/fig2{f,g,h,i}.*, DIR/fig3{a,b,c}.*, sim/figure.h), with one
// line per cross-validated configuration in DIR/runs.jsonl (records.h).
// Errors: the configuration, the data (before anything in DIR is touched),
// a file that cannot be written (ErrorCode::kIo).
Result<FedSelReproduction> ReproduceFedSel(const FedSelReproductionConfig& config,
                                           const FedSelReproductionObserver& observer = {},
                                           std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_SIM_FEDSEL_REPRODUCTION_H_
