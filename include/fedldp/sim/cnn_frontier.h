// The CNN frontier (issue 42; `fedldp reproduce frontier --model cnn`):
// LDP-FL's CNN on MNIST or Fashion-MNIST trained by single-example clients,
// each privatising its whole clipped update with a vector randomizer
// (PrivUnitG, FastProjUnit) and sending it through the shuffler, at central
// eps targets per client over the run; beside the same training without
// noise, LDP-FL's per-weight two-point in the paper's setting with its
// honest total, and the majority class.
//
// Every private run is calibrated to its target (CalibrateLdpFlToCentral:
// the largest eps per report whose run the accountant states within the
// target) and draws disjoint rounds (each client reports at most once per
// epoch) or, where the grid point says so, rounds sampled in secret by the
// shuffler. Hyper-parameters: `validation_rows` rows drawn from the training
// set (seeded) are held out; every grid point trains on the other rows,
// one client each, and is scored on the held-out rows; the best point is
// trained again on the whole training set, one client per row, and scored
// on the test set, which chooses nothing. The noise-free model is tuned on
// the same grid the same way. (Tuning itself is not accounted, as in the
// linear frontier: docs/frontier.md says so.)
//
// Every run is appended to DIR/runs.jsonl as it ends (sim/run_journal.h);
// `resume` reuses them. Then DIR/cnn-frontier.{csv,jsonl}, DIR/summary.md
// and the plot DIR/cnn-frontier-shuffled.* (sim/figure.h).
//
//   CnnFrontierConfig config;
//   config.out = "out/cnn-frontier";
//   Result<CnnFrontier> f = ReproduceCnnFrontier(config, observer, stop);
#ifndef FEDLDP_SIM_CNN_FRONTIER_H_
#define FEDLDP_SIM_CNN_FRONTIER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/fl/server_optimizer.h"
#include "fedldp/privacy/composition.h"
#include "fedldp/sim/figure.h"
#include "fedldp/sim/ldpfl_experiment.h"
#include "fedldp/sim/run_journal.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

// One point of the grid the runs are tuned over.
struct CnnGridPoint {
  ServerOptimizerConfig server;  // the optimiser and its learning rate
  double clip = 1;               // l2 clip of a client's update
  std::size_t per_round = 1000;  // clients per round
  int epochs = 3;                // rounds: epochs x floor(clients / per_round)
  // kDisjoint: an epoch is the rounds cut from one random order, the
  // server's (a client reports once per epoch). kSampled: every round draws
  // its per_round clients afresh, in secret from the server (the shuffler's
  // draw; the statement composes the sampled rounds' curve), so a client
  // reports `epochs` times in expectation. kAllocated: the epochs' rounds,
  // their order drawn in secret by the shuffler (random allocation: each
  // epoch stated as one shuffle of all its reports).
  enum class Rounds { kDisjoint, kSampled, kAllocated };
  Rounds rounds = Rounds::kDisjoint;
  // What the server releases: its last model, or an average of its iterates.
  IterateAveragingConfig averaging;
  // Layers kept at their initial weights (LdpFlConfig::freeze, e.g. "fc1"):
  // the grid spells a list with '+' ("freeze=fc1+conv1"); "" for none.
  std::string freeze;

  // e.g. "adam lr 0.001, clip 1, 1000 a round, 3 epochs" (then ", sampled
  // in secret" or ", allocated in secret", ", ema 0.995" or ", tail 0.5",
  // and ", fc1 frozen" where set).
  std::string Name() const;
  // "disjoint", "sampled" or "allocated": the grid's word (the CSV's column).
  std::string RoundsName() const;
  Status Validate() const;
};

// "optimizer:lr:clip:per_round:epochs[:sampled|:allocated][:ema=DECAY|:tail=FRACTION]
// [:freeze=LAYERS]", e.g. "adam:0.001:1:1000:3" or
// "adam:0.005:1:6000:100:sampled:ema=0.995:freeze=fc1"
// (the command line's --grid), or why not.
Result<CnnGridPoint> ParseCnnGridPoint(std::string_view spec);

struct CnnFrontierConfig {
  ImageDataset dataset = ImageDataset::kMnist;  // mnist or fmnist
  std::string data_dir;                         // "": where setup put it
  std::string out;                              // the folder written (created if missing)
  // A smoke run: the first 1,200 training images (200 held out) and 500 test
  // images, central eps {2, 8}, PrivUnitG only, a 2-point grid of one epoch
  // of rounds of 250, and the two-point row at 2 rounds of 10 clients.
  bool quick = false;
  std::vector<double> epsilons = {1, 2, 3, 5, 8};  // central targets per client, in total
  double delta = 1e-5;                             // per client, in total
  std::vector<VectorMechanism> randomizers = {VectorMechanism::kPrivUnitG,
                                              VectorMechanism::kFastProjUnit};
  std::size_t validation_rows = 10000;  // held out of the training set for tuning
  std::vector<CnnGridPoint> grid;       // empty: DefaultCnnGrid(quick)
  // A client's update is -client_lr times its gradient, then clipped.
  double client_lr = 1;
  // LDP-FL's row: the paper's setting (100 clients, 10 rounds, local
  // epochs 1, batch 10, fixed range) at this eps per weight.
  double twopoint_epsilon = 1;
  bool resume = false;
  bool figures = true;
  int threads = 0;  // 0: all cores
  std::uint64_t seed = 1;
  std::size_t train_rows = 0, test_rows = 0;  // the first rows only; 0: all (quick: 1,200, 500)

  // The grid the runs are tuned over: `grid`, or the default.
  std::vector<CnnGridPoint> Grid() const;
  // OK, or the first thing wrong (e.g. "delta must be in [1e-12, 1) ...").
  Status Validate() const;
};

// The full run's grid: {momentum lr 0.1, adam lr 0.001} x {1,000, 6,000 a
// round}, clip 1, 3 epochs; quick's: {momentum lr 0.5, adam lr 0.005}, 250
// a round, 1 epoch.
std::vector<CnnGridPoint> DefaultCnnGrid(bool quick);

struct CnnFrontierRow {
  std::string method;  // "noise-free", a randomizer's name, or "twopoint"
  // The central target per client (infinite: none, the noise-free and the
  // two-point rows).
  double target_epsilon = std::numeric_limits<double>::infinity();
  CnnGridPoint chosen;             // the point the validation rows chose (not twopoint)
  double validation_accuracy = 0;  // the chosen point's, a fraction
  double test_accuracy = 0;        // the final run's, a fraction
  double local_epsilon = 0;        // per report (twopoint: per weight) of the final run
  DpGuarantee total{std::numeric_limits<double>::infinity(), 0};  // its statement per client
  nlohmann::json privacy;  // the final run's privacy record (sim/records.h; null: noise-free)
  bool learned = false;    // above the majority class by 2 standard errors
  double seconds = 0;      // the final run's time
  int rounds = 0;          // the final run's number of rounds
};

struct CnnFrontier {
  CnnFrontierConfig config;  // as run (quick's rows and grid filled in)
  std::size_t train_rows = 0, validation_rows = 0, test_rows = 0;
  double majority = 0;               // on the test set
  std::vector<CnnFrontierRow> rows;  // noise-free, each randomizer by eps, twopoint
  std::size_t resumed = 0;           // runs found in runs.jsonl
  std::size_t trained = 0;           // runs trained now
  // DIR/summary.md: the table, the majority class, and the goals as
  // this run measured them.
  std::string summary;
  std::vector<Figure> figures;            // as written into DIR
  std::vector<std::string> figure_notes;  // why an image was not rendered
  // A stop was requested: the run in progress was dropped, the finished
  // ones are in runs.jsonl, and no table or figure was written.
  bool stopped = false;
};

using CnnFrontierObserver = JournaledObserver;

// Errors: the configuration; the data (missing, or too few rows for the
// grid), before anything in DIR is touched; a run refused (its reason); a
// file that cannot be written (ErrorCode::kIo).
Result<CnnFrontier> ReproduceCnnFrontier(const CnnFrontierConfig& config,
                                         const CnnFrontierObserver& observer = {},
                                         std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_SIM_CNN_FRONTIER_H_
