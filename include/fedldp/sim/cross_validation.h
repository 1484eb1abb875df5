// Repeated k-fold cross-validation of FedSel runs (the paper reports 10 x 5):
// for each repeat the rows are shuffled (seeded) and cut into `folds` parts;
// each part is the test set once, the rest are the clients. Every fold also
// scores the trivial classifier (the training part's majority label).
#ifndef FEDLDP_SIM_CROSS_VALIDATION_H_
#define FEDLDP_SIM_CROSS_VALIDATION_H_

#include <functional>
#include <span>
#include <stop_token>
#include <vector>

#include "fedldp/fl/fedsel.h"
#include "fedldp/sim/thread_pool.h"

namespace fedldp {

struct CrossValidationOptions {
  int repeats = 10;
  int folds = 5;
  std::uint64_t seed = 1;
  // > 0: no folds, a fixed split, for data that comes with its test set
  // (MNIST, Fashion-MNIST): rows [0, test_from) train and [test_from, n)
  // test, in each of `repeats` runs (fold 0) with its own seed.
  std::size_t test_from = 0;
  // OK if repeats >= 1 and, without a fixed split, folds >= 2 (the rows are
  // checked against them when the data is there).
  Status Validate() const;
};

struct FoldResult {
  int repeat = 0, fold = 0;
  double accuracy = 0;  // FedSel model on the test part
  double majority = 0;  // trivial classifier on the test part
};

struct CrossValidationResult {
  std::vector<FoldResult> folds;
  FedSelRun last;  // the last fold's run: budget, m, k, ...
  double seconds = 0;
  std::size_t updates = 0;  // client reports over all folds
  bool stopped = false;     // a stop was requested: fewer folds than planned
  double MeanAccuracy() const;
  double StdAccuracy() const;  // sample standard deviation over folds
  double MeanMajority() const;
};

// The folds of `options` over n rows, in run order: repeat r shuffles the
// rows with CounterRng(seed, "CV" + r) and cuts them into `folds` parts.
struct Fold {
  int repeat = 0, fold = 0;
  std::vector<std::size_t> train, test;
  std::uint64_t seed = 0;  // the seed of this fold's training run
};
std::vector<Fold> MakeFolds(std::size_t n, const CrossValidationOptions& options);
// Whether `options` can cut n rows: repeats >= 1, 2 <= folds <= n, or a
// fixed split with rows on both sides.
Status CheckFolds(const CrossValidationOptions& options, std::size_t n);
// The trivial classifier: the training rows' majority label, scored on `test`.
double MajorityAccuracy(const Dataset& data, std::span<const std::size_t> train,
                        std::span<const std::size_t> test);

// progress(done, total) counts iterations over all folds. A stop requested
// on `stop` ends the fold under way at its next round, unscored (stopped;
// the folds done are kept). On a cluster (fl/cluster.h) each fold's clients
// are spread over its processes, which stop together if any was asked to.
Result<CrossValidationResult> CrossValidateFedSel(
    const FedSelConfig& config, const Dataset& data, const CrossValidationOptions& options,
    ThreadPool& pool, const std::function<void(std::size_t, std::size_t)>& progress = {},
    std::stop_token stop = {}, Cluster& cluster = OneProcess());

}  // namespace fedldp

#endif  // FEDLDP_SIM_CROSS_VALIDATION_H_
