#include "fedldp/sim/cross_validation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "fedldp/base/limits.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp {

double CrossValidationResult::MeanAccuracy() const {
  double s = 0;
  for (const auto& f : folds) s += f.accuracy;
  return folds.empty() ? 0 : s / static_cast<double>(folds.size());
}

double CrossValidationResult::StdAccuracy() const {
  if (folds.size() < 2) return 0;
  const double mean = MeanAccuracy();
  double s = 0;
  for (const auto& f : folds) s += (f.accuracy - mean) * (f.accuracy - mean);
  return std::sqrt(s / static_cast<double>(folds.size() - 1));
}

double CrossValidationResult::MeanMajority() const {
  double s = 0;
  for (const auto& f : folds) s += f.majority;
  return folds.empty() ? 0 : s / static_cast<double>(folds.size());
}

std::vector<Fold> MakeFolds(std::size_t n, const CrossValidationOptions& options) {
  std::vector<Fold> folds;
  std::uint64_t run_index = 0;
  if (options.test_from > 0) {
    for (int repeat = 0; repeat < options.repeats; ++repeat) {
      Fold f;
      f.repeat = repeat;
      f.train.resize(std::min(options.test_from, n));
      std::iota(f.train.begin(), f.train.end(), std::size_t{0});
      for (std::size_t i = f.train.size(); i < n; ++i) f.test.push_back(i);
      f.seed = CounterRng::Mix(options.seed * 1000003 + run_index++);
      folds.push_back(std::move(f));
    }
    return folds;
  }
  for (int repeat = 0; repeat < options.repeats; ++repeat) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    CounterRng shuffle(options.seed, 0x4356'0000ULL + static_cast<std::uint64_t>(repeat));  // "CV"
    for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[UniformIndex(shuffle, i)]);
    for (int fold = 0; fold < options.folds; ++fold) {
      const std::size_t lo = n * fold / options.folds, hi = n * (fold + 1) / options.folds;
      Fold f;
      f.repeat = repeat;
      f.fold = fold;
      f.test.assign(order.begin() + lo, order.begin() + hi);
      f.train.reserve(n - (hi - lo));
      f.train.insert(f.train.end(), order.begin(), order.begin() + lo);
      f.train.insert(f.train.end(), order.begin() + hi, order.end());
      f.seed = CounterRng::Mix(options.seed * 1000003 + run_index++);
      folds.push_back(std::move(f));
    }
  }
  return folds;
}

double MajorityAccuracy(const Dataset& data, std::span<const std::size_t> train,
                        std::span<const std::size_t> test) {
  std::size_t ones = 0;
  for (std::size_t i : train) ones += data.labels[i] == 1;
  const int majority = 2 * ones > train.size() ? 1 : 0;
  std::size_t hits = 0;
  for (std::size_t i : test) hits += data.labels[i] == majority;
  return test.empty() ? 0 : static_cast<double>(hits) / static_cast<double>(test.size());
}

Status CrossValidationOptions::Validate() const {
  FEDLDP_RETURN_IF_ERROR(CheckCount(kRepeats, repeats));
  if (test_from == 0 && folds < 2) return Error{"folds must be >= 2"};
  return {};
}

Status CheckFolds(const CrossValidationOptions& options, std::size_t n) {
  FEDLDP_RETURN_IF_ERROR(options.Validate());
  if (options.test_from > 0) {
    if (options.test_from >= n) return Error{"the fixed split leaves no test rows"};
    return {};
  }
  if (n < static_cast<std::size_t>(options.folds)) return Error{"fewer rows than folds"};
  return {};
}

Result<CrossValidationResult> CrossValidateFedSel(
    const FedSelConfig& config, const Dataset& data, const CrossValidationOptions& options,
    ThreadPool& pool, const std::function<void(std::size_t, std::size_t)>& progress,
    std::stop_token stop, Cluster& cluster) {
  if (const Status s = CheckFolds(options, data.size()); !s.ok()) return Error{s.error()};
  const auto start = std::chrono::steady_clock::now();
  CrossValidationResult result;
  const std::vector<Fold> folds = MakeFolds(data.size(), options);
  const std::size_t runs = folds.size();
  for (std::size_t run_index = 0; run_index < runs; ++run_index) {
    if (cluster.Any(stop.stop_requested())) {
      result.stopped = true;
      break;
    }
    const Fold& f = folds[run_index];
    auto run = TrainFedSel(
        config, data, f.train, f.seed, pool.AsParallelFor(),
        [&](std::size_t done, std::size_t total) {
          if (progress) progress(run_index * total + done, runs * total);
        },
        cluster, stop);
    if (!run.ok()) return Error{run.error()};
    if (run->stopped) {  // the fold under way is not scored
      result.stopped = true;
      break;
    }
    result.folds.push_back({f.repeat, f.fold, LinearModel::Accuracy(run->weights, data, f.test),
                            MajorityAccuracy(data, f.train, f.test)});
    result.updates += run->updates;
    result.last = std::move(run).value();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace fedldp
