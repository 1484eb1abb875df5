// The accuracy-privacy frontier (docs/frontier.md) as `fedldp reproduce
// frontier` runs it, as a library call that writes its folder: RunFrontier
// (frontier.h) on a named binary dataset, then DIR/frontier.csv,
// DIR/frontier.jsonl (one record per row, records.h), DIR/summary.md and
// the plots DIR/frontier-local.* and DIR/frontier-shuffled.* (figure.h).
//
//   FrontierReproductionConfig config;
//   config.out = "out/frontier";
//   Result<FrontierReproduction> r = ReproduceFrontier(config, observer, stop);
#ifndef FEDLDP_SIM_FRONTIER_REPRODUCTION_H_
#define FEDLDP_SIM_FRONTIER_REPRODUCTION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/sim/figure.h"
#include "fedldp/sim/frontier.h"

namespace fedldp {

struct FrontierReproductionConfig {
  std::string dataset = "adult";  // a binary dataset LoadNamed knows
  std::string data_dir;           // "": DefaultDataDir()
  // The user's own file instead (CSV or LIBSVM, as `train --data`), with a
  // CSV's label column ("": the last); its path names it in every output.
  std::string data_file;
  std::string label_column;
  // What names the data in the outputs: the file, else the dataset.
  const std::string& data_label() const { return data_file.empty() ? dataset : data_file; }
  std::string out;  // the folder written (created if missing)
  // A smoke run: eps in {1, 4}, 1 x 2-fold CV, one validation split, a
  // 4-point grid.
  bool quick = false;
  int repeats = 1, folds = 5;
  int tuning_splits = 2;  // 3 (tune's default) takes the full run past 30 min on 2 cores
  double delta = 1e-6;    // shuffled: the total delta per client; Gaussian: per report
  std::uint64_t seed = 1;
  int threads = 0;  // 0: all cores
  bool figures = true;

  // The frontier this runs (with quick's smaller grid).
  FrontierConfig Frontier() const;
  // OK, or the first thing wrong (e.g. "delta must be in (0, 1)").
  Status Validate() const;
};

struct FrontierReproductionObserver {
  // Before the first row: the data, the CV, the splits, the seed, the threads.
  std::function<void(const std::string& summary)> started;
  // After each row (the non-private one first): rows done of all, and which.
  std::function<void(std::size_t done, std::size_t total, const std::string& what)> progress;
};

struct FrontierReproduction {
  FrontierConfig config;  // as run
  Frontier frontier;
  // DIR/summary.md: the table, the majority class, and the goals as
  // this run measured them (best local at eps <= 2, best shuffled at
  // central eps <= 1, the rows that learned nothing).
  std::string summary;
  std::vector<Figure> figures;            // as written into DIR
  std::vector<std::string> figure_notes;  // why an image was not rendered
  // A stop was requested: the row in progress was dropped and nothing was
  // written.
  bool stopped = false;
};

// Errors: the configuration; the data (missing, or not a binary task),
// before anything in DIR is touched; a file that cannot be written
// (ErrorCode::kIo).
Result<FrontierReproduction> ReproduceFrontier(const FrontierReproductionConfig& config,
                                               const FrontierReproductionObserver& observer = {},
                                               std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_SIM_FRONTIER_REPRODUCTION_H_
