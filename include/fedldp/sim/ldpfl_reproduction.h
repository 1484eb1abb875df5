// LDP-FL's Table 1 (fixed against adaptive ranges), the eps sweep of
// Fig. 5(a, b) and the client-count sweep of Fig. 3(a, b), for MNIST or
// Fashion-MNIST, beside the paper's numbers, the noise-free federated model
// and the majority class: what `fedldp reproduce ldpfl` runs, as a library
// call that writes its folder.
//
// Every run is one (setting, seed) pair, appended to DIR/runs.jsonl as soon as
// it ends; `resume` reuses the runs found there, so a long job that is
// stopped (or killed) loses at most the run in progress.
//
//   LdpFlReproductionConfig config;
//   config.out = "out/ldpfl-mnist";
//   Result<LdpFlReproduction> r = ReproduceLdpFl(config, observer, stop);
#ifndef FEDLDP_SIM_LDPFL_REPRODUCTION_H_
#define FEDLDP_SIM_LDPFL_REPRODUCTION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/sim/figure.h"
#include "fedldp/sim/ldpfl_experiment.h"
#include "fedldp/sim/run_journal.h"

namespace fedldp {

struct LdpFlReproductionConfig {
  ImageDataset dataset = ImageDataset::kMnist;  // mnist or fmnist: the paper's two
  std::string data_dir;                         // "": where setup put it
  std::string out;                              // the folder written (created if missing)
  // A smoke run: the first 6,000 training and 1,000 test images, n = 10, at
  // most 3 rounds, 2 points per sweep.
  bool quick = false;
  int local_epochs = 1;  // E (the paper does not say; docs/ldpfl.md)
  std::size_t batch = 10;
  int rounds = 10;
  int repeats = 1;  // runs per setting, seeds seed, seed + 1, ...
  bool resume = false;
  bool raw_inputs = false;       // [0, 1] pixels instead of standardised ones
  bool perturb_updates = false;  // fixed-range private runs perturb W - W_global
  bool figures = true;           // false: Table 1 only
  int threads = 0;               // clients trained at once (0: one per core)
  std::uint64_t seed = 1;

  // OK, or the first thing wrong (e.g. "repeats must be in [1, 100]").
  Status Validate() const;
};

// One run trained now (not one reused from runs.jsonl).
using LdpFlReproductionRun = JournaledRun;

// Its `started` summary is one line: data, model, rounds, E, B, range,
// seeds, folder.
using LdpFlReproductionObserver = JournaledObserver;

struct LdpFlReproduction {
  LdpFlReproductionConfig config;         // as run (--quick caps the rounds)
  std::size_t resumed = 0;                // runs reused from runs.jsonl
  std::size_t trained = 0;                // runs trained now
  std::string table1;                     // Markdown, as in DIR/table1.md
  std::vector<Figure> figures;            // as written into DIR (empty without figures)
  std::vector<std::string> figure_notes;  // why an image was not rendered
  // Settings whose mean accuracy is not above the majority class.
  std::vector<std::string> learned_nothing;
  // What is proven for each private setting, by (eps, n); DIR/privacy.md.
  std::map<std::pair<double, std::size_t>, LdpFlPrivacy> privacy;
  // Time of the private runs trained now, and the shares of it spent
  // perturbing and shuffling.
  double private_seconds = 0, round_seconds = 0, perturb_share = 0, shuffle_share = 0;
  // A stop was requested: the run in progress was dropped, the finished
  // ones are in runs.jsonl, and no table, figure or privacy.md was written.
  bool stopped = false;
};

// Runs every setting asked for (reusing runs.jsonl's with `resume`), then
// writes DIR/table1.{md,csv}, DIR/fig5{a,b}.* and DIR/fig3{a,b}.*
// (sim/figure.h) and DIR/privacy.md. Errors: the configuration, the data, a
// file that cannot be written; nothing in DIR is touched before the
// configuration and the data are checked.
Result<LdpFlReproduction> ReproduceLdpFl(const LdpFlReproductionConfig& config,
                                         const LdpFlReproductionObserver& observer = {},
                                         std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_SIM_LDPFL_REPRODUCTION_H_
