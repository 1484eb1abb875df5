#include "fedldp/fl/ldpfl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/random/counter_rng.h"
#include "testing/synthetic.h"
#include "testing/thread_cluster.h"

namespace fedldp {
namespace {

using testing::Stripes;

TEST(PartitionRows, IidShardsAreEqualAndDisjoint) {
  const Dataset d = Stripes(1003, 1);
  const auto shards = PartitionRows(d, {}, 10, {}, 7).value();
  std::set<std::size_t> seen;
  for (const auto& s : shards) {
    EXPECT_EQ(s.size(), 100u);
    seen.insert(s.begin(), s.end());
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(shards, PartitionRows(d, {}, 10, {}, 7).value());
  EXPECT_FALSE(PartitionRows(d, {}, 0, {}, 7).ok());
  EXPECT_FALSE(PartitionRows(d, {}, 5000, {}, 7).ok());
}

TEST(PartitionRows, DirichletShardsCoverEveryRowOnceAndSkewTheClasses) {
  const Dataset d = Stripes(2000, 2);
  const auto shards = PartitionRows(d, {}, 20, {.dirichlet_alpha = 0.1}, 3).value();
  std::vector<int> count(d.size(), 0);
  double top_share = 0;
  std::size_t nonempty = 0;
  for (const auto& s : shards) {
    std::vector<int> per_class(10, 0);
    for (auto r : s) ++count[r], ++per_class[d.labels[r]];
    if (!s.empty()) {
      ++nonempty;
      top_share += static_cast<double>(*std::max_element(per_class.begin(), per_class.end())) /
                   static_cast<double>(s.size());
    }
  }
  EXPECT_TRUE(std::all_of(count.begin(), count.end(), [](int c) { return c == 1; }));
  // IID shards hold ~10 % of their rows in their top class; alpha = 0.1 far more.
  EXPECT_GT(top_share / static_cast<double>(nonempty), 0.4);
}

// 8 clients of Stripes' rows, 2 rounds, adaptive ranges at eps = 5.
LdpFlConfig SmallRun() {
  LdpFlConfig c;
  c.clients = 8;
  c.rounds = 2;
  c.batch = 10;
  c.epsilon = 5;
  c.adaptive = true;
  return c;
}

TEST(TrainLdpFl, ShufflingLeavesTheModelBitIdentical) {
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c = SmallRun();
  auto with = TrainLdpFl(c, train, test, 9).value();
  c.shuffle = false;
  auto without = TrainLdpFl(c, train, test, 9).value();
  ASSERT_EQ(with.rounds.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(with.rounds[r].accuracy, without.rounds[r].accuracy);
    EXPECT_EQ(with.rounds[r].ranges, without.rounds[r].ranges);
  }
  EXPECT_EQ(with.reports, 16u);
  EXPECT_EQ(with.report_bytes, 8u * 16 + (21840 + 7) / 8);
  EXPECT_DOUBLE_EQ(with.privacy.plain_composition, 2 * 21840 * 5.0);
}

// One round: with n clients the server's mean of two-point outputs is
// c + r B (2k/n - 1) for an integer k, so each new weight sits on that
// lattice: itself (weights perturbed) or offset by the old weight (updates).
// Two clients at a time, on two threads: a round's clients train on nets of
// their own and hand over their reports in the clients' order.
void RunOnTwoThreads(std::size_t n, const std::function<void(std::size_t)>& f) {
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) f(i);
  };
  std::thread other(work);
  work();
  other.join();
}

TEST(TrainLdpFl, ClientsTrainedInParallelGiveTheSameModelAsOneAfterAnother) {
  NeuralNet::SetThreads(1);
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c = SmallRun();
  for (const char* randomizer : {"twopoint", "privunitg", "none"}) {
    SCOPED_TRACE(randomizer);
    c.is_private = std::string(randomizer) != "none";
    c.vector = std::string(randomizer) == "privunitg"
                   ? std::optional<VectorMechanism>(VectorMechanism::kPrivUnitG)
                   : std::nullopt;
    c.adaptive = !c.vector;
    const auto serial = TrainLdpFl(c, train, test, 9).value();
    const auto parallel = TrainLdpFl(c, train, test, 9, {}, {}, RunOnTwoThreads).value();
    ASSERT_EQ(serial.weights.size(), parallel.weights.size());
    EXPECT_EQ(serial.weights, parallel.weights);  // bit for bit
    for (std::size_t r = 0; r < serial.rounds.size(); ++r) {
      EXPECT_EQ(serial.rounds[r].accuracy, parallel.rounds[r].accuracy) << r;
    }
    EXPECT_EQ(serial.reports, parallel.reports);
    EXPECT_EQ(serial.most_reports, parallel.most_reports);
  }
}

double LargestDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double largest = 0;
  for (std::size_t j = 0; j < std::min(a.size(), b.size()); ++j) {
    largest = std::max(largest, std::abs(static_cast<double>(a[j]) - b[j]));
  }
  return largest;
}

// Issue 42: one-step clients (one local epoch, a batch of their whole
// shard) train in batched passes of per-example gradients and take the
// steps they take alone: the noise-free model (updates clipped as
// PrivUnitG's clients clip them) within 1e-5 of the one-at-a-time run after
// 3 rounds, passes of 64 or of 3 clients (a remainder pass), on one thread
// or two, on one process or two (bit for bit against one process).
TEST(TrainLdpFl, OneStepClientsInBatchedPassesTakeTheStepsTheyTakeAlone) {
  NeuralNet::SetThreads(1);
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c;
  c.clients = 40;  // 10 rows each
  c.fraction = 0.5;
  c.rounds = 3;
  c.batch = 10;
  c.learning_rate = 0.1;
  c.is_private = false;
  c.vector = VectorMechanism::kPrivUnitG;
  c.clip = 0.5;
  c.client_batch = 0;
  const auto alone = TrainLdpFl(c, train, test, 9).value();
  EXPECT_EQ(alone.client_step, "each client trains alone");
  for (const std::size_t per_pass : {64, 3}) {
    SCOPED_TRACE(per_pass);
    c.client_batch = per_pass;
    const auto batched = TrainLdpFl(c, train, test, 9).value();
    // 20 clients a round: one pass of 20, or 7 passes of 3 (the last of 2).
    EXPECT_NE(batched.client_step.find(std::to_string(per_pass == 64 ? 20 : 3) +
                                       " clients a batched pass of per-example gradients"),
              std::string::npos)
        << batched.client_step;
    EXPECT_LT(LargestDifference(batched.weights, alone.weights), 1e-5);
    const auto parallel = TrainLdpFl(c, train, test, 9, {}, {}, RunOnTwoThreads).value();
    EXPECT_EQ(parallel.weights, batched.weights);
    testing::ThreadRanks ranks(2);
    std::vector<LdpFlRun> runs(2);
    ranks.Run([&](Cluster& cluster) {
      auto run = TrainLdpFl(c, train, test, 9, {}, {}, RunSequentially, cluster);
      if (run.ok()) runs[static_cast<std::size_t>(cluster.rank())] = std::move(run).value();
      if (!run.ok()) ADD_FAILURE() << run.error();
    });
    for (const LdpFlRun& run : runs) EXPECT_EQ(run.weights, batched.weights);
  }
  // The check sees a client's step: a quarter of the learning rate moves
  // the model far past the tolerance.
  c.learning_rate = 0.025;
  EXPECT_GT(LargestDifference(TrainLdpFl(c, train, test, 9).value().weights, alone.weights), 1e-3);
  // Two local steps (a batch of 5 of 10 rows) are not one step: each alone.
  c.batch = 5;
  EXPECT_EQ(TrainLdpFl(c, train, test, 9).value().client_step, "each client trains alone");
}

// Clients spread over 2 or 3 processes (threads standing in for MPI ranks,
// each training its block of clients): every process ends with one
// process's model, bit for bit, with the shuffler on or off.
TEST(TrainLdpFl, SameModelOnAnyNumberOfProcesses) {
  NeuralNet::SetThreads(1);
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c = SmallRun();
  for (const char* randomizer : {"twopoint", "twopoint-shuffled", "privunitg", "none"}) {
    SCOPED_TRACE(randomizer);
    const std::string name = randomizer;
    c.is_private = name != "none";
    c.shuffle = name == "twopoint-shuffled";
    c.vector = name == "privunitg" ? std::optional<VectorMechanism>(VectorMechanism::kPrivUnitG)
                                   : std::nullopt;
    c.adaptive = !c.vector;
    const auto alone = TrainLdpFl(c, train, test, 9).value();
    for (const int size : {2, 3}) {
      testing::ThreadRanks ranks(size);
      std::vector<LdpFlRun> runs(static_cast<std::size_t>(size));
      ranks.Run([&](Cluster& cluster) {
        auto run = TrainLdpFl(c, train, test, 9, {}, {}, RunSequentially, cluster);
        if (run.ok()) runs[static_cast<std::size_t>(cluster.rank())] = std::move(run).value();
        if (!run.ok()) ADD_FAILURE() << run.error();
      });
      for (const LdpFlRun& run : runs) {
        EXPECT_EQ(run.weights, alone.weights) << size;  // bit for bit
        ASSERT_EQ(run.rounds.size(), alone.rounds.size()) << size;
        for (std::size_t r = 0; r < run.rounds.size(); ++r) {
          EXPECT_EQ(run.rounds[r].accuracy, alone.rounds[r].accuracy) << size << " " << r;
          EXPECT_EQ(run.rounds[r].ranges, alone.rounds[r].ranges) << size << " " << r;
        }
        EXPECT_EQ(run.reports, alone.reports) << size;
        EXPECT_EQ(run.report_bytes, alone.report_bytes) << size;
      }
    }
  }
}

TEST(TrainLdpFl, UpdatesArePerturbedAroundTheGlobalModelAndAddedBack) {
  const Dataset train = Stripes(200, 4), test = Stripes(50, 5);
  LdpFlConfig c;
  c.clients = 5;
  c.rounds = 1;
  c.epsilon = 2;
  c.fixed_range = {0, 0.01};
  const double rb = 0.01 * (std::exp(2.0) + 1) / (std::exp(2.0) - 1);
  const std::vector<float> initial = NeuralNet::Create("cnn", 9).value().GetWeights();
  auto lattice_distance = [&](double offset) {  // of offset / (r B) from {2k/n - 1}
    const double k = (offset / rb + 1) * 5 / 2;
    return std::abs(k - std::round(k));
  };
  for (const bool updates : {false, true}) {
    c.perturb_updates = updates;
    const auto run = TrainLdpFl(c, train, test, 9).value();
    ASSERT_EQ(run.weights.size(), initial.size());
    double worst = 0;
    std::size_t moved = 0;
    for (std::size_t j = 0; j < initial.size(); ++j) {
      const double offset = updates ? double{run.weights[j]} - initial[j] : run.weights[j];
      worst = std::max(worst, lattice_distance(offset));
      moved += run.weights[j] != initial[j];
    }
    EXPECT_LT(worst, 1e-3) << (updates ? "updates" : "weights");
    EXPECT_GT(moved, initial.size() / 2);
  }
  c.adaptive = true;  // updates take a fixed range only
  EXPECT_FALSE(TrainLdpFl(c, train, test, 9).ok());
}

TEST(TrainLdpFl, NoiseFreeModelIsTheSameWhetherWeightsOrUpdatesAreSent) {
  const Dataset train = Stripes(200, 4), test = Stripes(50, 5);
  LdpFlConfig c;
  c.clients = 4;
  c.rounds = 2;
  c.is_private = false;
  const auto weights = TrainLdpFl(c, train, test, 3).value();
  c.perturb_updates = true;
  const auto updates = TrainLdpFl(c, train, test, 3).value();
  for (std::size_t j = 0; j < weights.weights.size(); ++j) {
    ASSERT_NEAR(weights.weights[j], updates.weights[j], 1e-6);
  }
}

// Issue 20: a vector randomizer on each client's whole update.
TEST(TrainLdpFl, VectorRandomizersPrivatiseTheWholeClippedUpdate) {
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c;
  c.clients = 8;
  c.rounds = 2;
  c.epsilon = 8;
  c.vector = VectorMechanism::kPrivUnitG;
  c.clip = 0.5;
  const auto shuffled = TrainLdpFl(c, train, test, 9).value();
  EXPECT_EQ(shuffled.reports, 16u);
  EXPECT_EQ(shuffled.report_bytes, 8u * 21840);
  ASSERT_TRUE(shuffled.vector_privacy.has_value());
  const RunPrivacy& p = *shuffled.vector_privacy;
  EXPECT_EQ(p.config.local_epsilon, 8);
  EXPECT_EQ(p.config.rounds, 2u);  // a client may report in every round
  EXPECT_TRUE(p.shuffled);
  EXPECT_EQ(p.config.reports_per_round, 8u);
  EXPECT_LE(p.total.epsilon, 16 + 1e-9);
  // PrivUnitG's floating-point allowance, in the accountant's delta.
  const auto privunitg = LdpFlVectorRandomizer(c, 21840, 0).value();
  EXPECT_GT(p.config.report_deviation, 0);
  EXPECT_EQ(p.config.report_deviation, privunitg->deviation());
  EXPECT_GT(p.allowance, 0);
  // The server draws the round's clients and knows them: half the clients
  // per round are not amplified by sampling.
  LdpFlConfig half = c;
  half.fraction = 0.5;
  half.rounds = 1;
  EXPECT_FALSE(TrainLdpFl(half, train, test, 9)->vector_privacy->config.sampled());
  // Disjoint rounds: 4 rounds of 2 of 8 clients are one epoch, one report
  // per client; 5 rounds begin a second epoch.
  LdpFlConfig disjoint = c;
  disjoint.fraction = 0.25;
  disjoint.rounds = 4;
  disjoint.disjoint_rounds = true;
  EXPECT_EQ(LdpFlReportsPerClient(disjoint), 1u);
  const auto one = TrainLdpFl(disjoint, train, test, 9).value();
  EXPECT_EQ(one.vector_privacy->config.rounds, 1u);
  EXPECT_EQ(one.reports, 8u);
  EXPECT_EQ(one.most_reports, 1u);   // every client once
  disjoint.disjoint_rounds = false;  // a fresh subset each round: some client twice
  EXPECT_GT(TrainLdpFl(disjoint, train, test, 9)->most_reports, 1u);
  disjoint.disjoint_rounds = true;
  disjoint.rounds = 5;
  EXPECT_EQ(LdpFlReportsPerClient(disjoint), 2u);
  disjoint.disjoint_rounds = false;
  EXPECT_EQ(LdpFlReportsPerClient(disjoint), 5u);
  // The shuffle only permutes a round's reports: the mean is the same but
  // for the order of the additions.
  c.shuffle = false;
  const auto plain = TrainLdpFl(c, train, test, 9).value();
  EXPECT_FALSE(plain.vector_privacy->shuffled);
  for (std::size_t j = 0; j < plain.weights.size(); ++j) {
    ASSERT_NEAR(plain.weights[j], shuffled.weights[j], 1e-5) << j;
  }
  // The noise-free reference clips as the private clients do: the model
  // moves by at most the clip norm per round.
  c.is_private = false;
  c.clip = 1e-3;
  const std::vector<float> initial = NeuralNet::Create("cnn", 9).value().GetWeights();
  const auto reference = TrainLdpFl(c, train, test, 9).value();
  double moved = 0;
  for (std::size_t j = 0; j < initial.size(); ++j) {
    const double e = double{reference.weights[j]} - initial[j];
    moved += e * e;
  }
  EXPECT_LE(std::sqrt(moved), 2 * 1e-3 * (1 + 1e-4));
  EXPECT_GT(std::sqrt(moved), 1e-3);  // the clip binds: each round moves it by about 1e-3
  // What does not fit a vector randomizer is refused.
  c.is_private = true;
  c.vector = VectorMechanism::kDuchi;
  EXPECT_NE(c.Validate().error().find("randomizer must be"), std::string::npos);
  // Names: "twopoint" is none; an unknown one names the choices.
  EXPECT_EQ(ParseLdpFlRandomizer("twopoint").value(), std::nullopt);
  EXPECT_EQ(ParseLdpFlRandomizer("privunitg").value(), VectorMechanism::kPrivUnitG);
  const auto laplace = ParseLdpFlRandomizer("laplace");
  ASSERT_FALSE(laplace.ok());
  EXPECT_NE(laplace.error().find("one of twopoint, privunitg"), std::string::npos)
      << laplace.error();
  for (const char* name : {"twopoint", "privunitg", "fastprojunit", "gaussian"}) {
    c.vector = ParseLdpFlRandomizer(name).value();
    EXPECT_EQ(LdpFlRandomizerName(c), name);
  }
  c.vector = VectorMechanism::kFastProjUnit;
  c.adaptive = true;
  EXPECT_NE(c.Validate().error().find("adaptive"), std::string::npos);
  c.adaptive = false;
  c.clip = 0;
  EXPECT_NE(c.Validate().error().find("clip"), std::string::npos);
  // The client count is checked alone, and against the rows by CheckLdpFlConfig.
  c.clip = 1;
  c.clients = 0;
  EXPECT_NE(c.Validate().error().find("clients must be >= 1"), std::string::npos);
  c.clients = 401;
  EXPECT_TRUE(c.Validate().ok());
  EXPECT_NE(CheckLdpFlConfig(c, 400).error().find("clients must be in [1, 400]"),
            std::string::npos);
}

TEST(InputMomentsOf, IsTheMeanAndSdOfEveryValueOfTheChosenRows) {
  Dataset d;
  d.dimension = 2;
  d.features = {0, 1, 2, 3, 4, 5};
  d.labels = {0, 0, 0};
  const std::vector<std::size_t> rows{0, 2};  // 0, 1, 4, 5
  const InputMoments m = InputMomentsOf(d, rows);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_DOUBLE_EQ(m.sd, std::sqrt(4.25));
  const InputMoments none = InputMomentsOf(d, {});
  EXPECT_EQ(none.mean, 0);
  EXPECT_EQ(none.sd, 1);
}

// Issue 42, item 2: the server optimiser steps from the round's model
// towards its estimate, and iterate averaging releases a mean of the
// iterates (each iterate is what a run of that many rounds ends with).
TEST(TrainLdpFl, TheServerStepsTowardsEachEstimateAndReleasesTheAverage) {
  const Dataset train = Stripes(200, 4), test = Stripes(50, 5);
  LdpFlConfig c;
  c.clients = 4;
  c.rounds = 1;
  c.is_private = false;
  c.standardize_inputs = false;  // the accuracy below is of a plain net
  const std::vector<float> start = NeuralNet::Create(c.arch, 3).value().GetWeights();
  const std::vector<float> fedavg = TrainLdpFl(c, train, test, 3)->weights;
  c.server.learning_rate = 0.25;
  const std::vector<float> slow = TrainLdpFl(c, train, test, 3)->weights;
  ASSERT_EQ(slow.size(), start.size());
  for (std::size_t j = 0; j < start.size(); ++j) {
    ASSERT_NEAR(slow[j], start[j] + 0.25 * (fedavg[j] - start[j]), 1e-6) << j;
  }
  c.server = {};
  std::vector<std::vector<float>> iterates;
  for (int rounds = 1; rounds <= 3; ++rounds) {
    c.rounds = rounds;
    iterates.push_back(TrainLdpFl(c, train, test, 3)->weights);
  }
  c.averaging = {IterateAveragingKind::kTail, 0.9, 1.0};
  const LdpFlRun tail = TrainLdpFl(c, train, test, 3).value();
  c.averaging = {IterateAveragingKind::kEma, 0.5, 1.0};
  const std::vector<float> ema = TrainLdpFl(c, train, test, 3)->weights;
  for (std::size_t j = 0; j < start.size(); ++j) {
    const double w1 = iterates[0][j], w2 = iterates[1][j], w3 = iterates[2][j];
    ASSERT_NEAR(tail.weights[j], (w1 + w2 + w3) / 3, 1e-6) << j;
    ASSERT_NEAR(ema[j], 0.25 * w1 + 0.25 * w2 + 0.5 * w3, 1e-6) << j;
  }
  // Each round's accuracy is the released model's.
  NeuralNet net = NeuralNet::Create(c.arch, 3).value();
  net.SetWeights(tail.weights);
  EXPECT_EQ(tail.final_accuracy(), net.Accuracy(test));
}

TEST(TrainedWeights, AreTheLayersNotFrozenInTheirOrder) {
  const std::vector<std::string> names = {"a.weight", "a.bias", "b.weight", "b.bias", "ab.weight"};
  const std::vector<std::size_t> sizes = {3, 1, 2, 1, 2};
  const auto all = TrainedWeights::Of("", names, sizes).value();
  EXPECT_EQ(all.dimension(), 9u);
  EXPECT_EQ(all.frozen(), std::vector<bool>(5, false));
  // A module's name freezes its weight and bias, not another module whose
  // name it begins ("a" is not "ab"); a layer's name freezes that layer.
  const auto b = TrainedWeights::Of(" b , a.bias", names, sizes).value();
  EXPECT_EQ(b.frozen(), (std::vector<bool>{false, true, true, true, false}));
  EXPECT_EQ(b.dimension(), 5u);
  EXPECT_EQ(b.parameters(), 9u);
  const std::vector<float> local = {1, 2, 3, 4, 5, 6, 7, 8, 9}, global(9, 0.5f);
  EXPECT_EQ(b.UpdateOf(local, global), (std::vector<double>{0.5, 1.5, 2.5, 7.5, 8.5}));
  EXPECT_EQ(b.Gather(local), (std::vector<double>{1, 2, 3, 8, 9}));
  std::vector<double> model(9, 1.0);
  b.AddTo(std::vector<double>{2, 4, 6, 8, 10}, 2, model);
  EXPECT_EQ(model, (std::vector<double>{2, 3, 4, 1, 1, 1, 1, 5, 6}));
  // Spans of another size than they take are refused, by every method.
  EXPECT_THROW(b.UpdateOf(global, std::vector<float>(8)), std::invalid_argument);
  EXPECT_THROW(b.UpdateOf(std::vector<float>(10), global), std::invalid_argument);
  EXPECT_THROW(b.Gather(std::vector<float>(8)), std::invalid_argument);
  EXPECT_THROW(b.AddTo(std::vector<double>(9), 1, model), std::invalid_argument);
  EXPECT_THROW(b.AddTo(std::vector<double>(5), 1, std::span<double>(model).first(5)),
               std::invalid_argument);
  EXPECT_EQ(TrainedWeights(4).UpdateOf(std::vector<float>{1, 2, 3, 4}, std::vector<float>(4)),
            (std::vector<double>{1, 2, 3, 4}));
  // Refused: a name of no layer (the layers listed), an empty name, all frozen.
  EXPECT_EQ(TrainedWeights::Of("c", names, sizes).error(),
            "freeze: 'c' is no layer or module of the network (its layers: a.weight, a.bias, "
            "b.weight, b.bias, ab.weight)");
  EXPECT_NE(TrainedWeights::Of("a,,b", names, sizes).error().find("an empty name"),
            std::string::npos);
  EXPECT_NE(TrainedWeights::Of("a,", names, sizes).error().find("an empty name"),
            std::string::npos);
  EXPECT_EQ(TrainedWeights::Of("a,b,ab", names, sizes).error(),
            "freeze: every layer frozen, nothing left to train");
}

// The CNN with fc1 frozen: the released model keeps fc1's initial weights,
// the reports (and the randomizer, and the calibration) have the other
// layers' 5,790 weights, and the noise-free twin keeps fc1 too.
TEST(TrainLdpFl, FrozenLayersStayAtTheirInitialWeightsAndAreNotReported) {
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c;
  c.clients = 40;
  c.rounds = 2;
  c.batch = 1000;  // one-step clients, in batched passes
  c.epsilon = 8;
  c.vector = VectorMechanism::kPrivUnitG;
  c.freeze = "fc1";
  const auto trained = LdpFlTrainedWeights(c).value();
  EXPECT_EQ(trained.dimension(), 21840u - 320 * 50 - 50);
  const std::vector<float> initial = NeuralNet::Create("cnn", 9).value().GetWeights();
  for (const bool is_private : {true, false}) {
    c.is_private = is_private;
    const auto run = TrainLdpFl(c, train, test, 9).value();
    EXPECT_EQ(run.parameters, 21840u);
    EXPECT_EQ(run.trained, 5790u);
    std::size_t moved = 0;
    const std::size_t fc1 = 10 * 25 + 10 + 20 * 10 * 25 + 20;  // conv1's and conv2's weights
    for (std::size_t j = 0; j < initial.size(); ++j) {
      if (j >= fc1 && j < fc1 + 16050) {
        ASSERT_EQ(run.weights[j], initial[j]) << j;
      } else {
        moved += run.weights[j] != initial[j];
      }
    }
    EXPECT_GT(moved, 5000u);
    if (is_private) {
      EXPECT_EQ(run.report_bytes, 8u * 5790);
    }
  }
  // Calibrated on the trained weights' dimension.
  c.is_private = true;
  c.shuffle = true;
  c.central_epsilon = 3;
  c.epsilon = 1;
  EXPECT_EQ(ApplyCentralTarget(c)->epsilon, CalibrateLdpFlToCentral(c, 5790)->epsilon);
  // The two-point reports every weight: it cannot freeze one.
  c.central_epsilon = 0;
  c.vector.reset();
  EXPECT_NE(c.Validate().error().find("freeze takes a vector randomizer"), std::string::npos);
  c.is_private = false;
  EXPECT_TRUE(c.Validate().ok());
  c.vector = VectorMechanism::kPrivUnitG;
  c.is_private = true;
  c.freeze = "fc3";
  EXPECT_NE(TrainLdpFl(c, train, test, 9).error().find("'fc3' is no layer or module"),
            std::string::npos);
}

// Secret sampling: the same clients are drawn, and the statement is the
// accountant's for rounds sampled at rate per round / clients.
// 40 clients, a quarter of them a round, PrivUnitG at eps 4, shuffled.
LdpFlConfig FortyPrivUnitGClients(int rounds) {
  LdpFlConfig c;
  c.clients = 40;
  c.fraction = 0.25;
  c.rounds = rounds;
  c.epsilon = 4;
  c.vector = VectorMechanism::kPrivUnitG;
  return c;
}

TEST(TrainLdpFl, SecretSamplingAmplifiesTheStatementAndNotTheTraining) {
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c = FortyPrivUnitGClients(2);
  const LdpFlRun server = TrainLdpFl(c, train, test, 9).value();
  c.secret_sampling = true;
  const LdpFlRun secret = TrainLdpFl(c, train, test, 9).value();
  EXPECT_EQ(secret.weights, server.weights);
  const RunPrivacy& p = *secret.vector_privacy;
  EXPECT_FALSE(server.vector_privacy->config.sampled());
  EXPECT_EQ(p.config.sampling_rate, 0.25);
  EXPECT_EQ(p.config.rounds, 2u);
  EXPECT_EQ(p.config.reports_per_round, 10u);
  const RunPrivacy expected = AccountRun(p.config).value();
  EXPECT_EQ(p.total.epsilon, expected.total.epsilon);
  EXPECT_LT(p.total.epsilon, server.vector_privacy->total.epsilon);
  for (auto refuse : std::vector<std::function<void(LdpFlConfig&)>>{
           [](LdpFlConfig& x) { x.vector.reset(); },
           [](LdpFlConfig& x) { x.vector = VectorMechanism::kGaussian; },
           [](LdpFlConfig& x) { x.shuffle = false; }}) {
    LdpFlConfig bad = c;
    refuse(bad);
    EXPECT_NE(TrainLdpFl(bad, train, test, 9).error().find("secret sampling"), std::string::npos);
  }
}

// Secret sampling with disjoint rounds is random allocation: the same
// clients as the server's epochs, each epoch of 4 rounds of 10 stated as one
// shuffle of 40 reports (the figures of 2 whole rounds of 40), which states
// less than the server's draw.
TEST(TrainLdpFl, ASecretEpochOrderIsStatedAsRandomAllocation) {
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c = FortyPrivUnitGClients(8);
  c.disjoint_rounds = true;
  const LdpFlRun server = TrainLdpFl(c, train, test, 9).value();
  c.secret_sampling = true;
  const LdpFlRun secret = TrainLdpFl(c, train, test, 9).value();
  EXPECT_EQ(secret.weights, server.weights);
  const RunPrivacy& p = *secret.vector_privacy;
  EXPECT_TRUE(p.config.allocation);
  EXPECT_EQ(p.config.sampling_rate, 0.25);
  EXPECT_EQ(p.config.rounds, 8u);
  EXPECT_EQ(p.epochs, 2u);
  EXPECT_EQ(p.epoch_reports, 40u);
  RunPrivacyConfig whole = p.config;
  whole.allocation = false;
  whole.sampling_rate = 1;
  whole.rounds = 2;
  whole.reports_per_round = 40;
  EXPECT_EQ(p.total.epsilon, AccountRun(whole).value().total.epsilon);
  EXPECT_EQ(server.vector_privacy->config.rounds, 2u);
  EXPECT_LT(p.total.epsilon, server.vector_privacy->total.epsilon);
}

// The central target: the budget found is the largest the accountant lets
// the run spend (within 0.3 %: 0.3 % more breaks the target), for shuffled
// disjoint rounds and for secret sampling; TrainLdpFl refuses a budget
// above it; what cannot be calibrated is refused with the reason.
TEST(CalibrateLdpFlToCentral, FindsTheLargestBudgetThatMeetsTheTarget) {
  constexpr std::size_t d = 1000;
  LdpFlConfig c;
  c.clients = 60000;
  c.fraction = 0.05;
  c.rounds = 40;  // 2 epochs of 20 disjoint rounds: 2 reports per client
  c.disjoint_rounds = true;
  c.vector = VectorMechanism::kPrivUnitG;
  c.delta = 1e-5;
  c.central_epsilon = 2;
  const auto central_at = [&](const LdpFlConfig& config) {
    const auto randomizer = LdpFlVectorRandomizer(config, d, 0).value();
    return AccountRun(LdpFlRunPrivacyOf(config, *randomizer)).value().total.epsilon;
  };
  for (const bool secret : {false, true}) {
    LdpFlConfig target = c;
    target.disjoint_rounds = !secret;
    target.secret_sampling = secret;
    const LdpFlConfig calibrated = CalibrateLdpFlToCentral(target, d).value();
    EXPECT_LE(central_at(calibrated), 2.0) << secret;
    LdpFlConfig more = calibrated;
    more.epsilon *= 1.003;
    EXPECT_GT(central_at(more), 2.0) << secret;
    EXPECT_GT(calibrated.epsilon, 2.0) << secret;  // the shuffler amplifies
  }
  // TrainLdpFl states the same and refuses a budget above the target.
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig small = c;
  small.clients = 40;
  small.fraction = 0.25;
  small.rounds = 2;
  small.epsilon = 8;
  EXPECT_NE(TrainLdpFl(small, train, test, 9).error().find("exceeds its target"),
            std::string::npos);
  small = CalibrateLdpFlToCentral(small, NeuralNet::Create("cnn", 0).value().parameters()).value();
  const LdpFlRun run = TrainLdpFl(small, train, test, 9).value();
  EXPECT_LE(run.vector_privacy->total.epsilon, 2.0);
  for (auto refuse : std::vector<std::function<void(LdpFlConfig&)>>{
           [](LdpFlConfig& x) { x.vector.reset(); },
           [](LdpFlConfig& x) { x.vector = VectorMechanism::kGaussian; },
           [](LdpFlConfig& x) { x.shuffle = false; }}) {
    LdpFlConfig bad = c;
    refuse(bad);
    EXPECT_NE(CalibrateLdpFlToCentral(bad, d).error().find("a central epsilon takes"),
              std::string::npos);
  }
  LdpFlConfig none = c;
  none.central_epsilon = 0;
  EXPECT_FALSE(CalibrateLdpFlToCentral(none, d).ok());
  none.central_epsilon = -1;
  EXPECT_NE(none.Validate().error().find("central epsilon"), std::string::npos);
  const std::vector<std::pair<std::string, OptionValue>> both = {{"central_epsilon", 2.0},
                                                                 {"epsilon", 4.0}};
  EXPECT_NE(LdpFlConfigWith(c, both).error().find("not both"), std::string::npos);
}

TEST(TrainLdpFl, TestingEveryKthRoundLeavesTheTrainingAsItIs) {
  const Dataset train = Stripes(400, 4), test = Stripes(100, 5);
  LdpFlConfig c = SmallRun();
  c.rounds = 5;
  const LdpFlRun every = TrainLdpFl(c, train, test, 9).value();
  c.evaluate_every = 2;
  const LdpFlRun some = TrainLdpFl(c, train, test, 9).value();
  ASSERT_EQ(some.rounds.size(), 5u);
  for (int r = 0; r < 5; ++r) {
    SCOPED_TRACE(r + 1);
    if (r == 1 || r == 3 || r == 4) {  // rounds 2 and 4, and the last
      EXPECT_EQ(some.rounds[r].accuracy, every.rounds[r].accuracy);
    } else {
      EXPECT_TRUE(std::isnan(some.rounds[r].accuracy));
    }
  }
  EXPECT_EQ(some.weights, every.weights);
  // Stopped after round 3, which was not tested: its model is tested then.
  std::stop_source stop;
  const LdpFlRun stopped = TrainLdpFl(
                               c, train, test, 9,
                               [&](const LdpFlRound& r) {
                                 if (r.round == 3) stop.request_stop();
                               },
                               stop.get_token())
                               .value();
  ASSERT_EQ(stopped.rounds.size(), 3u);
  EXPECT_EQ(stopped.final_accuracy(), every.rounds[2].accuracy);
  c.evaluate_every = 0;
  EXPECT_EQ(c.Validate().error(), "evaluate_every must be >= 1");
}

TEST(TrainLdpFl, RejectsBadConfigurations) {
  const Dataset train = Stripes(100, 4), test = Stripes(20, 5);
  LdpFlConfig c;
  c.clients = 4;
  c.rounds = 0;
  EXPECT_FALSE(TrainLdpFl(c, train, test, 1).ok());
  c.rounds = 1;
  c.arch = "vgg";  // expects 3072 features
  EXPECT_NE(TrainLdpFl(c, train, test, 1).error().find("expects 3072"), std::string::npos);
}

}  // namespace
}  // namespace fedldp
