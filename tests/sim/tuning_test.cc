// Hyper-parameters chosen on validation rows carved from the training rows:
// the grid, the choice, and that rows outside `train` are never read.
#include "fedldp/sim/tuning.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stop_token>

#include "testing/synthetic.h"

namespace fedldp {
namespace {

using testing::SmallSynthetic;

TEST(MakeFolds, FixedSplitTrainsOnTheFirstRowsAndTestsOnTheRest) {
  CrossValidationOptions options{3, 5, 9};
  options.test_from = 7;
  ASSERT_TRUE(CheckFolds(options, 10).ok());
  const std::vector<Fold> folds = MakeFolds(10, options);
  ASSERT_EQ(folds.size(), 3u);  // one run per repeat, whatever `folds` says
  for (const Fold& f : folds) {
    EXPECT_EQ(f.train, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(f.test, (std::vector<std::size_t>{7, 8, 9}));
  }
  EXPECT_NE(folds[0].seed, folds[1].seed);
  EXPECT_NE(folds[1].seed, folds[2].seed);
  options.test_from = 10;  // nothing left to test on
  EXPECT_FALSE(CheckFolds(options, 10).ok());
}

TEST(FedSelGrid, PointsAreTheProductAndEmptyListsKeepTheBase) {
  FedSelConfig base;
  base.clip = 3;
  FedSelGrid grid;
  grid.learning_rates = {1, 2};
  grid.batch_fractions = {0.1, 0.2, 0.3};
  grid.epochs = {1, 2};
  const auto points = grid.Points(base);
  ASSERT_EQ(points.size(), 12u);
  EXPECT_EQ(points[0].learning_rate, 1);
  EXPECT_EQ(points[0].epochs, 1);
  EXPECT_EQ(points[1].epochs, 2);  // the last list varies fastest
  EXPECT_EQ(points[2].batch_fraction, 0.2);
  EXPECT_EQ(points[6].learning_rate, 2);
  for (const auto& p : points) EXPECT_EQ(p.clip, 3);
  EXPECT_EQ(FedSelGrid{}.Points(base).size(), 1u);
  EXPECT_FALSE(DefaultGrid(ParseFedSelVariant("ps-pm").value()).learning_rates.empty());
  EXPECT_TRUE(DefaultGrid(ParseFedSelVariant("ps-pm").value()).clips.empty());
  EXPECT_FALSE(DefaultGrid(ParseFedSelVariant("privunitg").value()).clips.empty());
  // What `fedldp tune --variant privunitg` tries by default.
  EXPECT_EQ(DefaultGrid(ParseFedSelVariant("privunitg").value()).Points(base).size(), 108u);
}

TEST(FedSelGrid, ExtraSchedulesFollowEachLearningRatesProduct) {
  FedSelConfig base;
  base.epochs = 1;
  FedSelGrid grid;
  grid.learning_rates = {1, 2};
  grid.batch_fractions = {0.01, 0.1};
  grid.clips = {0.5, 1};
  grid.extra_schedules = {{0.2, 4}};
  const auto points = grid.Points(base);
  ASSERT_EQ(points.size(), 12u);  // per lr: 2 x 2, then 1 schedule x 2 clips
  EXPECT_EQ(points[3].batch_fraction, 0.1);
  EXPECT_EQ(points[3].epochs, 1);
  for (std::size_t i : {4u, 5u, 10u, 11u}) {
    EXPECT_EQ(points[i].batch_fraction, 0.2) << i;
    EXPECT_EQ(points[i].epochs, 4) << i;
  }
  EXPECT_EQ(points[4].learning_rate, 1);
  EXPECT_EQ(points[5].clip, 1);
  EXPECT_EQ(points[6].learning_rate, 2);
  EXPECT_EQ(points[6].epochs, 1);
  EXPECT_EQ(points[10].learning_rate, 2);
  // Shuffled runs compose their rounds by the PLD: the default grid adds one
  // long schedule there, and only there.
  const FedSelVariant v = ParseFedSelVariant("pm").value();
  EXPECT_TRUE(DefaultGrid(v).extra_schedules.empty());
  EXPECT_EQ(DefaultGrid(v, true).extra_schedules, (std::vector<FedSelSchedule>{{0.2, 4}}));
  EXPECT_EQ(DefaultGrid(v, true).Points(base).size(), 6u * 7u);
  // Sampled shuffled runs add two long schedules of small rounds; sampling
  // without the shuffler adds nothing.
  EXPECT_EQ(DefaultGrid(v, true, true).extra_schedules,
            (std::vector<FedSelSchedule>{{0.2, 4}, {0.02, 16}, {0.05, 16}}));
  EXPECT_TRUE(DefaultGrid(v, false, true).extra_schedules.empty());
}

// The server optimiser's lr and beta1 are axes too: after the tail average,
// before the epochs, and in each extra schedule's product; held like the rest.
TEST(FedSelGrid, ServerOptimiserSettingsAreAxesOfTheProduct) {
  FedSelConfig base;
  base.server.kind = ServerOptimizerKind::kMomentum;
  FedSelGrid grid;
  grid.learning_rates = {1};
  grid.server_lrs = {0.5, 1};
  grid.server_beta1s = {0.8, 0.9};
  grid.epochs = {1, 2};
  grid.extra_schedules = {{0.2, 4}};
  const auto points = grid.Points(base);
  ASSERT_EQ(points.size(), 2u * 2u * 2u + 2u * 2u);
  EXPECT_EQ(points[0].server.learning_rate, 0.5);
  EXPECT_EQ(points[0].server.beta1, 0.8);
  EXPECT_EQ(points[1].epochs, 2);  // epochs fastest
  EXPECT_EQ(points[1].server.beta1, 0.8);
  EXPECT_EQ(points[2].server.beta1, 0.9);
  EXPECT_EQ(points[4].server.learning_rate, 1);
  for (std::size_t i = 8; i < 12; ++i) {
    EXPECT_EQ(points[i].epochs, 4) << i;
    EXPECT_EQ(points[i].server.learning_rate, i < 10 ? 0.5 : 1) << i;
    EXPECT_EQ(points[i].server.beta1, i % 2 == 0 ? 0.8 : 0.9) << i;
  }
  for (const auto& p : points) EXPECT_EQ(p.server.kind, ServerOptimizerKind::kMomentum);
  // Held at the base's values when given as options.
  base.server.learning_rate = 0.3;
  base.server.beta1 = 0.7;
  const std::vector<std::string> fixed = {"server_lr", "server_beta1"};
  const auto held = HoldFixed(grid, base, fixed).Points(base);
  ASSERT_EQ(held.size(), 2u + 1u);
  for (const auto& p : held) {
    EXPECT_EQ(p.server.learning_rate, 0.3);
    EXPECT_EQ(p.server.beta1, 0.7);
  }
}

// PrivUnitG at eps 0.5 over lr {1, 8} x clip {0.1, 4}.
FedSelConfig PrivUnitGBase() {
  FedSelConfig base;
  base.variant = ParseFedSelVariant("privunitg").value();
  base.epsilon = 0.5;
  return base;
}
FedSelGrid FourPoints() {
  FedSelGrid grid;
  grid.learning_rates = {1, 8};
  grid.clips = {0.1, 4};
  return grid;
}

// The winner is the trial with the best score, validation accuracy less its
// standard deviation over the splits (tuning.h), not the best accuracy alone:
// the test asserted that until PrivUnitG's exact sampler (issue 39) drew other
// noise and a trial with 0.4 points more accuracy and more spread lost. (A
// tiny learning rate is no bad point to test with: the first step already
// gives w the direction of the mean gradient, and accuracy ignores |w|.)
TEST(TuneFedSel, ChoosesTheBestValidationAccuracy) {
  const Dataset data = SmallSynthetic(2000);
  const FedSelConfig base = PrivUnitGBase();
  const FedSelGrid grid = FourPoints();
  ThreadPool pool(2);
  const auto t = TuneFedSel(base, grid, data, {}, {}, pool).value();
  ASSERT_EQ(t.trials.size(), 4u);
  std::size_t best = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.trials[i].score, t.trials[i].accuracy - t.trials[i].sd);
    best = t.trials[i].score > t.trials[best].score ? i : best;
  }
  EXPECT_EQ(t.score, t.trials[best].score);
  EXPECT_EQ(t.accuracy, t.trials[best].accuracy);
  EXPECT_EQ(t.best.learning_rate, t.trials[best].config.learning_rate);
  EXPECT_EQ(t.best.clip, t.trials[best].config.clip);
  double worst = 1;
  for (const auto& trial : t.trials) worst = std::min(worst, trial.accuracy);
  EXPECT_GT(t.accuracy, worst + 0.01);  // the grid matters here
  // Reproducible, and independent of the number of threads.
  ThreadPool one(1);
  const auto again = TuneFedSel(base, grid, data, {}, {}, one).value();
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(again.trials[i].accuracy, t.trials[i].accuracy);
}

// Fewer (point, split) runs than threads: each run takes the whole pool, with
// the same result as on one thread, and progress still counts each
// iteration once.
TEST(TuneFedSel, FewerRunsThanThreadsGiveTheSameResultOnThePool) {
  const Dataset data = SmallSynthetic(2000);
  const FedSelConfig base = PrivUnitGBase();
  FedSelGrid grid;
  grid.learning_rates = {8};
  TuningOptions options;
  options.splits = 2;
  ThreadPool one(1), three(3);
  std::size_t last = 0, total = 0;
  const auto wide =
      TuneFedSel(base, grid, data, {}, options, three, {}, [&](std::size_t done, std::size_t all) {
        EXPECT_GT(done, last);
        last = done;
        total = all;
      }).value();
  const auto narrow = TuneFedSel(base, grid, data, {}, options, one).value();
  ASSERT_EQ(wide.trials.size(), 1u);
  EXPECT_EQ(wide.trials[0].accuracy, narrow.trials[0].accuracy);
  EXPECT_EQ(wide.trials[0].sd, narrow.trials[0].sd);
  EXPECT_GT(total, 0u);
  EXPECT_EQ(last, total);
}

// A stop skips the runs not yet started: the points that ran on every split
// keep their scores and the best of them is chosen; the rest are refused.
TEST(TuneFedSel, AStopKeepsThePointsThatRanAndRefusesTheRest) {
  const Dataset data = SmallSynthetic(2000);
  const FedSelConfig base = PrivUnitGBase();
  const FedSelGrid grid = FourPoints();
  TuningOptions options;
  ThreadPool one(1);  // the runs in order: point 0's splits first
  std::stop_source stop;
  // The four points run as many iterations each: the first quarter of the
  // total is point 0's splits.
  const auto t = TuneFedSel(
                     base, grid, data, {}, options, one, {},
                     [&](std::size_t done, std::size_t total) {
                       if (4 * done == total) stop.request_stop();
                     },
                     stop.get_token())
                     .value();
  EXPECT_TRUE(t.stopped);
  ASSERT_EQ(t.trials.size(), 4u);
  EXPECT_TRUE(t.trials[0].refused.empty()) << t.trials[0].refused;
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(t.trials[i].refused, "not run: stopped");
  ASSERT_TRUE(t.chosen());
  EXPECT_EQ(t.best.learning_rate, t.trials[0].config.learning_rate);
  EXPECT_EQ(t.best.clip, t.trials[0].config.clip);
  // Stopped in the first run: it ends at its next round, unscored (its
  // progress jumps to its end at once), and no point ran on every split.
  std::stop_source early;
  std::size_t calls = 0;
  const auto cut = TuneFedSel(
                       base, grid, data, {}, options, one, {},
                       [&](std::size_t done, std::size_t) {
                         ++calls;
                         if (done == 1) early.request_stop();
                       },
                       early.get_token())
                       .value();
  EXPECT_TRUE(cut.stopped);
  EXPECT_FALSE(cut.chosen());
  // One call for the round run, one for the rest of that run, one for each
  // of the 4 x 3 - 1 runs skipped.
  EXPECT_EQ(calls, 2u + 4 * 3 - 1);
  // Stopped before any run: no point ran, no winner, and no error.
  std::stop_source already;
  already.request_stop();
  const auto none = TuneFedSel(base, grid, data, {}, options, one, {}, {}, already.get_token());
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_TRUE(none->stopped);
  EXPECT_FALSE(none->chosen());
}

// Progress counts iterations, summed over the runs under way on every
// thread: never back, never past the total, ending at it; a refused point
// counts none. The fold loop's runs count the same way.
TEST(TuneFedSel, ProgressCountsEveryRunsIterationsOnce) {
  const Dataset data = SmallSynthetic(2000);
  FedSelConfig base = PrivUnitGBase();
  base.batch_fraction = 0.1;  // 10 iterations an epoch
  base.epochs = 2;
  FedSelGrid grid = FourPoints();
  const PreparePoint prepare = [](const FedSelConfig& c, std::size_t) -> Result<FedSelConfig> {
    if (c.learning_rate == 8 && c.clip == 4) return Error{"refused"};
    return c;
  };
  for (std::size_t threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<std::pair<std::size_t, std::size_t>> seen;
    const auto t =
        TuneFedSel(base, grid, data, {}, {}, pool, prepare,
                   [&](std::size_t done, std::size_t total) { seen.emplace_back(done, total); })
            .value();
    ASSERT_FALSE(seen.empty());
    const std::size_t total = 3 * 20 * static_cast<std::size_t>(TuningOptions{}.splits);
    for (std::size_t k = 0; k < seen.size(); ++k) {
      EXPECT_EQ(seen[k].second, total);
      EXPECT_LE(seen[k].first, total);
      if (k > 0) {
        EXPECT_GT(seen[k].first, seen[k - 1].first);
      }
    }
    EXPECT_EQ(seen.back().first, total) << threads << " threads";
  }
  std::vector<std::size_t> folds;
  ThreadPool pool(2);
  // Two folds of 1,000 training rows: 20 iterations each.
  const auto cv = CrossValidateTuned(base, FedSelGrid{}, data, {1, 2, 7}, {}, pool, {},
                                     [&](std::size_t done, std::size_t total) {
                                       EXPECT_EQ(total, 2u * 20u);
                                       folds.push_back(done);
                                     });
  ASSERT_TRUE(cv.ok()) << cv.error();
  ASSERT_EQ(folds.size(), 2u * 20u);
  for (std::size_t k = 0; k < folds.size(); ++k) EXPECT_EQ(folds[k], k + 1);
}

// Rows outside `train` may be anything: tuning gives the same trials when
// their labels are flipped.
TEST(TuneFedSel, NeverReadsRowsOutsideTrain) {
  const Dataset data = SmallSynthetic(1500);
  Dataset poisoned = data;
  std::vector<std::size_t> train(1000);
  std::iota(train.begin(), train.end(), std::size_t{0});
  for (std::size_t i = 1000; i < 1500; ++i) poisoned.labels[i] = 1 - poisoned.labels[i];
  FedSelConfig base;
  base.variant = ParseFedSelVariant("ps-pm").value();
  FedSelGrid grid;
  grid.learning_rates = {1, 4};
  ThreadPool pool(2);
  const auto a = TuneFedSel(base, grid, data, train, {}, pool).value();
  const auto b = TuneFedSel(base, grid, poisoned, train, {}, pool).value();
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].accuracy, b.trials[i].accuracy);
  }
  // ... and does read the training rows: flipping those changes the trials.
  for (std::size_t i = 0; i < 1000; ++i) poisoned.labels[i] = 1 - poisoned.labels[i];
  const auto c = TuneFedSel(base, grid, poisoned, train, {}, pool).value();
  EXPECT_NE(a.trials[0].accuracy, c.trials[0].accuracy);
}

// A point PreparePoint refuses does not run and cannot win; the chosen
// point is prepared again for the fold's own size.
TEST(CrossValidateTuned, TunesEachFoldOnItsTrainingRows) {
  const Dataset data = SmallSynthetic(1500);
  FedSelConfig base;
  base.variant = ParseFedSelVariant("privunitg").value();
  base.epsilon = 4;
  FedSelGrid grid;
  grid.learning_rates = {0.5, 2};
  grid.batch_fractions = {0.01, 0.1};
  std::vector<std::size_t> sizes;
  const PreparePoint prepare = [&](const FedSelConfig& c,
                                   std::size_t clients) -> Result<FedSelConfig> {
    if (c.batch_fraction > 0.05) return Error{"batch too large"};
    FedSelConfig p = c;
    p.epsilon = clients > 1000 ? 4 : 3;  // depends on the rows it runs on
    return p;
  };
  ThreadPool pool(2);
  const auto t = TuneFedSel(base, grid, data, {}, {}, pool, prepare).value();
  EXPECT_EQ(t.trials[1].refused, "batch too large");
  EXPECT_EQ(t.best.batch_fraction, 0.01);
  EXPECT_EQ(t.trials[0].config.epsilon, 4);  // 1200 fitting rows
  const auto cv = CrossValidateTuned(base, grid, data, {1, 3, 7}, {}, pool, prepare).value();
  ASSERT_EQ(cv.result.folds.size(), 3u);
  ASSERT_EQ(cv.chosen.size(), 3u);
  for (const auto& c : cv.chosen) {
    EXPECT_EQ(c.batch_fraction, 0.01);
    EXPECT_EQ(c.epsilon, 3);  // prepared for the fold's 1000 training rows
  }
  EXPECT_GT(cv.result.MeanAccuracy(), cv.result.MeanMajority());
  EXPECT_FALSE(TuneFedSel(base, grid, data, {}, {0, 2, 1}, pool).ok());
  EXPECT_FALSE(TuneFedSel(base, grid, data, {}, {0.2, 0, 1}, pool).ok());
}

}  // namespace
}  // namespace fedldp
