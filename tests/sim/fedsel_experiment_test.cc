// `fedldp train` and `fedldp tune` as library calls: the typed
// configuration and its checks, the references beside the private run, the
// record, and a stop that keeps the folds done.
#include "fedldp/sim/fedsel_experiment.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <stop_token>

#include "testing/privacy_record.h"

namespace fedldp {
namespace {

FedSelExperimentConfig Small(const std::string& variant = "privunitg") {
  FedSelExperimentConfig c;
  c.dataset = "syn-L-0.1-0.6";  // generated: 60,000 rows, d = 100
  c.training = DefaultFedSelConfig(ParseFedSelVariant(variant).value());
  c.cv = {1, 2, 7};
  c.threads = 2;
  return c;
}

TEST(FedSelExperimentConfig, ValidateSaysWhatIsWrong) {
  EXPECT_TRUE(Small().Validate().ok());
  auto wrong = [](auto change) {
    FedSelExperimentConfig c = Small();
    change(c);
    const Status s = c.Validate();
    return s.ok() ? std::string("ok") : s.error();
  };
  EXPECT_NE(wrong([](auto& c) { c.training.variant.control = true; }), "ok");
  EXPECT_NE(wrong([](auto& c) { c.training.epsilon = 0; }).find("epsilon"), std::string::npos);
  EXPECT_EQ(wrong([](auto& c) {
              c.training = DefaultFedSelConfig(ParseFedSelVariant("np").value());
              c.training.shuffle = true;
            }),
            "shuffle: variant np is not private");
  EXPECT_EQ(wrong([](auto& c) {
              c.training = DefaultFedSelConfig(ParseFedSelVariant("gaussian").value());
              c.training.shuffle = true;
            }),
            "shuffle: no amplification is proven for the Gaussian's reports");
  EXPECT_EQ(wrong([](auto& c) { c.central_epsilon = 1; }), "a central epsilon needs the shuffler");
  EXPECT_EQ(wrong([](auto& c) { c.training.dirichlet_alpha = 0.5; }),
            "a Dirichlet alpha needs clients (the rows are split among them)");
  EXPECT_EQ(wrong([](auto& c) { c.pool = 2; }),
            "pooling applies to the image datasets (mnist, fmnist and cifar10) only");
  EXPECT_EQ(wrong([](auto& c) { c.feature_center = 2; }),
            "the features' centre must be a number in [-1, 1] (the features' scale), got 2");
  EXPECT_EQ(wrong([](auto& c) { c.label_column = "y"; }),
            "a label column applies to a CSV data file only");
  EXPECT_EQ(wrong([](auto& c) { c.grid = FedSelGrid{}; }), "a grid needs tuning");
  EXPECT_EQ(wrong([](auto& c) { c.cv.folds = 1; }), "folds must be >= 2");
  EXPECT_EQ(wrong([](auto& c) { c.cv.repeats = 0; }),
            "repeats must be a whole number from 1 to 1000, got 0");
  // A fixed split (MNIST's test set) has no folds to check.
  EXPECT_EQ(wrong([](auto& c) { c.cv.folds = 1, c.cv.test_from = 100; }), "ok");
  EXPECT_EQ(wrong([](auto& c) { c.reference_lr = 0; }),
            "the reference's learning rate must be a finite number in (0, 1e+06], got 0");
  // What needs the data is refused by the run, before it trains.
  FedSelExperimentConfig missing = Small();
  missing.dataset = "no-such-set";
  bool started = false;
  FedSelObserver observer;
  observer.started = [&](const FedSelExperiment&) { started = true; };
  EXPECT_FALSE(RunFedSelExperiment(missing, observer).ok());
  EXPECT_FALSE(started);
}

TEST(RunFedSelExperiment, RunsBesideTheReferencesAndRecordsInPercent) {
  std::vector<std::string> stages;
  FedSelObserver observer;
  observer.started = [&](const FedSelExperiment& e) {
    EXPECT_EQ(e.data->size(), 60000u);
    EXPECT_EQ(e.threads, 2u);
    EXPECT_TRUE(e.result.folds.empty());
    stages.push_back("started");
  };
  observer.progress = [&](const std::string& label, std::size_t done, std::size_t total) {
    EXPECT_LE(done, total);
    if (stages.back() != label) stages.push_back(label);
  };
  const FedSelExperiment e = RunFedSelExperiment(Small(), observer).value();
  EXPECT_EQ(stages, (std::vector<std::string>{"started", "private", "reference"}));
  ASSERT_EQ(e.result.folds.size(), 2u);
  ASSERT_TRUE(e.reference.has_value());
  EXPECT_GT(e.reference->MeanAccuracy(), e.result.MeanMajority());
  EXPECT_TRUE(e.learned());
  EXPECT_FALSE(e.stopped());
  const auto j = nlohmann::json::parse(e.RecordJson());
  EXPECT_EQ(j["accuracy_unit"], "percent");
  EXPECT_EQ(j["variant"], "privunitg");
  EXPECT_EQ(j["seed"], 7);
  EXPECT_DOUBLE_EQ(j["accuracy_mean"].get<double>(), 100 * e.result.MeanAccuracy());
  EXPECT_DOUBLE_EQ(j["nonprivate_mean"].get<double>(), 100 * e.reference->MeanAccuracy());
  EXPECT_EQ(j["per_fold"].size(), 2u);
  EXPECT_EQ(j["stopped"], false);
  // Without the reference, null; the same seed, the same folds.
  FedSelExperimentConfig alone = Small();
  alone.reference = false;
  const FedSelExperiment again = RunFedSelExperiment(alone).value();
  EXPECT_TRUE(nlohmann::json::parse(again.RecordJson())["nonprivate_mean"].is_null());
  EXPECT_EQ(again.result.folds[1].accuracy, e.result.folds[1].accuracy);
}

// The centre is subtracted from the rows both models train on, and said.
TEST(RunFedSelExperiment, CentredFeaturesAreTheRowsTrainedOnAndRecorded) {
  FedSelExperimentConfig c = Small();
  c.training.epochs = 1;
  const FedSelExperiment plain = RunFedSelExperiment(c).value();
  c.feature_center = 0.25;
  const FedSelExperiment e = RunFedSelExperiment(c).value();
  ASSERT_EQ(e.data->features.size(), plain.data->features.size());
  for (std::size_t i = 0; i < e.data->features.size(); i += 997) {
    EXPECT_EQ(e.data->features[i], plain.data->features[i] - 0.25f);
  }
  EXPECT_EQ(e.dataset_label, plain.dataset_label + ", features centred on 0.25");
  const auto j = nlohmann::json::parse(e.RecordJson());
  EXPECT_EQ(j["feature_center"], 0.25);
  EXPECT_EQ(j["pool"], 1);
  EXPECT_EQ(nlohmann::json::parse(plain.RecordJson())["feature_center"], 0.0);
}

TEST(RunFedSelExperiment, AStopKeepsTheFoldsDoneAndSkipsTheReference) {
  FedSelExperimentConfig c = Small();
  c.cv = {1, 3, 7};
  std::stop_source stop;
  FedSelObserver observer;
  // Asked two rounds into the second fold: the first is kept, the second
  // ends at its next round and is not scored.
  std::size_t fold_rounds = 0;
  observer.progress = [&](const std::string&, std::size_t done, std::size_t total) {
    fold_rounds = total / 3;
    if (done == fold_rounds + 2) stop.request_stop();
  };
  const FedSelExperiment e = RunFedSelExperiment(c, observer, stop.get_token()).value();
  EXPECT_TRUE(e.stopped());
  EXPECT_EQ(e.result.folds.size(), 1u);
  EXPECT_EQ(e.result.last.iterations, fold_rounds);  // the first fold's, whole
  EXPECT_FALSE(e.result.last.stopped);
  EXPECT_FALSE(e.reference.has_value());
  const auto j = nlohmann::json::parse(e.RecordJson());
  EXPECT_EQ(j["stopped"], true);
  EXPECT_EQ(j["per_fold"].size(), 1u);
  // Stopped before the first fold: nothing to report, and it says so.
  std::stop_source early;
  early.request_stop();
  const auto none = RunFedSelExperiment(c, {}, early.get_token());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), "stopped before the first fold finished");
}

TEST(RunFedSelTuning, TriesEveryGridPointAndRecordsEach) {
  FedSelExperimentConfig c = Small();
  c.tune = true;
  FedSelGrid grid;
  grid.learning_rates = {1, 4};
  grid.batch_fractions = {0.05};
  grid.clips = {1, 2};
  c.grid = grid;
  c.tuning.splits = 1;
  std::size_t points = 0;
  FedSelTuningObserver observer;
  observer.started = [&](const FedSelTuningRun& t) { points = t.points; };
  const FedSelTuningRun t = RunFedSelTuning(c, observer).value();
  EXPECT_EQ(points, 4u);
  EXPECT_EQ(t.tuning.trials.size(), 4u);
  std::istringstream lines(t.RecordLines());
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["accuracy_unit"], "percent");
    EXPECT_GT(j["validation_accuracy"].get<double>(), 50) << line;
    EXPECT_TRUE(testing::IsPrivacyRecord(j["privacy"])) << line;
    EXPECT_EQ(j["privacy"]["local"]["epsilon"], c.training.epsilon) << line;
  }
  EXPECT_EQ(n, 4u);
}

// Each point of a tune at a central target records the statement of its run
// on a split: the target, met, at the target's delta; a point that did not
// run, and a non-private one, spent nothing (null).
TEST(RunFedSelTuning, RecordsEachPointsCentralStatement) {
  FedSelExperimentConfig c = Small();
  c.tune = true;
  c.training.shuffle = true;
  c.central_epsilon = 1;
  c.central_delta = 1e-7;
  FedSelGrid grid;
  grid.learning_rates = {1};
  grid.batch_fractions = {0.05, 0.5};
  grid.epochs = {1, 2};
  c.grid = grid;
  c.tuning.splits = 1;
  const FedSelTuningRun t = RunFedSelTuning(c).value();
  std::istringstream lines(t.RecordLines());
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    const auto p = nlohmann::json::parse(line)["privacy"];
    ASSERT_TRUE(testing::IsPrivacyRecord(p)) << line;
    EXPECT_EQ(p["total"]["delta"], 1e-7) << line;
    EXPECT_LE(p["total"]["epsilon"].get<double>(), 1.0) << line;
    EXPECT_GT(p["total"]["epsilon"].get<double>(), 0.99) << line;  // calibrated, not loose
    EXPECT_NE(p["reports_per_round"], nullptr) << line;
  }
  EXPECT_EQ(n, 4u);
  std::stop_source stopped;
  stopped.request_stop();
  const FedSelTuningRun none = RunFedSelTuning(c, {}, stopped.get_token()).value();
  std::istringstream not_run(none.RecordLines());
  for (std::string line; std::getline(not_run, line);) {
    EXPECT_EQ(nlohmann::json::parse(line)["privacy"], nullptr) << line;
  }
  FedSelExperimentConfig np = Small("np");
  np.tune = true;
  np.grid = FedSelGrid{};
  np.grid->learning_rates = {1};
  np.tuning.splits = 1;
  const FedSelTuningRun plain = RunFedSelTuning(np).value();
  EXPECT_EQ(nlohmann::json::parse(plain.RecordLines())["privacy"], nullptr);
}

}  // namespace
}  // namespace fedldp
