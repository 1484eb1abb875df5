// Hyper-parameters chosen on validation data carved from the training rows,
// never on the test rows.
//
// TuneFedSel: for each of `splits` seeded splits, a share
// `validation_fraction` of the training rows is held out; every point of the
// grid trains on the rest and is scored on the held-out rows; the point with
// the best mean validation accuracy minus its standard deviation over the
// splits wins (ties: the first in grid order). The penalty keeps away from
// points that one lucky split carries: on Adult at eps = 2, lr 8 with
// m = 0.1 N topped the mean (81.15 %) and then swung by 7 points across
// test folds, while the plateau of small steps around it is stable. All points of one split train
// from the same seed (common random numbers), so their comparison is not drowned by the
// randomizers' noise.
//
// CrossValidateTuned: nested cross-validation. Each fold tunes on its own
// training rows, then trains the chosen point on all of them and scores it on
// its test rows, which tuning never saw. A grid of one point is not tuned,
// only prepared for each fold (e.g. calibrated to a central target).
#ifndef FEDLDP_SIM_TUNING_H_
#define FEDLDP_SIM_TUNING_H_

#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/fl/fedsel.h"
#include "fedldp/sim/cross_validation.h"
#include "fedldp/sim/thread_pool.h"

namespace fedldp {

// A batch fraction m / N run for a number of epochs.
struct FedSelSchedule {
  double batch_fraction = 0;
  int epochs = 1;
  bool operator==(const FedSelSchedule&) const = default;
};

// The values tried for each hyper-parameter; an empty list keeps the base
// configuration's value. Points are the Cartesian product, in the order
// learning rate, batch fraction, clip, tail average, server lr, server
// beta1, epochs (the last varying fastest); after each learning rate's
// product come its points with each extra schedule (then clip, tail
// average, server lr, server beta1): a few long runs without the cost of
// every batch fraction at every epoch count.
struct FedSelGrid {
  std::vector<double> learning_rates;
  std::vector<double> batch_fractions;
  std::vector<double> clips;  // vector variants' l2 clip norm
  std::vector<double> tail_averages;
  std::vector<double> server_lrs;     // the server optimiser's learning rate
  std::vector<double> server_beta1s;  // its beta1 (momentum, adam, yogi)
  std::vector<int> epochs;
  std::vector<FedSelSchedule> extra_schedules;

  std::vector<FedSelConfig> Points(const FedSelConfig& base) const;
};

// The grid fedldp searches for a variant (docs/frontier.md says why these
// values): learning rate x batch fraction for every private variant, the
// clip norm for the vector ones; tail averaging of half the iterates and one
// epoch (a second epoch halves each report's local budget). Shuffled runs
// (`shuffled`) also try 4 epochs at m / N = 0.2: a client's 4 reports,
// composed by their rounds' privacy-loss distribution, cost far less than
// 4 times one report's central eps, and the extra server steps pay. Sampled
// shuffled runs (`sampled`: --sample-clients, the shuffler drawing each
// round in secret) also try 16 epochs at m / N = 0.02 and 0.05: each round
// amplified by the sampling and composed as a curve, hundreds of server steps
// cost little more than a few (Adult at central 0.5: docs/shuffle-accounting.md).
FedSelGrid DefaultGrid(const FedSelVariant& variant, bool shuffled = false, bool sampled = false);
// The default grid of a training configuration: its variant, shuffled and
// sampled as it is.
FedSelGrid DefaultGrid(const FedSelConfig& training);

// `grid` with each hyper-parameter named in `fixed` (FedSelOptions' keys
// learning_rate, batch_fraction, clip, tail_average, server_lr,
// server_beta1, epochs; others are ignored) held at `base`'s value: an option a user gives is kept,
// not searched. Holding the batch fraction or the epochs drops the extra schedules (which vary
// both).
FedSelGrid HoldFixed(FedSelGrid grid, const FedSelConfig& base, std::span<const std::string> fixed);

// Turns a grid point into the configuration that runs on `clients` clients,
// e.g. the local eps that a central target allows at the point's batch
// size; an error refuses the point (it is skipped, and said so in its
// trial).
using PreparePoint = std::function<Result<FedSelConfig>(const FedSelConfig&, std::size_t clients)>;

struct TuningOptions {
  double validation_fraction = 0.2;
  int splits = 3;
  std::uint64_t seed = 1;
  Status Validate() const;
};

struct TuningTrial {
  FedSelConfig config;  // as prepared
  // What it runs as on a split's training rows (none: refused before it
  // was planned); FedSelRunPrivacy states its privacy.
  std::optional<FedSelPlan> plan;
  double accuracy = 0;  // mean validation accuracy over the splits
  double sd = 0;        // its sample standard deviation over the splits (0 for one)
  double score = 0;     // accuracy - sd: what the choice maximises
  std::string refused;  // non-empty: why the point did not run
};

struct FedSelTuning {
  FedSelConfig best;    // the winning grid point, before PreparePoint
  double accuracy = 0;  // its mean validation accuracy
  double score = 0;     // and its score
  std::vector<TuningTrial> trials;
  // A stop was requested: the points whose splits did not all run are
  // refused ("not run: stopped"); `best` is the best of the rest, if any ran.
  bool stopped = false;
  bool chosen() const;  // some point ran: `best` is one
};

// progress(done, total) counts the iterations of the (point, split) runs,
// summed over the runs under way (a refused point counts none); it is called
// from one thread at a time. A stop requested on `stop` skips the runs not
// yet started and ends those under way at their next round, unscored
// (stopped).
Result<FedSelTuning> TuneFedSel(const FedSelConfig& base, const FedSelGrid& grid,
                                const Dataset& data, std::span<const std::size_t> train,
                                const TuningOptions& options, ThreadPool& pool,
                                const PreparePoint& prepare = {},
                                const std::function<void(std::size_t, std::size_t)>& progress = {},
                                std::stop_token stop = {});

struct TunedCrossValidation {
  CrossValidationResult result;
  std::vector<FedSelConfig> chosen;  // per fold, as prepared for its training rows
  std::vector<double> validation;    // per fold, the winner's validation accuracy (NaN: no choice)
};

// progress(done, total) counts the iterations of the folds' final runs
// (each fold's tuning before it is not counted). A stop requested on `stop`
// ends the fold under way at its next round (or in its tuning), unscored
// (result.stopped; the folds done are kept). On a cluster, each fold's final
// training is spread over its processes; its tuning runs whole on each of
// them (the same choice on all).
Result<TunedCrossValidation> CrossValidateTuned(
    const FedSelConfig& base, const FedSelGrid& grid, const Dataset& data,
    const CrossValidationOptions& cv, const TuningOptions& tuning, ThreadPool& pool,
    const PreparePoint& prepare = {},
    const std::function<void(std::size_t, std::size_t)>& progress = {}, std::stop_token stop = {},
    Cluster& cluster = OneProcess());

}  // namespace fedldp

#endif  // FEDLDP_SIM_TUNING_H_
