// The deployment as separate processes on loopback: `fedldp serve` and 20
// `fedldp client` processes (each hosting a twentieth of Adult's training
// rows, one user per row; the first as a LIBSVM file of its own, the others
// as a part of the dataset) train FedSel, and the result is compared with the
// simulator's TrainFedSel on the same rows; then the server is killed with
// SIGKILL mid-training and restarted, and every report must be in the model
// exactly once.
//
// One deployed run's accuracy varies too much (sd 0.58 points) to be held
// within 1 point of the simulator on its own; the 1-point check is on the
// mean of the process run and 9 more runs of the deployment's own
// coordinator and participants in this process (SecureRng, ledgers, state
// file; only the network left out).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <thread>

#include "fedldp/data/loaders.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/model/linear.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/fedsel_participant.h"
#include "fedldp/store/privacy_ledger.h"
#include "testing/privacy_record.h"
#include "testing/processes.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using namespace testing::processes;

constexpr std::size_t kTrainRows = 32561;  // adult.data; adult.test follows
constexpr int kClients = 20;

class DeployE2eTest : public testing::TempDirTest {
 protected:
  // What `fedldp serve --epsilon 8` and 20 `fedldp client --part i/20`
  // processes run, in this process: the same coordinator, participants,
  // ledgers and state file, each client answering in turn.
  double DeployedInProcess(const Dataset& data, const std::vector<std::size_t>& train,
                           const std::vector<std::size_t>& test, int run) const {
    const std::string tag = "inproc" + std::to_string(run);
    FedSelTaskSpec spec;
    spec.id = tag;
    spec.config.epsilon = 8;
    spec.users = train.size();
    spec.dimension = data.dimension;
    auto state = ServerState::Open(Path(tag + ".sqlite")).value();
    const auto tokens = state.IssueTokens(kClients).value();
    auto c = FedSelCoordinator::Create(spec, {}, std::move(state)).value();
    std::vector<std::unique_ptr<PrivacyLedger>> ledgers;
    std::vector<std::unique_ptr<FedSelParticipant>> parts;
    std::vector<std::string> sessions;
    const auto now = std::chrono::steady_clock::now();
    for (int i = 0; i < kClients; ++i) {
      const std::size_t a = i * train.size() / kClients, b = (i + 1) * train.size() / kClients;
      const std::vector<std::size_t> rows(train.begin() + static_cast<std::ptrdiff_t>(a),
                                          train.begin() + static_cast<std::ptrdiff_t>(b));
      ledgers.push_back(std::make_unique<PrivacyLedger>(
          PrivacyLedger::Open(Path(tag + "-ledger" + std::to_string(i)), 8).value()));
      parts.push_back(std::make_unique<FedSelParticipant>(
          FedSelParticipant::Create(c->spec(), data, rows, *ledgers.back()).value()));
      const auto joined = c->Join(tokens[i], rows.size(), now);
      EXPECT_TRUE(joined.ok()) << joined.status.error();
      sessions.push_back(joined.session);
      parts.back()->SetFirstUser(joined.first);
    }
    for (int pass = 0; pass < 100000 && !c->stats().finished; ++pass) {
      for (int i = 0; i < kClients; ++i) {
        const auto poll = c->PollRound(tokens[i], sessions[i], now);
        if (poll.state != FedSelCoordinator::Poll::State::kRound) continue;
        const auto answer = parts[i]->Respond(poll.round, poll.weights, poll.users);
        EXPECT_TRUE(answer.refusals.empty());
        EXPECT_TRUE(c->Submit(tokens[i], sessions[i], answer.reports, now).ok());
      }
    }
    EXPECT_TRUE(c->stats().finished);
    EXPECT_EQ(c->stats().counted, train.size());
    return LinearModel::Accuracy(c->weights(), data, test);
  }

  // Deadlines long enough for a slow (sanitizer) build to reconnect 20
  // clients after a restart: a round must not close without a live client.
  std::vector<std::string> Serve(int port) const {
    return {FEDLDP_BINARY,   "serve",
            "--state",       Path("server.sqlite"),
            "--address",     "127.0.0.1:" + std::to_string(port),
            "--users",       std::to_string(kTrainRows),
            "--data-dir",    FEDLDP_DATASETS,
            "--variant",     "ps-pm",  // FedSel's own, which the simulator runs beside
            "--epsilon",     "8",
            "--out",         Path("result.json"),
            "--stale-ms",    "5000",
            "--deadline-ms", "60000"};
  }
  // Issues the clients' tokens (the server refuses to start without any).
  void Enrol() const {
    const pid_t enrol = Spawn({FEDLDP_BINARY, "enrol", "--state", Path("server.sqlite"), "--count",
                               std::to_string(kClients), "--out", Path("tokens")},
                              Path("enrol.out"), Path("enrol.err"));
    ASSERT_EQ(Wait(enrol), 0) << Read(Path("enrol.err"));
  }
  // Starts the clients and returns their pids.
  // Starts the clients and returns their pids. Client 1 holds its rows as
  // a file of its own (`--data`, LIBSVM), the others as a part of Adult.
  std::vector<pid_t> Clients(int port) const {
    const Dataset adult = LoadNamed("adult", FEDLDP_DATASETS).value();
    const std::string file = Path("client1.svm");
    {
      std::ofstream svm(file);
      char value[32];
      for (std::size_t r = 0; r < kTrainRows / kClients; ++r) {  // part 1 of 20
        svm << (adult.labels[r] == 1 ? "+1" : "-1");
        const auto row = adult.row(r);
        for (std::size_t j = 0; j < row.size(); ++j) {
          if (row[j] == 0) continue;
          std::snprintf(value, sizeof value, "%.9g", row[j]);  // float's exact round trip
          svm << ' ' << j + 1 << ':' << value;
        }
        svm << '\n';
      }
    }
    std::ifstream tokens(Path("tokens"));
    std::vector<pid_t> pids;
    for (int i = 1; i <= kClients; ++i) {
      std::string token;
      std::getline(tokens, token);
      const std::string n = std::to_string(i);
      std::vector<std::string> local = {"--data", file, "--features",
                                        std::to_string(adult.dimension)};
      if (i > 1) {
        local = {"--data-dir", FEDLDP_DATASETS,
                 "--rows",     "0:" + std::to_string(kTrainRows),
                 "--part",     n + "/" + std::to_string(kClients)};
      }
      std::vector<std::string> command = {
          FEDLDP_BINARY, "client", "--server", "127.0.0.1:" + std::to_string(port),
          "--token",     token,    "--ledger", Path("ledger" + n + ".sqlite")};
      command.insert(command.end(), local.begin(), local.end());
      pids.push_back(Spawn(command, Path("client" + n + ".out"), Path("client" + n + ".err")));
    }
    return pids;
  }
  static int Port() { return FreePort(); }
};

TEST_F(DeployE2eTest, TwentyClientProcessesMatchTheSimulator) {
  const int port = Port();
  Enrol();
  const pid_t server = Spawn(Serve(port), Path("serve.out"), Path("serve.err"));
  const auto pids = Clients(port);
  ASSERT_EQ(Wait(server), 0) << Read(Path("serve.err"));
  for (std::size_t i = 0; i < pids.size(); ++i) {
    EXPECT_EQ(Wait(pids[i]), 0) << Read(Path("client" + std::to_string(i + 1) + ".err"));
  }
  const std::string json = Read(Path("result.json"));
  const double deployed = JsonNumber(json, "accuracy") / 100;  // the record says percent
  EXPECT_EQ(JsonNumber(json, "reports_counted"), static_cast<double>(kTrainRows)) << json;
  EXPECT_TRUE(testing::IsPrivacyRecord(nlohmann::json::parse(json)["privacy"]));
  const std::string first = Read(Path("client1.err"));
  EXPECT_NE(first.find("hosting 1628 users (rows 0..1627 of " + Path("client1.svm")),
            std::string::npos)
      << first;

  // The simulator on the same rows and configuration: the mean of 20 seeds
  // (5 under the sanitizers, where each costs seconds; the bound below
  // widens with fewer).
  const Dataset data = LoadNamed("adult", FEDLDP_DATASETS).value();
  std::vector<std::size_t> train(kTrainRows), test(data.size() - kTrainRows);
  std::iota(train.begin(), train.end(), 0);
  std::iota(test.begin(), test.end(), kTrainRows);
  FedSelConfig config;
  config.epsilon = 8;
  constexpr int kSeeds = FEDLDP_SANITIZED ? 5 : 20;
  double simulated = 0;
  for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
    simulated +=
        LinearModel::Accuracy(TrainFedSel(config, data, train, seed).value().weights, data, test) /
        kSeeds;
  }
  const double majority = data.Subset(test).MajorityRate();
  // One run's accuracy here has sd 0.58 points, measured on 60 runs of the
  // deployment's coordinator and participants (sd 0.577) and 120 simulator
  // seeds (sd 0.555, mean 77.32 % against the deployment's 77.34 %); but it
  // is not normal. On 2,000 simulator seeds (100..2099) it is skewed to the
  // right (skewness 0.78): no run fell more than 0.92 points below the mean,
  // while 0.25 % exceeded it by 3.5 sd (2.07 points; a normal law says
  // 0.02 %), one by 2.46 points. A symmetric bound of 3.5 sd failed once in
  // CI (+2.42 points); resampled from those seeds it fails 0.31 % of runs,
  // a hundred times the 3e-5 it was meant to. So the bound is one-sided, by
  // measurement: below, 3.5 sd of deployed minus simulated,
  // 3.5 x 0.58 x sqrt(1 + 1/20) = 2.1 points (resampled, no difference came
  // within 0.5 points of it); above, 3.5 points, where an exponential fit
  // to the 126 runs more than 1 point above the mean (scale 0.34 points)
  // puts 4e-5 of runs. A deployment that learns less than the simulator
  // fails the first; the mean check below holds both sides to 1 point.
  const double below = 3.5 * 0.0058 * std::sqrt(1.0 + 1.0 / kSeeds), above = 0.035;
  std::printf(
      "deployed %.4f, simulated (mean of %d) %.4f, difference %+.2f points "
      "(-%.2f to +%.2f allowed), majority %.4f\n",
      deployed, kSeeds, simulated, 100 * (deployed - simulated), 100 * below, 100 * above,
      majority);
  EXPECT_GE(deployed, simulated - below) << json;
  EXPECT_LE(deployed, simulated + above) << json;
  EXPECT_GT(deployed, majority) << json;
  // The issue's 1 point, on the mean of this run and 9 in-process runs of
  // the deployment's code: sd sqrt(0.58^2 / 10 + 0.555^2 / 20) = 0.22 points,
  // so 1 point is 4.5 sd (exceeded with probability 7e-6 if the code paths
  // are the same).
  constexpr int kRuns = 10;
  double mean = deployed / kRuns;
  for (int run = 1; run < kRuns; ++run) {
    const double a = DeployedInProcess(data, train, test, run);
    std::printf("in-process deployed run %d: %.4f\n", run, a);
    mean += a / kRuns;
  }
  std::printf("mean of %d deployed runs %.4f, difference %+.2f points (1 point allowed)\n", kRuns,
              mean, 100 * (mean - simulated));
  EXPECT_NEAR(mean, simulated, 0.01);
  EXPECT_GT(mean, majority);
}

TEST_F(DeployE2eTest, AServerKilledMidTrainingResumesAndCountsEveryReportOnce) {
  const int port = Port();
  Enrol();
  pid_t server = Spawn(Serve(port), Path("serve1.out"), Path("serve1.err"));
  const auto pids = Clients(port);
  // Kill it once training is under way.
  const auto start = std::chrono::steady_clock::now();
  while (Read(Path("serve1.err")).find("round ") == std::string::npos &&
         Read(Path("serve1.err")).find("training starts") == std::string::npos &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(server, SIGKILL);
  EXPECT_EQ(Wait(server), 128 + SIGKILL);
  server = Spawn(Serve(port), Path("serve2.out"), Path("serve2.err"));
  ASSERT_EQ(Wait(server), 0) << Read(Path("serve2.err"));
  for (std::size_t i = 0; i < pids.size(); ++i) {
    EXPECT_EQ(Wait(pids[i]), 0) << Read(Path("client" + std::to_string(i + 1) + ".err"));
  }
  const std::string log = Read(Path("serve2.err"));
  EXPECT_NE(log.find("resumed at round"), std::string::npos) << log;
  const std::string json = Read(Path("result.json"));
  EXPECT_EQ(JsonNumber(json, "rounds"), 100.0) << json;
  EXPECT_EQ(JsonNumber(json, "reports_counted"), static_cast<double>(kTrainRows))
      << json << Read(Path("serve1.err")) << log << Read(Path("client1.err"));
}

// Issue 20: a shuffled FedSel task as separate processes: `serve --shuffle`
// (PrivUnitG on Adult's 32,561 training rows, eps 4 per report, one epoch),
// two `fedldp shuffle` processes (issue 44, 6b) and two clients with
// --protocol fedsel --shuffler, one through each. Every report is counted
// once, every batch holds at least --shuffle-batch users, both shufflers
// learn the end, the model beats the majority class, and the privacy
// statement the server logs is, line for line, what `fedldp account run`
// prints for the arguments it names: rounds of 1,200 shuffled reports (each
// shuffler holds about half of a round's 3,256).
TEST_F(DeployE2eTest, AShuffledTaskStatesWhatAccountRunStates) {
  const int port = Port();
  std::vector<int> shuffler_ports;
  while (shuffler_ports.size() < 2) {
    const int p = Port();
    if (p != port && (shuffler_ports.empty() || p != shuffler_ports[0]))
      shuffler_ports.push_back(p);
  }
  Enrol();
  const pid_t server =
      Spawn({FEDLDP_BINARY, "serve", "--state", Path("server.sqlite"), "--address",
             "127.0.0.1:" + std::to_string(port), "--users", std::to_string(kTrainRows),
             "--data-dir", FEDLDP_DATASETS, "--variant", "privunitg", "--shuffle",
             "--shuffler-token-file", Path("shuffler.token"), "--epsilon", "4", "--shuffle-batch",
             "1200", "--out", Path("result.json"), "--stale-ms", "5000",
             // No round may close on its deadline before its
             // reports are in, however slow a sanitizer
             // build under load is.
             "--deadline-ms", "600000"},
            Path("serve.out"), Path("serve.err"));
  const auto start = std::chrono::steady_clock::now();
  while (Read(Path("serve.err")).find("listening on") == std::string::npos &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<pid_t> shufflers;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 1);
    shufflers.push_back(Spawn(
        {FEDLDP_BINARY, "shuffle", "--address", "127.0.0.1:" + std::to_string(shuffler_ports[i]),
         "--server", "127.0.0.1:" + std::to_string(port), "--token-file", Path("shuffler.token")},
        Path("shuffle" + n + ".out"), Path("shuffle" + n + ".err")));
  }
  std::ifstream tokens(Path("tokens"));
  std::vector<pid_t> clients;
  for (int i = 1; i <= 2; ++i) {
    std::string token;
    std::getline(tokens, token);
    const std::string n = std::to_string(i);
    clients.push_back(
        Spawn({FEDLDP_BINARY, "client", "--protocol", "fedsel", "--server",
               "127.0.0.1:" + std::to_string(port), "--shuffler",
               "127.0.0.1:" + std::to_string(shuffler_ports[i - 1]), "--token", token, "--data-dir",
               FEDLDP_DATASETS, "--part", n + "/2", "--ledger", Path("ledger" + n + ".sqlite")},
              Path("client" + n + ".out"), Path("client" + n + ".err")));
  }
  ASSERT_EQ(Wait(server), 0) << Read(Path("serve.err"));
  std::uint64_t forwarded = 0;
  for (int i = 1; i <= 2; ++i) {
    const std::string n = std::to_string(i);
    // Each ends on its own: the server went only once both knew.
    EXPECT_EQ(Wait(shufflers[static_cast<std::size_t>(i - 1)]), 0)
        << Read(Path("shuffle" + n + ".err"));
    const std::string err = Read(Path("shuffle" + n + ".err"));
    for (auto at = err.find("delivered a batch of "); at != std::string::npos;
         at = err.find("delivered a batch of ", at + 1)) {
      EXPECT_GE(std::stoull(err.substr(at + 21)), 1200u) << err;
    }
    const std::string out = Read(Path("shuffle" + n + ".out"));
    const auto users = out.find(" users' reports forwarded");
    ASSERT_NE(users, std::string::npos) << out;
    forwarded += std::stoull(out.substr(out.rfind(' ', users - 1) + 1));
  }
  EXPECT_EQ(forwarded, static_cast<std::uint64_t>(kTrainRows));
  for (int i = 1; i <= 2; ++i) {
    EXPECT_EQ(Wait(clients[static_cast<std::size_t>(i - 1)]), 0)
        << Read(Path("client" + std::to_string(i) + ".err"));
  }
  const std::string json = Read(Path("result.json"));
  EXPECT_EQ(JsonNumber(json, "reports_counted"), static_cast<double>(kTrainRows))
      << json << Read(Path("serve.err"));
  EXPECT_GT(JsonNumber(json, "accuracy"), JsonNumber(json, "majority")) << json;
  // The statement: "privacy (fedldp account run ARGS; ...):" and the lines
  // that follow up to the next log line, against account run's output.
  const std::string log = Read(Path("serve.err"));
  const std::string head = "privacy (fedldp account run ";
  const auto at = log.find(head);
  ASSERT_NE(at, std::string::npos) << log;
  const auto args_end = log.find(';', at);
  const std::string stated_args = log.substr(at + head.size(), args_end - at - head.size());
  // The record states the same run (issue 43, item 4).
  const auto privacy = nlohmann::json::parse(json)["privacy"];
  EXPECT_TRUE(testing::IsPrivacyRecord(privacy));
  EXPECT_EQ(privacy["arguments"], stated_args) << privacy;
  std::istringstream args(stated_args);
  std::vector<std::string> account = {FEDLDP_BINARY, "account", "run"};
  for (std::string a; args >> a;) account.push_back(a);
  const auto body = log.find('\n', at) + 1;
  std::string stated;
  std::istringstream rest(log.substr(body));
  for (std::string line;
       std::getline(rest, line) && (line.rfind("per ", 0) == 0 || line.rfind("  ", 0) == 0);) {
    stated += line + "\n";
  }
  ASSERT_EQ(Wait(Spawn(account, Path("account.out"), Path("account.err"))), 0)
      << Read(Path("account.err"));
  EXPECT_EQ(stated, Read(Path("account.out"))) << log;
  EXPECT_NE(stated.find("shuffled with 1200 reports"), std::string::npos) << stated;
  EXPECT_EQ(privacy["reports_per_round"], 1200) << privacy;
}

// fedldp load: a real server process and 20 clients as threads of the load
// process; every user's report of the epoch is counted, and the figures
// docs/deploying.md quotes are printed.
// Both drivers: the callback one (a few threads run every client's calls)
// and a thread per client running the deployed client's loop.
TEST_F(DeployE2eTest, LoadTestCountsEveryReportOfItsClients) {
  for (const std::string driver : {"callback", "threads"}) {
    SCOPED_TRACE(driver);
    const std::string out = Path(driver + ".json");
    const pid_t load = Spawn({FEDLDP_BINARY, "load", "--driver", driver, "--clients", "20",
                              "--rows", "0:1000", "--epochs", "1", "--data-dir", FEDLDP_DATASETS,
                              "--dir", Path("load-" + driver), "--out", out},
                             Path("load.out"), Path("load.err"));
    ASSERT_EQ(Wait(load), 0) << Read(Path("load.err"))
                             << Read(Path("load-" + driver + "/serve.err"));
    const std::string json = Read(out);
    EXPECT_NE(json.find("\"driver\":\"" + driver + "\""), std::string::npos) << json;
    EXPECT_EQ(JsonNumber(json, "reports"), 1000.0) << json;  // 1,000 users, one epoch
    EXPECT_EQ(JsonNumber(json, "rounds"), 10.0) << json;     // batch fraction 0.1
    EXPECT_EQ(JsonNumber(json, "failed_clients"), 0.0) << json;
    EXPECT_GT(JsonNumber(json, "reports_per_second"), 0.0) << json;
    EXPECT_GT(JsonNumber(json, "server_peak_mib"), 1.0) << json;
    // The server worked during training, and not more than wall time allows
    // on this machine's cores.
    EXPECT_GT(JsonNumber(json, "server_cpu_seconds"), 0.0) << json;
    EXPECT_LT(JsonNumber(json, "server_cpu_seconds"),
              JsonNumber(json, "seconds") * std::thread::hardware_concurrency() + 0.5)
        << json;
    EXPECT_NE(Read(Path("load.out")).find(" reports/s; server peak memory "), std::string::npos)
        << Read(Path("load.out"));
  }
}

// Issue 45, item 4: the bytes a report costs on the wire, for the whole
// gradient as d values (privunitg) and as a 16-byte seed (privunitg-seed),
// which the server decodes; both runs count every report.
TEST_F(DeployE2eTest, LoadTestStatesTheBytesOfAReportAndSeedsAreSixteen) {
  double bytes[2] = {0, 0};
  const char* variants[2] = {"privunitg", "privunitg-seed"};
  for (int i = 0; i < 2; ++i) {
    const std::string out = Path(std::string(variants[i]) + ".json");
    const pid_t load = Spawn({FEDLDP_BINARY, "load", "--variant", variants[i], "--clients", "20",
                              "--rows", "0:1000", "--epochs", "1", "--data-dir", FEDLDP_DATASETS,
                              "--dir", Path(std::string("bytes-") + variants[i]), "--out", out},
                             Path("bytes.out"), Path("bytes.err"));
    ASSERT_EQ(Wait(load), 0) << Read(Path("bytes.err"));
    const std::string json = Read(out);
    EXPECT_EQ(JsonNumber(json, "reports"), 1000.0) << json;
    EXPECT_NE(json.find(std::string("\"variant\":\"") + variants[i] + "\""), std::string::npos);
    bytes[i] = JsonNumber(json, "bytes_per_report");
    EXPECT_NE(Read(Path("bytes.out")).find(" bytes per report"), std::string::npos);
    // The record states the served task's privacy, as serve does: eps 8 a
    // report (privunitg's with its sampler's allowance in delta), one report
    // per user.
    const auto record = nlohmann::json::parse(json.substr(0, json.find('\n')));
    EXPECT_TRUE(testing::IsPrivacyRecord(record["privacy"])) << json;
    EXPECT_EQ(record["privacy"]["mechanism"], variants[i]) << json;
    EXPECT_EQ(record["privacy"]["total"]["epsilon"], 8.0) << json;
    EXPECT_NE(
        Read(Path("bytes.out")).find("load: privacy: " + std::string(variants[i]) + ": eps 8 "),
        std::string::npos)
        << Read(Path("bytes.out"));
  }
  // Adult's gradient: d = 123 doubles and a few bytes of framing; a seed:
  // 16 bytes and the same framing.
  EXPECT_GT(bytes[0], 8 * 123.0);
  EXPECT_GE(bytes[1], 16.0);
  EXPECT_LE(bytes[1], 24.0);
}

// Issue 44, item 6: clients that vanish mid-round (--drop-out), half of
// them with their reports in flight, over more users than rows (--users):
// the server counts every report a client saw accepted and none twice, and
// closes the round once the vanished clients are quiet.
TEST_F(DeployE2eTest, LoadTestWithVanishingClientsLosesAndDoublesNothing) {
  const std::string out = Path("drop.json");
  const pid_t load = Spawn({FEDLDP_BINARY,
                            "load",
                            "--clients",
                            "40",
                            "--rows",
                            "0:500",
                            "--users",
                            "2000",
                            "--enrolled",
                            "100",
                            "--epochs",
                            "1",
                            "--batch-fraction",
                            "1",
                            "--drop-out",
                            "0.3",
                            "--stale-ms",
                            "2000",
                            "--memory-ledgers",
                            "--data-dir",
                            FEDLDP_DATASETS,
                            "--dir",
                            Path("drop"),
                            "--out",
                            out},
                           Path("drop.out"), Path("drop.err"));
  ASSERT_EQ(Wait(load), 0) << Read(Path("drop.err")) << Read(Path("drop/serve.err"));
  const std::string json = Read(out);
  EXPECT_EQ(JsonNumber(json, "users"), 2000.0) << json;
  EXPECT_EQ(JsonNumber(json, "enrolled"), 100.0) << json;
  EXPECT_EQ(JsonNumber(json, "dropped_clients"), 12.0) << json;  // floor(40 * 0.3)
  // 28 clients report their 50 users; of the 12 that vanish, 6 send theirs
  // first: each either seen accepted (the answer beat the cancel) or in flight.
  const double seen = JsonNumber(json, "reports_seen_accepted");
  const double in_flight = JsonNumber(json, "reports_in_flight");
  EXPECT_EQ(seen + in_flight, 28 * 50.0 + 6 * 50) << json;
  EXPECT_GE(seen, 28 * 50.0) << json;
  EXPECT_GE(JsonNumber(json, "reports"), seen) << json;
  EXPECT_LE(JsonNumber(json, "reports"), seen + in_flight) << json;
  EXPECT_LT(JsonNumber(json, "seconds"), 15.0) << json;
  EXPECT_NE(Read(Path("drop.out")).find("nothing lost or counted twice"), std::string::npos)
      << Read(Path("drop.out"));
}

// Stopped mid-run (SIGINT), the callback driver cancels its clients' calls
// in flight, waits for them to come back, and the load test ends at once,
// saying so and keeping its work folder.
TEST_F(DeployE2eTest, AStoppedLoadTestEndsAtOnce) {
  const pid_t load =
      Spawn({FEDLDP_BINARY, "load", "--clients", "50", "--rows", "0:5000", "--epochs", "1000",
             "--data-dir", FEDLDP_DATASETS, "--dir", Path("stopped")},
            Path("stopped.out"), Path("stopped.err"));
  // Running: the server has trained three epochs.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (Read(Path("stopped/serve.err")).find("epoch 3 of 1000 done") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(load, SIGINT);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Wait(load), 1) << Read(Path("stopped.err"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_NE(Read(Path("stopped.err"))
                .find("load: stopped (the server's log and state are kept in " + Path("stopped")),
            std::string::npos)
      << Read(Path("stopped.err"));
}

// A server that fails ends the load test at once with the server's own
// reason; before, its 20 clients retried the dead server until their 120 s
// give-up, and the reason stayed in its log. Here the work folder holds the
// state of another task (one epoch, from a first run), and the server
// refuses to serve a second epoch count on it. A bad option is refused
// before anything starts.
TEST_F(DeployE2eTest, LoadTestReportsAFailedServersReasonAtOnce) {
  const std::vector<std::string> base = {
      FEDLDP_BINARY, "load",       "--clients",     "20",    "--rows",
      "0:1000",      "--data-dir", FEDLDP_DATASETS, "--dir", Path("reused")};
  auto first = base;
  first.insert(first.end(), {"--epochs", "1"});
  ASSERT_EQ(Wait(Spawn(first, Path("first.out"), Path("first.err"))), 0) << Read(Path("first.err"));
  const auto start = std::chrono::steady_clock::now();
  auto second = base;
  second.insert(second.end(), {"--epochs", "2"});
  EXPECT_EQ(Wait(Spawn(second, Path("failing.out"), Path("failing.err"))), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  const std::string said = Read(Path("failing.err"));
  EXPECT_NE(said.find("load: the server failed (status 256): "), std::string::npos) << said;
  EXPECT_NE(said.find("another task"), std::string::npos) << said;
  EXPECT_NE(said.find("kept in " + Path("reused")), std::string::npos) << said;
  auto bad = base;
  bad.insert(bad.end(), {"--batch-fraction", "0"});
  EXPECT_EQ(Wait(Spawn(bad, Path("bad.out"), Path("bad.err"))), 2);
  EXPECT_NE(Read(Path("bad.err")).find("batch fraction must be in (0, 1]"), std::string::npos)
      << Read(Path("bad.err"));
}

// A client that fails stops the load run at once, with its reason: the run
// can no longer be measured as asked, and a client that failed before it
// joined left the server waiting for its users without end (this test's
// neighbour once stalled 20 minutes saying "4 failed" every 5 s). Here
// client 3's ledger is a folder.
TEST_F(DeployE2eTest, LoadTestStopsAtAClientsFailureWithItsReason) {
  std::filesystem::create_directories(Path("failing/ledger3.sqlite"));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Wait(Spawn({FEDLDP_BINARY, "load", "--clients", "20", "--rows", "0:1000", "--data-dir",
                        FEDLDP_DATASETS, "--dir", Path("failing"), "--epochs", "1"},
                       Path("load.out"), Path("load.err"))),
            1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  const std::string said = Read(Path("load.err"));
  EXPECT_NE(said.find("a client failed, so the run stopped: privacy ledger"), std::string::npos)
      << said;
  EXPECT_NE(said.find("is a folder"), std::string::npos) << said;
}

}  // namespace
}  // namespace fedldp
