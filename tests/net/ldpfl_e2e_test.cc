// The LDP-FL deployment as separate processes on loopback: `fedldp serve
// --protocol ldpfl`, `fedldp shuffle` and 20 `fedldp client` processes (each
// one user holding a twentieth of MNIST's first 6,000 training rows), in the
// quick setting; compared with the simulator's TrainLdpFl on the same rows
// and configuration; the shuffler is killed as round 2 opens and restarted:
// clients retry, and every user's report of every round is counted once.
//
// One deployed run's accuracy varies too much (sd 0.46 points) to be held
// within 1 point of the simulator on its own: the process run is held within
// 2.5 points (4 sd) of one simulator seed, and the 1-point check is on the
// mean of 6 runs of the deployment's own task, coordinator, shuffler core
// and participants in this process (SecureRng, sealed pieces, ledgers, state
// file; only the network left out), a long test (FEDLDP_LONG_TESTS=1).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>

#include "fedldp/data/loaders.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/net/ldpfl_deploy.h"
#include "testing/long_tests.h"
#include "testing/privacy_record.h"
#include "testing/processes.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using namespace testing::processes;

constexpr bool kSanitized = FEDLDP_SANITIZED;
constexpr int kClients = 20;
constexpr std::size_t kTrainRows = 6000;
// Under ASan + UBSan the processes' local training took 109 s of CPU with
// the quick setting's 5 epochs in 3 rounds, and the simulator's seeds
// minutes more: the sanitizer build trains 2 epochs a round in 3 rounds
// (the simulator's seed 1 reaches 82 % so) and checks the protocol (every
// report counted, the shuffler's death survived) and that the model learned;
// the release build runs the quick setting and also holds the accuracy to
// the simulator's.
constexpr int kLocalEpochs = kSanitized ? 2 : 5;
constexpr int kRounds = kSanitized ? 3 : 5;
// Deployed runs whose mean the long test holds to the simulator's.
constexpr int kDeployedRuns = 6;

// The configuration of the process run's `fedldp serve` flags below.
LdpFlConfig Config() {
  LdpFlConfig config;
  config.clients = kClients;
  config.rounds = kRounds;
  config.local_epochs = kLocalEpochs;
  config.perturb_updates = true;
  config.epsilon = 5;
  return config;
}

class LdpFlE2eTest : public testing::TempDirTest {
 protected:
  // What `fedldp serve --protocol ldpfl`, `fedldp shuffle` and 20 `fedldp
  // client --part i/20` processes run, in this process: the same task, keys,
  // coordinator and state file, shuffler core, participants and ledgers
  // (SecureRng throughout); only the network is left out. Returns the final
  // model's test accuracy.
  double DeployedInProcess(const TrainTest& split, std::span<const std::size_t> rows,
                           int run) const {
    using Clock = LdpFlCoordinator::Clock;
    const std::string tag = "inproc" + std::to_string(run);
    ServerKeys keys = ServerKeys::Generate();
    const LdpFlTaskSpec spec =
        MakeLdpFlTask(tag, Config(), kClients, split.train, rows, keys.public_key).value();
    SecureRng rng;
    const std::vector<float> init = NeuralNet::Create(spec.config.arch, rng()).value().GetWeights();
    auto state = ServerState::Open(Path(tag + ".sqlite")).value();
    const auto tokens = state.IssueTokens(kClients).value();
    RoundPolicy policy;
    policy.deadline = std::chrono::hours(1);
    policy.stale_after = std::chrono::hours(1);
    auto server = LdpFlCoordinator::Create(spec, policy, std::move(state), std::move(keys),
                                           std::vector<double>(init.begin(), init.end()))
                      .value();
    ShufflerCore shuffler({.min_batch = 10});
    std::vector<std::unique_ptr<PrivacyLedger>> ledgers;
    std::vector<std::unique_ptr<LdpFlParticipant>> clients;
    std::vector<std::string> sessions;
    for (int i = 0; i < kClients; ++i) {
      const std::size_t a = i * rows.size() / kClients, b = (i + 1) * rows.size() / kClients;
      std::vector<std::vector<std::size_t>> shards{{rows.begin() + a, rows.begin() + b}};
      ledgers.push_back(std::make_unique<PrivacyLedger>(
          PrivacyLedger::Open(Path(tag + "-ledger" + std::to_string(i)),
                              spec.ReportEpsilon() * kRounds)
              .value()));
      clients.push_back(std::make_unique<LdpFlParticipant>(
          LdpFlParticipant::Create(server->spec(), split.train, std::move(shards), *ledgers.back())
              .value()));
      const auto joined = server->Join(tokens[i], 1, Clock::now());
      EXPECT_TRUE(joined.ok()) << joined.status.error();
      sessions.push_back(joined.session);
      clients.back()->SetFirstUser(joined.first);
    }
    for (int pass = 0; pass < 10 * kRounds && !server->stats().finished; ++pass) {
      shuffler.Update(server->RoundInfo(Clock::now()));
      for (int i = 0; i < kClients; ++i) {
        const auto poll = server->PollRound(tokens[i], sessions[i], Clock::now());
        if (poll.round.state != FedSelCoordinator::Poll::State::kRound) continue;
        const std::uint64_t round = poll.round.round;
        auto answer = clients[i]->Respond(round, poll.round.weights, poll.ranges, poll.round.users);
        EXPECT_TRUE(answer.refusals.empty());
        for (auto& [user, pieces] : answer.reports) {
          EXPECT_TRUE(
              shuffler
                  .Shuffle(tokens[i], round, user, std::move(pieces),
                           [&] { return server->Vouch(tokens[i], sessions[i], user, round); })
                  .ok());
        }
      }
      shuffler.Update(server->RoundInfo(Clock::now()));
      while (auto batch = shuffler.TakeBatch()) {
        const auto delivered = server->Deliver(*batch, Clock::now());
        EXPECT_TRUE(delivered.accepted) << delivered.reason;
        EXPECT_EQ(delivered.pieces_rejected, 0u);
      }
    }
    const auto stats = server->stats();
    EXPECT_TRUE(stats.finished);
    EXPECT_EQ(stats.counted, std::uint64_t{kRounds * kClients});
    auto net = NeuralNet::Create(spec.config.arch, 0).value();
    net.SetInputStandardization(spec.input_mean, spec.input_sd);
    const auto w = server->weights();
    net.SetWeights(std::vector<float>(w.begin(), w.end()));
    return net.Accuracy(split.test);
  }

  // MNIST's first kTrainRows training rows, which the clients split.
  static std::vector<std::size_t> TrainRows() {
    std::vector<std::size_t> rows(kTrainRows);
    std::iota(rows.begin(), rows.end(), std::size_t{0});
    return rows;
  }
  // The simulator's final accuracy on the same rows and configuration.
  static double Simulated(const TrainTest& split, std::uint64_t seed) {
    const Dataset train = split.train.Subset(TrainRows());
    return TrainLdpFl(Config(), train, split.test, seed).value().final_accuracy();
  }

  std::vector<std::string> Serve(int port, int rounds, int local_epochs) const {
    return {FEDLDP_BINARY,
            "serve",
            "--protocol",
            "ldpfl",
            "--state",
            Path("server.sqlite"),
            "--address",
            "127.0.0.1:" + std::to_string(port),
            "--users",
            std::to_string(kClients),
            "--data-dir",
            FEDLDP_MNIST_DIR,
            "--rounds",
            std::to_string(rounds),
            "--local-epochs",
            std::to_string(local_epochs),
            "--perturb",
            "updates",
            "--epsilon",
            "5",
            "--train-rows",
            "0:" + std::to_string(kTrainRows),
            "--shuffler-token-file",
            Path("shuffler.token"),
            "--out",
            Path("result.json"),
            "--stale-ms",
            "5000",
            "--deadline-ms",
            "120000"};
  }
  std::vector<std::string> Shuffle(int port) const {
    return {FEDLDP_BINARY,  "shuffle",
            "--server",     "127.0.0.1:" + std::to_string(port),
            "--address",    "127.0.0.1:" + std::to_string(shuffler_port_),
            "--token-file", Path("shuffler.token"),
            "--min-batch",  "10"};
  }
  void Enrol() const {
    const pid_t enrol = Spawn({FEDLDP_BINARY, "enrol", "--state", Path("server.sqlite"), "--count",
                               std::to_string(kClients), "--out", Path("tokens")},
                              Path("enrol.out"), Path("enrol.err"));
    ASSERT_EQ(Wait(enrol), 0) << Read(Path("enrol.err"));
  }
  // The server writes the shuffler's token when it starts.
  void AwaitToken() const {
    const auto start = std::chrono::steady_clock::now();
    while (!std::filesystem::exists(Path("shuffler.token")) &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::vector<pid_t> Clients(int port) const {
    std::ifstream tokens(Path("tokens"));
    std::vector<pid_t> pids;
    for (int i = 1; i <= kClients; ++i) {
      std::string token;
      std::getline(tokens, token);
      const std::string n = std::to_string(i);
      pids.push_back(Spawn(
          {FEDLDP_BINARY, "client", "--server", "127.0.0.1:" + std::to_string(port), "--shuffler",
           "127.0.0.1:" + std::to_string(shuffler_port_), "--token", token, "--dataset", "mnist",
           "--data-dir", FEDLDP_MNIST_DIR, "--rows", "0:" + std::to_string(kTrainRows), "--part",
           n + "/" + std::to_string(kClients), "--ledger", Path("ledger" + n + ".sqlite")},
          Path("client" + n + ".out"), Path("client" + n + ".err")));
    }
    return pids;
  }
  void WaitAll(const std::vector<pid_t>& pids) const {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      EXPECT_EQ(Wait(pids[i]), 0) << Read(Path("client" + std::to_string(i + 1) + ".err"));
    }
  }
  // Two free ports: the server's and the shuffler's.
  void SetUp() override {
    TempDirTest::SetUp();
    server_port_ = FreePort();
    do shuffler_port_ = FreePort();
    while (shuffler_port_ == server_port_);
  }
  int server_port_ = 0, shuffler_port_ = 0;
};

// The protocol, and the process run beside the simulator.
TEST_F(LdpFlE2eTest, TwentyClientsThroughAShufflerKilledMidwayMatchTheSimulator) {
  const int port = server_port_;
  Enrol();
  const pid_t server =
      Spawn(Serve(port, kRounds, kLocalEpochs), Path("serve.out"), Path("serve.err"));
  AwaitToken();
  pid_t shuffler = Spawn(Shuffle(port), Path("shuffle1.out"), Path("shuffle1.err"));
  const auto pids = Clients(port);
  // Kill the shuffler as round 2 opens; start another once clients miss it.
  const auto start = std::chrono::steady_clock::now();
  while (Read(Path("serve.err")).find("round 1 of " + std::to_string(kRounds) + " closed") ==
             std::string::npos &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(shuffler, SIGKILL);
  EXPECT_EQ(Wait(shuffler), 128 + SIGKILL);
  // Down until some client, done training, has found it gone.
  auto clients_log = [&] {
    std::string all;
    for (int i = 1; i <= kClients; ++i) all += Read(Path("client" + std::to_string(i) + ".err"));
    return all;
  };
  const auto down = std::chrono::steady_clock::now();
  while (clients_log().find("unavailable") == std::string::npos &&
         std::chrono::steady_clock::now() - down < std::chrono::seconds(120)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  shuffler = Spawn(Shuffle(port), Path("shuffle2.out"), Path("shuffle2.err"));
  ASSERT_EQ(Wait(server), 0) << Read(Path("serve.err"));
  WaitAll(pids);
  EXPECT_EQ(Wait(shuffler), 0) << Read(Path("shuffle2.err"));
  const std::string json = Read(Path("result.json"));
  const double deployed = JsonNumber(json, "accuracy") / 100;  // the record says percent
  // Nothing lost to the dead shuffler: every user's report of every round.
  EXPECT_EQ(JsonNumber(json, "rounds"), double{kRounds}) << json;
  EXPECT_EQ(JsonNumber(json, "rounds_without_update"), 0.0) << json;
  EXPECT_EQ(JsonNumber(json, "reports_counted"), double{kRounds * kClients})
      << json << Read(Path("serve.err"));
  EXPECT_EQ(JsonNumber(json, "pieces_rejected"), 0.0) << json;
  // What the task spent per user, as the simulator states it: per weight,
  // d eps a report, with the warning such a figure carries.
  const auto privacy = nlohmann::json::parse(json)["privacy"];
  EXPECT_TRUE(testing::IsPrivacyRecord(privacy));
  EXPECT_EQ(privacy["mechanism"], "twopoint") << privacy;
  EXPECT_EQ(privacy["local"]["epsilon"], 21840 * 5.0) << privacy;
  EXPECT_FALSE(privacy["warning"].is_null()) << privacy;
  const std::string clients = clients_log();
  EXPECT_NE(clients.find("unavailable"), std::string::npos)
      << clients;  // they noticed, and retried
  EXPECT_NE(clients.find("reachable again"), std::string::npos) << clients;
  const auto split = LoadImageSplit("mnist", FEDLDP_MNIST_DIR).value();
  const double majority = split.test.MajorityRate();
  if (kSanitized) {
    std::printf("deployed %.4f, majority %.4f (sanitizer build: no simulator run)\n", deployed,
                majority);
    EXPECT_GT(deployed, majority + 0.5) << json;  // 3 rounds reach ~82 %
    return;
  }
  // The simulator, same rows and configuration, seed 1 (92.81 %; seeds 1-6
  // give 92.78-93.35 %, mean 93.04 %). A deployed run's sd is 0.56 points,
  // pooled over 16 runs (0.46 over 10 in-process runs when this test was
  // written; 0.71 over 6, mean 93.14 %, in 2026-12), a seed's 0.29 over 14:
  // this run is held within 4 sd of deployed minus simulated, 4 sqrt(0.56^2
  // + 0.29^2) = 2.5 points. The issue's 1 point is held on means by the
  // long test below.
  const double simulated = Simulated(split, 1);
  const double tolerance = 4 * std::sqrt(0.0056 * 0.0056 + 0.0029 * 0.0029);
  std::printf(
      "\nprocess run %.4f, simulated (seed 1) %.4f, difference %+.2f points, majority %.4f\n",
      deployed, simulated, 100 * (deployed - simulated), majority);
  EXPECT_NEAR(deployed, simulated, tolerance) << json;
  EXPECT_GT(deployed, majority) << json;
}

// Issue 6's 1 point on means: the deployment's own task, coordinator,
// shuffler core and participants (only the network left out) in 6 runs,
// against 3 simulator seeds. About 155 s of CPU, so a long test
// (FEDLDP_LONG_TESTS=1; docs/testing.md). With one run's sd 0.56 points
// (above), the sd of the difference of the means is sqrt(0.56^2 / 6 +
// 0.29^2 / 3) = 0.28 points, so 1 point is 3.6 sd. Seeds 1-3 are fixed
// (93.01 % in 2026-12, 0.03 below seeds 1-6): run then, the 6 deployed
// runs' mean was 93.14 %, +0.13 points.
TEST_F(LdpFlE2eTest, SixDeployedRunsMatchTheSimulatorWithinOnePointOnAverage) {
  if (!testing::LongTests()) GTEST_SKIP() << testing::kLongTestsSkipped;
  const auto split = LoadImageSplit("mnist", FEDLDP_MNIST_DIR).value();
  double simulated = 0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) simulated += Simulated(split, seed) / 3;
  double deployed = 0;
  std::printf("deployed runs:");
  for (int run = 0; run < kDeployedRuns; ++run) {
    const double a = DeployedInProcess(split, TrainRows(), run);
    std::printf(" %.4f", a);
    deployed += a / kDeployedRuns;
  }
  std::printf(
      "\nmean of %d deployed runs %.4f, simulated (mean of 3) %.4f, difference %+.2f points\n",
      kDeployedRuns, deployed, simulated, 100 * (deployed - simulated));
  EXPECT_NEAR(deployed, simulated, 0.01);
}

}  // namespace
}  // namespace fedldp
