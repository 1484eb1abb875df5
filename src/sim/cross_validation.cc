#include "fedldp/sim/cross_validation.h"

#include <chrono>
#include <cmath>
#include <numeric>

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

Result<CrossValidationResult> CrossValidateFedSel(
    const FedSelConfig& config, const Dataset& data, const CrossValidationOptions& options,
    ThreadPool& pool, const std::function<void(std::size_t, std::size_t)>& progress) {
  if (options.repeats < 1) return Error{"repeats must be >= 1"};
  if (options.folds < 2) return Error{"folds must be >= 2"};
  if (data.size() < static_cast<std::size_t>(options.folds)) return Error{"fewer rows than folds"};
  const auto start = std::chrono::steady_clock::now();
  CrossValidationResult result;
  const std::size_t n = data.size();
  const std::size_t runs = static_cast<std::size_t>(options.repeats * options.folds);
  std::size_t run_index = 0;
  for (int repeat = 0; repeat < options.repeats; ++repeat) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    CounterRng shuffle(options.seed, 0x4356'0000ULL + static_cast<std::uint64_t>(repeat));  // "CV"
    for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[UniformIndex(shuffle, i)]);
    for (int fold = 0; fold < options.folds; ++fold) {
      const std::size_t lo = n * fold / options.folds, hi = n * (fold + 1) / options.folds;
      std::vector<std::size_t> train, test(order.begin() + lo, order.begin() + hi);
      train.reserve(n - (hi - lo));
      train.insert(train.end(), order.begin(), order.begin() + lo);
      train.insert(train.end(), order.begin() + hi, order.end());
      const std::uint64_t seed = CounterRng::Mix(options.seed * 1000003 + run_index);
      auto run = TrainFedSel(
          config, data, train, seed,
          [&pool](std::size_t n, const std::function<void(std::size_t)>& f) {
            pool.ParallelFor(n, f);
          },
          [&](std::size_t done, std::size_t total) {
            if (progress) progress(run_index * total + done, runs * total);
          });
      if (!run.ok()) return Error{run.error()};
      std::size_t ones = 0;
      for (std::size_t i : train) ones += data.labels[i] == 1;
      const int majority = 2 * ones > train.size() ? 1 : 0;
      std::size_t majority_hits = 0;
      for (std::size_t i : test) majority_hits += data.labels[i] == majority;
      result.folds.push_back(
          {repeat, fold, LinearModel::Accuracy(run->weights, data, test),
           static_cast<double>(majority_hits) / static_cast<double>(test.size())});
      result.updates += run->updates;
      result.last = std::move(run).value();
      ++run_index;
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace fedldp
