// `fedldp ldpfl` as a library call: the typed configuration and its checks,
// the record (percent, null for what did not run), the observer's order,
// and a stop that keeps the rounds done.
#include "fedldp/sim/ldpfl_experiment.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stop_token>

namespace fedldp {
namespace {

LdpFlExperimentConfig Small() {
  LdpFlExperimentConfig c = DefaultLdpFlExperiment(ImageDataset::kMnist);
  c.data_dir = FEDLDP_MNIST_DIR;
  c.train_rows = 2000;
  c.test_rows = 500;
  c.training.clients = 20;
  c.training.fraction = 0.5;
  c.training.rounds = 2;
  c.training.epsilon = 5;
  c.threads = 1;
  return c;
}

TEST(LdpFlExperimentConfig, DefaultsAreThePapersAndValidateSaysWhatIsWrong) {
  EXPECT_EQ(DefaultLdpFlExperiment(ImageDataset::kMnist).training.fixed_range.radius, 0.075);
  EXPECT_EQ(DefaultLdpFlExperiment(ImageDataset::kFmnist).training.fixed_range.radius, 0.015);
  EXPECT_EQ(DefaultLdpFlExperiment(ImageDataset::kCifar10).training.learning_rate, 0.015);
  EXPECT_TRUE(Small().Validate().ok());
  for (const ImageDataset d :
       {ImageDataset::kMnist, ImageDataset::kFmnist, ImageDataset::kCifar10}) {
    EXPECT_EQ(ParseImageDataset(ImageDatasetName(d)).value(), d);
  }
  EXPECT_NE(ParseImageDataset("svhn").error().find("mnist, fmnist or cifar10"), std::string::npos);
  auto wrong = [](auto change) {
    LdpFlExperimentConfig c = Small();
    change(c);
    return c.Validate().error();
  };
  EXPECT_EQ(wrong([](auto& c) { c.training.fixed_range.radius = 0; }), "radius must be > 0");
  EXPECT_EQ(wrong([](auto& c) { c.threads = -1; }), "threads must be >= 0");
  EXPECT_NE(wrong([](auto& c) { c.training.epsilon = 0; }).find("epsilon"), std::string::npos);
  EXPECT_NE(wrong([](auto& c) { c.training.fraction = 2; }).find("fraction"), std::string::npos);
  EXPECT_NE(wrong([](auto& c) {
              c.training.perturb_updates = true;
              c.training.adaptive = true;
            }).find("fixed range"),
            std::string::npos);
  // What needs the rows is refused by the run, before any training.
  LdpFlExperimentConfig many = Small();
  many.training.clients = 5000;
  bool started = false;
  LdpFlObserver observer;
  observer.started = [&](const LdpFlExperiment&) { started = true; };
  const auto refused = RunLdpFlExperiment(many, observer);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("clients must be in [1, 2000]"), std::string::npos);
  EXPECT_FALSE(started);
}

TEST(RunLdpFlExperiment, RecordsPercentPerRoundAndTheNoiseFreeModel) {
  std::vector<std::string> events;
  LdpFlObserver observer;
  observer.started = [&](const LdpFlExperiment& e) {
    EXPECT_EQ(e.train_rows, 2000u);
    EXPECT_EQ(e.config.training.arch, "cnn");
    EXPECT_TRUE(e.run.rounds.empty());
    events.push_back("started");
  };
  observer.round = [&](bool reference, const LdpFlRound& r, int rounds) {
    EXPECT_EQ(rounds, 2);
    events.push_back((reference ? "reference " : "private ") + std::to_string(r.round));
  };
  const LdpFlExperiment e = RunLdpFlExperiment(Small(), observer).value();
  EXPECT_EQ(events, (std::vector<std::string>{"started", "private 1", "private 2", "reference 1",
                                              "reference 2"}));
  ASSERT_TRUE(e.reference.has_value());
  EXPECT_FALSE(e.stopped());
  const auto j = nlohmann::json::parse(e.RecordJson());
  EXPECT_EQ(j["accuracy_unit"], "percent");
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), 100 * e.run.final_accuracy());
  EXPECT_DOUBLE_EQ(j["noise_free"].get<double>(), 100 * e.reference->final_accuracy());
  EXPECT_DOUBLE_EQ(j["majority"].get<double>(), 100 * e.run.majority);
  ASSERT_EQ(j["per_round"].size(), 2u);
  EXPECT_EQ(j["per_round"][1]["round"], 2);
  EXPECT_EQ(j["dataset"], "mnist");
  EXPECT_EQ(j["radius"], 0.075);
  EXPECT_EQ(j["stopped"], false);
  // The same seed gives the same model.
  const LdpFlExperiment again = RunLdpFlExperiment(Small()).value();
  EXPECT_EQ(again.run.weights, e.run.weights);
}

TEST(RunLdpFlExperiment, AStopKeepsTheRoundsDoneAndSkipsTheReference) {
  LdpFlExperimentConfig c = Small();
  c.training.rounds = 5;
  std::stop_source stop;
  LdpFlObserver observer;
  observer.round = [&](bool, const LdpFlRound& r, int) {
    if (r.round == 2) stop.request_stop();
  };
  const LdpFlExperiment e = RunLdpFlExperiment(c, observer, stop.get_token()).value();
  EXPECT_TRUE(e.stopped());
  EXPECT_EQ(e.run.rounds.size(), 2u);
  EXPECT_FALSE(e.reference.has_value());
  EXPECT_EQ(e.run.weights.size(), e.run.parameters);  // the model as the rounds left it
  const auto j = nlohmann::json::parse(e.RecordJson());
  EXPECT_EQ(j["stopped"], true);
  EXPECT_EQ(j["rounds_done"], 2);
  EXPECT_TRUE(j["client_step"].is_string());
  EXPECT_EQ(j["rounds"], 5);
  EXPECT_TRUE(j["noise_free"].is_null());
}

// --validation-rows: the clients share the other training rows and the
// held-out rows are scored, never the test split; the record says so.
TEST(RunLdpFlExperiment, ValidationRowsAreScoredInsteadOfTheTestSplit) {
  LdpFlExperimentConfig c = Small();
  c.test_rows = 0;
  c.validation_rows = 400;
  c.training.rounds = 1;
  c.reference = false;
  const LdpFlExperiment e = RunLdpFlExperiment(c).value();
  EXPECT_EQ(e.train_rows, 1600u);
  EXPECT_EQ(e.test_rows, 400u);
  const auto j = nlohmann::json::parse(e.RecordJson());
  EXPECT_EQ(j["scored_on"], "validation");
  LdpFlExperimentConfig tested = c;
  tested.validation_rows = 0;
  tested.test_rows = 500;
  EXPECT_EQ(nlohmann::json::parse(RunLdpFlExperiment(tested).value().RecordJson())["scored_on"],
            "test");
  c.test_rows = 500;
  EXPECT_NE(c.Validate().error().find("not both"), std::string::npos);
  c.test_rows = 0;
  c.validation_rows = 2000;
  EXPECT_NE(RunLdpFlExperiment(c).error().find("fewer than the training rows (2000)"),
            std::string::npos);
}

}  // namespace
}  // namespace fedldp
