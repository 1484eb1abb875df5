#include "fedldp/sim/tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>

#include "fedldp/random/counter_rng.h"

namespace fedldp {

namespace {

// One hyper-parameter of a grid: a setter per value tried.
using GridAxis = std::vector<std::function<void(FedSelConfig&)>>;

// `values` (empty: `base`'s value alone) each written by `set`.
template <typename T, typename Set>
GridAxis Axis(const std::vector<T>& values, T base, Set set) {
  GridAxis axis;
  for (T v : values.empty() ? std::vector<T>{base} : values) {
    axis.push_back([=](FedSelConfig& c) { set(c, v); });
  }
  return axis;
}

// Every combination of `axes` applied to `start`, the last axis varying
// fastest, appended to `out`.
void Product(const FedSelConfig& start, std::span<const GridAxis> axes,
             std::vector<FedSelConfig>& out) {
  if (axes.empty()) {
    out.push_back(start);
    return;
  }
  for (const auto& set : axes.front()) {
    FedSelConfig c = start;
    set(c);
    Product(c, axes.subspan(1), out);
  }
}

}  // namespace

std::vector<FedSelConfig> FedSelGrid::Points(const FedSelConfig& base) const {
  using C = FedSelConfig;
  // The axes after the batch fraction, in grid order; the extra schedules
  // take all of them but the epochs.
  const std::vector<GridAxis> inner = {
      Axis(clips, base.clip, [](C& c, double v) { c.clip = v; }),
      Axis(tail_averages, base.tail_average, [](C& c, double v) { c.tail_average = v; }),
      Axis(server_lrs, base.server.learning_rate,
           [](C& c, double v) { c.server.learning_rate = v; }),
      Axis(server_beta1s, base.server.beta1, [](C& c, double v) { c.server.beta1 = v; }),
      Axis(epochs, base.epochs, [](C& c, int v) { c.epochs = v; })};
  const std::span<const GridAxis> unscheduled(inner.data(), inner.size() - 1);
  std::vector<FedSelConfig> points;
  for (const auto& set_lr :
       Axis(learning_rates, base.learning_rate, [](C&c, double v) { c.learning_rate = v; })) {
    C at_lr = base;
    set_lr(at_lr);
    for (const auto& set_b :
         Axis(batch_fractions, base.batch_fraction, [](C&c, double v) { c.batch_fraction = v; })) {
      C p = at_lr;
      set_b(p);
      Product(p, inner, points);
    }
    for (const FedSelSchedule& schedule : extra_schedules) {
      C p = at_lr;
      p.batch_fraction = schedule.batch_fraction;
      p.epochs = schedule.epochs;
      Product(p, unscheduled, points);
    }
  }
  return points;
}

FedSelGrid DefaultGrid(const FedSelVariant& variant, bool shuffled, bool sampled) {
  FedSelGrid g;
  g.learning_rates = {0.5, 1, 2, 4, 8, 16};
  g.batch_fractions = {0.005, 0.01, 0.02, 0.05, 0.1, 0.2};
  if (TraitsOf(variant).whole_vector) g.clips = {0.5, 1, 2};
  g.tail_averages = {0.5};
  if (shuffled) g.extra_schedules = {{0.2, 4}};
  if (shuffled && sampled)
    g.extra_schedules.insert(g.extra_schedules.end(), {{0.02, 16}, {0.05, 16}});
  return g;
}

FedSelGrid DefaultGrid(const FedSelConfig& training) {
  return DefaultGrid(training.variant, training.shuffle, training.sample_clients);
}

FedSelGrid HoldFixed(FedSelGrid grid, const FedSelConfig& base,
                     std::span<const std::string> fixed) {
  for (const std::string& key : fixed) {
    if (key == "learning_rate") grid.learning_rates = {base.learning_rate};
    if (key == "clip") grid.clips = {base.clip};
    if (key == "tail_average") grid.tail_averages = {base.tail_average};
    if (key == "batch_fraction") grid.batch_fractions = {base.batch_fraction};
    if (key == "epochs") grid.epochs = {base.epochs};
    if (key == "server_lr") grid.server_lrs = {base.server.learning_rate};
    if (key == "server_beta1") grid.server_beta1s = {base.server.beta1};
    if (key == "batch_fraction" || key == "epochs") grid.extra_schedules.clear();
  }
  return grid;
}

Status TuningOptions::Validate() const {
  if (!(validation_fraction > 0 && validation_fraction < 1)) {
    return Error{"validation fraction must be in (0, 1)"};
  }
  if (splits < 1) return Error{"tuning needs at least one split"};
  return {};
}

namespace {

// One validation split: a seeded shuffle of the training rows, the first
// `held_out` for validation, and the seed of the runs on it.
struct TuningSplit {
  std::vector<std::size_t> fit, validation;
  std::uint64_t seed;
};

Result<std::vector<TuningSplit>> MakeSplits(const std::vector<std::size_t>& rows,
                                            const TuningOptions& options) {
  const auto held_out = static_cast<std::size_t>(
      std::llround(options.validation_fraction * static_cast<double>(rows.size())));
  if (held_out < 1 || held_out >= rows.size()) {
    return Error{"too few training rows to hold out a validation share"};
  }
  std::vector<TuningSplit> splits;
  for (int s = 0; s < options.splits; ++s) {
    std::vector<std::size_t> order = rows;
    CounterRng shuffle(options.seed, 0x5455'0000ULL + static_cast<std::uint64_t>(s));  // "TU"
    for (std::size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1], order[UniformIndex(shuffle, i)]);
    }
    splits.push_back({{order.begin() + static_cast<std::ptrdiff_t>(held_out), order.end()},
                      {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(held_out)},
                      CounterRng::Mix(options.seed * 7919 + static_cast<std::uint64_t>(s))});
  }
  return splits;
}

// Each point's trial: its configuration (as `prepare` makes it), or why it
// cannot run on `fit_rows` rows.
// Returns each point's iterations (0 for a refused one), what its runs'
// progress counts.
std::vector<std::size_t> PrepareTrials(FedSelTuning& tuning,
                                       const std::vector<FedSelConfig>& points, const Dataset& data,
                                       std::size_t fit_rows, const PreparePoint& prepare) {
  tuning.trials.resize(points.size());
  std::vector<std::size_t> iterations(points.size(), 0);
  for (std::size_t i = 0; i < points.size(); ++i) {
    TuningTrial& t = tuning.trials[i];
    t.config = points[i];
    if (prepare) {
      auto prepared = prepare(points[i], fit_rows);
      if (!prepared.ok()) {
        t.refused = prepared.error();
        continue;
      }
      t.config = std::move(prepared).value();
    }
    auto plan = PlanFedSel(t.config, fit_rows, LinearParameters(data));
    if (!plan.ok()) {
      t.refused = plan.error();
      continue;
    }
    iterations[i] = t.config.max_iterations > 0 ? std::min(plan->rounds, t.config.max_iterations)
                                                : plan->rounds;
    t.plan = std::move(plan).value();
  }
  return iterations;
}

// Progress summed over jobs that run at once: each job adds the iterations
// it has done since it last said, and the total is every job's iterations.
class SharedProgress {
 public:
  SharedProgress(const std::function<void(std::size_t, std::size_t)>& progress, std::size_t total)
      : progress_(progress), total_(total) {}
  void Add(std::size_t iterations) {
    if (!progress_ || iterations == 0) return;
    std::lock_guard lock(mu_);
    done_ += iterations;
    progress_(done_, total_);
  }

 private:
  const std::function<void(std::size_t, std::size_t)>& progress_;
  const std::size_t total_;
  std::mutex mu_;
  std::size_t done_ = 0;
};

// The jobs' outcomes, (point, split) at point x splits + split.
struct TuningJobs {
  std::vector<double> accuracy;
  std::vector<std::string> failed;
  std::vector<char> skipped;  // not run: a stop was asked for
};

// Each trial's mean validation accuracy and sd over the splits, its score
// (mean - sd), and the best point; an error if a run failed.
Status ScoreTrials(FedSelTuning& tuning, const std::vector<FedSelConfig>& points,
                   std::size_t splits, const TuningJobs& jobs) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (std::size_t s = 0; s < splits; ++s) {
      if (!jobs.skipped[i * splits + s]) continue;
      tuning.trials[i].refused = "not run: stopped";
      tuning.stopped = true;
    }
  }
  bool any = false;
  for (std::size_t i = 0; i < points.size(); ++i) {
    TuningTrial& t = tuning.trials[i];
    if (!t.refused.empty()) continue;
    double sum = 0;
    for (std::size_t s = 0; s < splits; ++s) {
      const std::size_t job = i * splits + s;
      if (!jobs.failed[job].empty()) return Error{jobs.failed[job]};
      sum += jobs.accuracy[job];
    }
    t.accuracy = sum / static_cast<double>(splits);
    double squares = 0;
    for (std::size_t s = 0; s < splits; ++s) {
      const double e = jobs.accuracy[i * splits + s] - t.accuracy;
      squares += e * e;
    }
    t.sd = splits > 1 ? std::sqrt(squares / static_cast<double>(splits - 1)) : 0.0;
    t.score = t.accuracy - t.sd;
    if (!any || t.score > tuning.score) {
      any = true;
      tuning.score = t.score;
      tuning.accuracy = t.accuracy;
      tuning.best = points[i];
    }
  }
  if (!any && !tuning.stopped) {
    return Error{"no grid point could run: " + tuning.trials.front().refused};
  }
  return Status::Ok();
}

// Every (point, split) job of `tuning`'s trials, each run on one thread: the
// points are many and each is short. Fewer jobs than threads run one after
// another, each on the whole pool (the same runs: TrainFedSel's result does
// not depend on its threads).
TuningJobs RunJobs(const FedSelTuning& tuning, const std::vector<TuningSplit>& splits,
                   const std::vector<std::size_t>& iterations, const Dataset& data,
                   ThreadPool& pool, SharedProgress& shared, std::stop_token stop) {
  const std::size_t jobs = tuning.trials.size() * splits.size();
  TuningJobs outcome{std::vector<double>(jobs, 0.0), std::vector<std::string>(jobs),
                     std::vector<char>(jobs, 0)};
  const bool wide = jobs < pool.size();
  const ParallelFor inner = wide ? pool.AsParallelFor() : ParallelFor(RunSequentially);
  const auto run_job = [&](std::size_t job) {
    const std::size_t i = job / splits.size(), s = job % splits.size();
    std::size_t said = 0;  // this job's iterations counted so far, at most iterations[i]
    const auto upto = [&](std::size_t done) {
      const std::size_t now = std::min(done, iterations[i]);
      if (now <= said) return;
      shared.Add(now - said);
      said = now;
    };
    const auto finish = [&] { upto(iterations[i]); };
    if (!tuning.trials[i].refused.empty()) return;
    if (stop.stop_requested()) {
      outcome.skipped[job] = 1;
      return finish();
    }
    auto run = TrainFedSel(
        tuning.trials[i].config, data, splits[s].fit, splits[s].seed, inner,
        [&](std::size_t done, std::size_t) { upto(done); }, OneProcess(), stop);
    if (!run.ok()) {
      outcome.failed[job] = run.error();
      return finish();
    }
    if (run->stopped) {
      outcome.skipped[job] = 1;
      return finish();
    }
    outcome.accuracy[job] = LinearModel::Accuracy(run->weights, data, splits[s].validation);
    finish();
  };
  if (wide) {
    for (std::size_t job = 0; job < jobs; ++job) run_job(job);
  } else {
    pool.ParallelFor(jobs, run_job);
  }
  return outcome;
}

}  // namespace

Result<FedSelTuning> TuneFedSel(const FedSelConfig& base, const FedSelGrid& grid,
                                const Dataset& data, std::span<const std::size_t> train,
                                const TuningOptions& options, ThreadPool& pool,
                                const PreparePoint& prepare,
                                const std::function<void(std::size_t, std::size_t)>& progress,
                                std::stop_token stop) {
  if (const Status s = options.Validate(); !s.ok()) return Error{s.error()};
  std::vector<std::size_t> rows(train.begin(), train.end());
  if (rows.empty()) {
    rows.resize(data.size());
    std::iota(rows.begin(), rows.end(), std::size_t{0});
  }
  auto made = MakeSplits(rows, options);
  if (!made.ok()) return Error{made.error()};
  const std::vector<TuningSplit> splits = std::move(made).value();
  const std::vector<FedSelConfig> points = grid.Points(base);
  if (points.empty()) return Error{"the grid has no points"};
  FedSelTuning tuning;
  const std::vector<std::size_t> iterations =
      PrepareTrials(tuning, points, data, splits.front().fit.size(), prepare);
  SharedProgress shared(
      progress,
      std::accumulate(iterations.begin(), iterations.end(), std::size_t{0}) * splits.size());
  const TuningJobs outcome = RunJobs(tuning, splits, iterations, data, pool, shared, stop);
  if (Status s = ScoreTrials(tuning, points, splits.size(), outcome); !s.ok()) {
    return Error{s.error()};
  }
  return tuning;
}

bool FedSelTuning::chosen() const {
  return std::any_of(trials.begin(), trials.end(),
                     [](const TuningTrial& t) { return t.refused.empty(); });
}

Result<TunedCrossValidation> CrossValidateTuned(
    const FedSelConfig& base, const FedSelGrid& grid, const Dataset& data,
    const CrossValidationOptions& cv, const TuningOptions& tuning, ThreadPool& pool,
    const PreparePoint& prepare, const std::function<void(std::size_t, std::size_t)>& progress,
    std::stop_token stop, Cluster& cluster) {
  if (const Status s = CheckFolds(cv, data.size()); !s.ok()) return Error{s.error()};
  const auto start = std::chrono::steady_clock::now();
  TunedCrossValidation out;
  const std::vector<Fold> folds = MakeFolds(data.size(), cv);
  // A grid of one point has nothing to choose: it is only prepared per fold.
  const bool choose = grid.Points(base).size() > 1;
  for (std::size_t f = 0; f < folds.size(); ++f) {
    if (cluster.Any(stop.stop_requested())) {
      out.result.stopped = true;
      break;
    }
    const Fold& fold = folds[f];
    FedSelConfig config = grid.Points(base).front();
    double validation = std::numeric_limits<double>::quiet_NaN();
    if (choose) {
      TuningOptions options = tuning;
      options.seed = CounterRng::Mix(fold.seed ^ tuning.seed);
      auto tuned = TuneFedSel(base, grid, data, fold.train, options, pool, prepare, {}, stop);
      if (!tuned.ok()) return Error{tuned.error()};
      if (cluster.Any(tuned->stopped)) {  // the fold's choice is not made
        out.result.stopped = true;
        break;
      }
      config = tuned->best;
      validation = tuned->accuracy;
    }
    if (prepare) {
      auto prepared = prepare(config, fold.train.size());
      if (!prepared.ok()) return Error{prepared.error()};
      config = std::move(prepared).value();
    }
    auto run = TrainFedSel(
        config, data, fold.train, fold.seed, pool.AsParallelFor(),
        [&](std::size_t done, std::size_t total) {
          if (progress) progress(f * total + done, folds.size() * total);
        },
        cluster, stop);
    if (!run.ok()) return Error{run.error()};
    if (run->stopped) {  // the fold under way is not scored
      out.result.stopped = true;
      break;
    }
    out.result.folds.push_back({fold.repeat, fold.fold,
                                LinearModel::Accuracy(run->weights, data, fold.test),
                                MajorityAccuracy(data, fold.train, fold.test)});
    out.result.updates += run->updates;
    out.result.last = std::move(run).value();
    out.chosen.push_back(config);
    out.validation.push_back(validation);
  }
  out.result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace fedldp
