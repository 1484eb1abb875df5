// The CNN frontier as a library call: its checks, the grid's parsing, and a
// small run that is stopped, resumed and written, every private row within
// its central target and chosen on held-out rows.
#include "fedldp/sim/cnn_frontier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stop_token>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using CnnFrontierTest = testing::TempDirTest;

// 600 MNIST training images (100 held out), 200 test images, one grid
// point of one epoch in rounds of 50, central eps 8: 2 noise-free runs, 2 PrivUnitG runs
// and the two-point run.
CnnFrontierConfig Small(const std::string& out) {
  CnnFrontierConfig c;
  c.data_dir = FEDLDP_MNIST_DIR;
  c.out = out;
  c.quick = true;
  c.train_rows = 600;
  c.test_rows = 200;
  c.validation_rows = 100;
  c.epsilons = {8};
  c.grid = {ParseCnnGridPoint("fedavg:1:1:50:1").value()};
  c.figures = false;
  c.threads = 2;
  return c;
}

TEST(CnnGridPoint, ParsesAndRefusesWithTheReason) {
  const CnnGridPoint g = ParseCnnGridPoint("momentum:0.1:0.5:1000:3").value();
  EXPECT_EQ(g.server.kind, ServerOptimizerKind::kMomentum);
  EXPECT_EQ(g.server.learning_rate, 0.1);
  EXPECT_EQ(g.clip, 0.5);
  EXPECT_EQ(g.per_round, 1000u);
  EXPECT_EQ(g.epochs, 3);
  EXPECT_EQ(g.Name(), "momentum lr 0.1, clip 0.5, 1000 a round, 3 epochs");
  EXPECT_EQ(g.rounds, CnnGridPoint::Rounds::kDisjoint);
  EXPECT_EQ(g.averaging.kind, IterateAveragingKind::kNone);
  const CnnGridPoint s = ParseCnnGridPoint("adam:0.005:1:6000:100:sampled:ema=0.995").value();
  EXPECT_EQ(s.rounds, CnnGridPoint::Rounds::kSampled);
  EXPECT_EQ(s.averaging.kind, IterateAveragingKind::kEma);
  EXPECT_EQ(s.averaging.decay, 0.995);
  EXPECT_EQ(s.Name(),
            "adam lr 0.005, clip 1, 6000 a round, 100 epochs, sampled in secret, ema 0.995");
  const CnnGridPoint t = ParseCnnGridPoint("adam:0.005:1:6000:2:tail=0.25").value();
  EXPECT_EQ(t.rounds, CnnGridPoint::Rounds::kDisjoint);
  EXPECT_EQ(ParseCnnGridPoint("adam:0.005:1:6000:100:allocated").value().Name(),
            "adam lr 0.005, clip 1, 6000 a round, 100 epochs, allocated in secret");
  const CnnGridPoint f =
      ParseCnnGridPoint("adam:0.005:1:6000:100:sampled:freeze=fc1+conv1").value();
  EXPECT_EQ(f.freeze, "fc1,conv1");
  EXPECT_EQ(f.Name(),
            "adam lr 0.005, clip 1, 6000 a round, 100 epochs, sampled in secret, "
            "fc1,conv1 frozen");
  for (const char* bad : {"adam:0.1:1:10:1:freeze=", "adam:0.1:1:10:1:freeze=a:freeze=b"}) {
    EXPECT_NE(ParseCnnGridPoint(bad).error().find("freeze=LAYERS, each at most once"),
              std::string::npos)
        << bad;
  }
  EXPECT_EQ(t.averaging.kind, IterateAveragingKind::kTail);
  EXPECT_EQ(t.averaging.tail, 0.25);
  EXPECT_EQ(ParseCnnGridPoint("adam:0.1:1:10").error(),
            "grid point 'adam:0.1:1:10': give "
            "optimizer:lr:clip:per_round:epochs[:sampled|:allocated][:ema=DECAY|:tail=FRACTION]"
            "[:freeze=LAYERS]");
  for (const char* bad :
       {"adam:0.1:1:10:1:sampled:sampled", "adam:0.1:1:10:1:sampled:allocated",
        "adam:0.1:1:10:1:ema=0.9:tail=0.5", "adam:0.1:1:10:1:secret", "adam:0.1:1:10:1:ema"}) {
    EXPECT_NE(ParseCnnGridPoint(bad).error().find(
                  "give sampled or allocated, ema=DECAY or tail=FRACTION"),
              std::string::npos)
        << bad;
  }
  EXPECT_EQ(ParseCnnGridPoint("adam:0.1:1:10:1:ema=x").error(),
            "grid point 'adam:0.1:1:10:1:ema=x': 'ema=x': ema takes a number");
  EXPECT_NE(ParseCnnGridPoint("adam:0.1:1:10:1:ema=1").error().find("average decay"),
            std::string::npos);
  EXPECT_EQ(ParseCnnGridPoint("sgd:0.1:1:10:1").error(),
            "grid point 'sgd:0.1:1:10:1': the optimizer must be fedavg, momentum, adam or yogi");
  for (const char* bad :
       {"adam:x:1:10:1", "adam:0.1:1:0:1", "adam:0.1:1:10:1.5", "adam:0.1:1:10:0"}) {
    EXPECT_NE(ParseCnnGridPoint(bad).error().find("whole numbers >= 1"), std::string::npos) << bad;
  }
  EXPECT_EQ(ParseCnnGridPoint("adam:0.1:-1:10:1").error(),
            "grid point 'adam:0.1:-1:10:1': clip must be a number > 0");
}

TEST_F(CnnFrontierTest, ValidateSaysWhatIsWrong) {
  auto wrong = [&](auto change) {
    CnnFrontierConfig c = Small(Path("out"));
    change(c);
    return c.Validate().error();
  };
  EXPECT_EQ(wrong([](auto&) {}), "");
  EXPECT_EQ(wrong([](auto& c) { c.dataset = ImageDataset::kCifar10; }),
            "dataset must be mnist or fmnist (the paper's CNN)");
  EXPECT_EQ(wrong([](auto& c) { c.out.clear(); }), "out must name a folder");
  EXPECT_EQ(wrong([](auto& c) { c.epsilons.clear(); }), "give at least one central epsilon");
  EXPECT_EQ(
      wrong([](auto& c) { c.delta = 0; }),
      "delta must be in [1e-12, 1) (below 1e-12 the accountants' rounding would matter), got 0");
  EXPECT_EQ(wrong([](auto& c) { c.randomizers.clear(); }), "give at least one randomizer");
  EXPECT_EQ(wrong([](auto& c) { c.randomizers = {VectorMechanism::kGaussian}; }),
            "gaussian reports are (eps, delta): no central target is proven for them");
  EXPECT_EQ(wrong([](auto& c) { c.validation_rows = 0; }), "validation rows must be >= 1");
  EXPECT_EQ(wrong([](auto& c) { c.grid[0].freeze = "fc1,fc2"; }), "");
  EXPECT_NE(wrong([](auto& c) { c.grid[0].freeze = "fc9"; })
                .find("grid point fedavg lr 1, clip 1, 50 a round, 1 epoch, fc9 frozen: freeze: "
                      "'fc9' is no layer"),
            std::string::npos);
  // What needs the data is refused before DIR is touched.
  CnnFrontierConfig too_many = Small(Path("never"));
  too_many.validation_rows = 600;
  EXPECT_EQ(ReproduceCnnFrontier(too_many).error(),
            "validation rows (600) must be at least 1 and fewer than the training rows (600)");
  CnnFrontierConfig wide = Small(Path("never"));
  wide.grid[0].per_round = 501;
  EXPECT_EQ(ReproduceCnnFrontier(wide).error(),
            "the grid's 501 clients a round are more than the 500 clients tuning trains");
  EXPECT_FALSE(std::filesystem::exists(Path("never")));
}

TEST_F(CnnFrontierTest, AStoppedRunResumesAndEveryRowMeetsItsTarget) {
  const std::string dir = Path("out");
  std::stop_source stop;
  std::size_t finished = 0;
  CnnFrontierObserver observer;
  observer.finished = [&](const JournaledRun& run) {
    EXPECT_EQ(run.index, finished + 1);
    EXPECT_EQ(run.planned, 5u);
    if (++finished == 2) stop.request_stop();
  };
  const auto stopped = ReproduceCnnFrontier(Small(dir), observer, stop.get_token());
  ASSERT_TRUE(stopped.ok()) << stopped.error();
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(testing::LineCount(dir + "/runs.jsonl"), 2u);
  EXPECT_FALSE(std::filesystem::exists(dir + "/summary.md"));

  CnnFrontierConfig again = Small(dir);
  again.resume = true;
  std::string started;
  observer.started = [&](const std::string& s, std::size_t resumed) {
    started = s;
    EXPECT_EQ(resumed, 2u);
  };
  observer.finished = [&](const JournaledRun& run) { EXPECT_EQ(run.planned, 3u); };
  const auto f = ReproduceCnnFrontier(again, observer);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->trained, 3u);
  EXPECT_NE(started.find("mnist, the paper's CNN: 600 single-image clients (100 held out"),
            std::string::npos)
      << started;
  ASSERT_EQ(f->rows.size(), 3u);  // noise-free, privunitg at 8, twopoint
  EXPECT_EQ(f->rows[0].method, "noise-free");
  const CnnFrontierRow& p = f->rows[1];
  EXPECT_EQ(p.method, "privunitg");
  EXPECT_EQ(p.target_epsilon, 8);
  EXPECT_LE(p.total.epsilon, 8);
  EXPECT_GT(p.total.epsilon, 7);  // the largest budget that meets it
  EXPECT_NEAR(p.total.delta, 1e-5, 1e-6);
  // One report per client, each round of 50 shuffled: at eps 8 the shuffler
  // adds nothing, and the report may spend the whole target.
  EXPECT_NEAR(p.local_epsilon, 8, 0.01);
  EXPECT_EQ(p.chosen.per_round, 50u);
  EXPECT_GT(f->rows[0].test_accuracy, f->majority);  // the noise-free CNN learns
  EXPECT_EQ(f->rows[2].method, "twopoint");
  EXPECT_GT(f->rows[2].total.epsilon, 1e4);  // 21,840 weights a report: the honest total
  EXPECT_EQ(testing::LineCount(dir + "/runs.jsonl"), 5u);
  EXPECT_EQ(testing::LineCount(dir + "/cnn-frontier.csv"), 4u);
  EXPECT_EQ(testing::LineCount(dir + "/cnn-frontier.jsonl"), 3u);
  std::ifstream summary(dir + "/summary.md");
  const std::string text((std::istreambuf_iterator<char>(summary)), {});
  EXPECT_NE(text.find("| privunitg | shuffled | 8 | ("), std::string::npos) << text;
  EXPECT_NE(text.find("goal >= 96.00 %"), std::string::npos) << text;
}

// A grid point whose rounds are drawn in secret is stated so: the sampling
// rate and the rounds of the final run's training rows (2 expected reports
// a client of the 600, 50 a round: 24 rounds), the rule of its kind of
// rounds (the sampled curve, or each allocated epoch as one shuffle), the
// released model the EMA, the CSV naming the rounds.
TEST_F(CnnFrontierTest, PointsDrawnInSecretAreStatedByTheirKindOfRounds) {
  const std::pair<const char*, const char*> kinds[] = {
      {"sampled", "sampled without replacement"},
      {"allocated", "random allocation (each epoch of 12 rounds"}};
  for (const auto& [kind, rule] : kinds) {
    CnnFrontierConfig c = Small(Path(kind));
    c.epsilons = {3};
    // The allocated point also keeps two layers frozen: a CSV field of its own.
    const bool allocated = std::string(kind) == "allocated";
    const std::string frozen = allocated ? "conv1+fc1" : "";
    c.grid = {ParseCnnGridPoint(std::string("fedavg:1:1:50:2:") + kind + ":ema=0.9" +
                                (allocated ? ":freeze=" + frozen : ""))
                  .value()};
    const auto f = ReproduceCnnFrontier(c);
    ASSERT_TRUE(f.ok()) << f.error();
    const CnnFrontierRow& p = f->rows[1];
    ASSERT_EQ(p.method, "privunitg");
    EXPECT_EQ(p.chosen.RoundsName(), kind);
    EXPECT_LE(p.total.epsilon, 3);
    EXPECT_GT(p.total.epsilon, 2.9);
    EXPECT_NEAR(p.privacy["sampling_rate"].get<double>(), 50.0 / 600, 1e-12);
    EXPECT_EQ(p.privacy["rounds"], 24);
    EXPECT_EQ(p.rounds, 24);
    EXPECT_NE(p.privacy["rule"].get<std::string>().find(rule), std::string::npos)
        << p.privacy.dump();
    std::ifstream csv(Path(kind) + "/cnn-frontier.csv");
    const std::string text((std::istreambuf_iterator<char>(csv)), {});
    // schedule (the kind of rounds), then their number: the final run's
    EXPECT_NE(text.find(std::string(",50,2,") + kind + ",24,ema=0.9," + frozen + ","),
              std::string::npos)
        << text;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {  // every row as wide as the header
      EXPECT_EQ(std::count(line.begin(), line.end(), ','), 19) << line;
    }
    // The noise-free row is no private row: "learned" is left empty for it.
    EXPECT_NE(text.find(std::string("\nnoise-free,inf,,,,fedavg,1,1,50,2,") + kind + ",24,"),
              std::string::npos)
        << text;
    const std::size_t row = text.find("\nnoise-free,") + 1;
    const std::string line = text.substr(row, text.find('\n', row) - row);
    const std::size_t seconds = line.rfind(',');
    EXPECT_EQ(line[seconds - 1], ',') << line;  // its learned column, empty
  }
}

}  // namespace
}  // namespace fedldp
