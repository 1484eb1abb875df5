// `fedldp serve` as the library runs it (net/serve.h): in process, on
// loopback, with clients, a shuffler and a stop token of the test's own.
#include "fedldp/net/serve.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <thread>

#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/net/monitor.h"
#include "fedldp/net/services.h"
#include "fedldp/store/server_state.h"
#include "load_clients.h"
#include "testing/processes.h"
#include "testing/prometheus.h"
#include "testing/synthetic.h"
#include "testing/temp_dir.h"
#include "testing/torchscript.h"

namespace fedldp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The port a server thread listens on, once it does.
class PortBox {
 public:
  void Set(int port) {
    std::lock_guard lock(mu_);
    port_ = port;
    cv_.notify_all();
  }
  int Wait() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 60s, [&] { return port_ != 0; });
    return port_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int port_ = 0;
};

std::string Local(int port) { return "127.0.0.1:" + std::to_string(port); }

class ServeTest : public testing::TempDirTest {
 protected:
  FedSelServeConfig FedSel() {
    FedSelServeConfig c;
    c.serve.state = Path("server.sqlite");
    c.serve.address = "127.0.0.1:0";
    c.serve.task = "serve-test";
    c.serve.users = data_.size();
    c.serve.policy.retry = 5ms;
    c.config = DefaultFedSelConfig(ParseFedSelVariant("ps-pm").value());
    c.config.tail_average = 0;
    c.config.epsilon = 8;
    c.config.epochs = 2;
    c.config.batch_fraction = 0.05;  // 20 rounds per epoch
    return c;
  }
  // Three epochs of 20 rounds whose rounds would wait 3 s for a quiet
  // client: a wait shows in their time.
  FedSelServeConfig PatientFedSel() {
    FedSelServeConfig c = FedSel();
    c.config.epochs = 3;
    c.serve.policy.stale_after = 3s;
    c.serve.policy.deadline = 60s;
    return c;
  }
  ServeObserver Observer(PortBox& port) {
    ServeObserver o;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(log_mu_);
      log_ += line + "\n";
    };
    o.privacy = [this](const std::string& statement) {
      std::lock_guard lock(log_mu_);
      privacy_ += statement;
    };
    o.listening = [&port](int p) { port.Set(p); };
    return o;
  }
  std::string Log() {
    std::lock_guard lock(log_mu_);
    return log_;
  }
  // Client `i` of a FedSel task served on `port`, hosting `count` users
  // from row count * i; its ledger is its own.
  Result<FedSelClientSummary> FedSelClient(int port, const std::string& token, std::size_t i,
                                           std::size_t count, std::stop_token stop = {}) {
    FedSelClientOptions o;
    o.address = Local(port);
    o.token = token;
    o.ledger = Path("ledger" + std::to_string(i));
    std::vector<std::size_t> rows(count);
    std::iota(rows.begin(), rows.end(), count * i);
    return RunFedSelClient(o, data_, rows, stop);
  }

  // Two load-test clients of 200 users each, with their tokens issued.
  std::vector<net_internal::LoadClientSpec> TwoLoadClients() {
    const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(2).value();
    std::vector<net_internal::LoadClientSpec> specs(2);
    for (std::size_t i = 0; i < 2; ++i) {
      specs[i].token = tokens[i];
      specs[i].rows.resize(200);
      std::iota(specs[i].rows.begin(), specs[i].rows.end(), 200 * i);
    }
    return specs;
  }

  const Dataset data_ = testing::SmallSynthetic(400);
  std::mutex log_mu_;
  std::string log_, privacy_;
};

TEST_F(ServeTest, AConfigItCannotServeIsRefusedBeforeAnyFileIsMade) {
  const auto refused = [&](const FedSelServeConfig& c, const char* words) {
    const Status why = c.Validate();
    EXPECT_EQ(why.code(), ErrorCode::kInvalidArgument) << words;
    EXPECT_NE(why.error().find(words), std::string::npos) << why.error();
    const auto served = ServeFedSel(c, data_, {});
    ASSERT_FALSE(served.ok());
    EXPECT_EQ(served.error(), why.error());
  };
  EXPECT_TRUE(FedSel().Validate().ok());
  FedSelServeConfig c = FedSel();
  c.serve.state.clear();
  refused(c, "state file");
  c = FedSel();
  c.serve.users = 0;
  refused(c, "users must be a whole number from 1");
  c.serve.users = std::uint64_t{1} << 41;
  refused(c, "users must be a whole number from 1 to 1099511627776");
  c = FedSel();
  c.serve.threads = 0;
  refused(c, "threads must be a whole number from 1 to 256");
  c = FedSel();
  c.config.tail_average = 0.5;
  refused(c, "last iterate");
  c = FedSel();
  c.config.server.kind = ServerOptimizerKind::kMomentum;
  refused(c, "steps by the round's mean");
  c = FedSel();
  c.config.server.learning_rate = 2;
  refused(c, "steps by the round's mean");
  c = FedSel();
  c.config.shuffle = true;
  refused(c, "shuffler's token file");
  c.serve.shuffler_token_file = Path("token");
  c.config.sample_clients = true;
  refused(c, "--sample-clients");
  c = FedSel();
  c.serve.key_file = Path("key");
  refused(c, "go with a shuffled task");
  c = FedSel();
  c.serve.tls.certificate = Path("cert.pem");
  refused(c, "go together");
  c = FedSel();
  c.central_delta = 1;
  refused(c, "central delta");
  // The task itself (FedSelCoordinator::Check): 401 users of 400 rows is
  // fine for the config, but a variant it cannot serve is not: here parts
  // that make no variant (a flat solution with -c).
  c = FedSel();
  c.config.variant = ParseFedSelVariant("pm").value();
  c.config.variant.control = true;
  const auto served = ServeFedSel(c, data_, {});
  ASSERT_FALSE(served.ok());
  EXPECT_EQ(served.code(), ErrorCode::kInvalidArgument);
  for (const char* file : {"server.sqlite", "token", "key", "key.pub", "server.sqlite.key"}) {
    EXPECT_FALSE(std::filesystem::exists(Path(file))) << file;
  }
  // A valid task, but no state file (enrol makes it): said, and no file is
  // made.
  const auto nobody = ServeFedSel(FedSel(), data_, {});
  ASSERT_FALSE(nobody.ok());
  EXPECT_EQ(nobody.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(nobody.error().find("no client is enrolled"), std::string::npos) << nobody.error();
  EXPECT_FALSE(std::filesystem::exists(Path("server.sqlite")));
}

// Issue 41, item 7: a refused serve writes nothing, whatever refuses it
// after the options: no enrolled client in the state, a token file that
// cannot be made beside a key pair that could, another task bound. So the
// corrected command is not refused as "another task" and no secret is left
// behind; then it serves, and makes its key pair and token once.
TEST_F(ServeTest, ARefusedServeWritesNothingAndTheCorrectedCommandServes) {
  const auto files = [&] {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(Path(""))) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  { auto empty = ServerState::Open(Path("server.sqlite")).value(); }  // enrolled: nobody
  FedSelServeConfig c = FedSel();
  c.config = DefaultFedSelConfig(ParseFedSelVariant("privunitg").value());
  c.config.tail_average = 0;
  c.config.shuffle = true;
  c.serve.shuffler_token_file = Path("shuffler.token");
  const auto before = files();
  const auto nobody = ServeFedSel(c, data_, {});
  ASSERT_FALSE(nobody.ok());
  EXPECT_NE(nobody.error().find("no client is enrolled"), std::string::npos) << nobody.error();
  EXPECT_EQ(files(), before);
  ASSERT_TRUE(ServerState::Open(Path("server.sqlite")).value().IssueTokens(1).ok());
  const auto enrolled = files();
  FedSelServeConfig unwritable = c;
  unwritable.serve.shuffler_token_file = Path("missing/shuffler.token");
  const auto no_token = ServeFedSel(unwritable, data_, {});
  ASSERT_FALSE(no_token.ok());
  EXPECT_NE(no_token.error().find("missing"), std::string::npos) << no_token.error();
  EXPECT_EQ(files(), enrolled);  // no key pair either
  // The corrected command serves (a stop ends it as it waits for its user).
  std::stop_source stop;
  PortBox port;
  std::optional<Result<ServeSummary>> served;
  std::thread server([&] { served = ServeFedSel(c, data_, {}, Observer(port), stop.get_token()); });
  EXPECT_GT(port.Wait(), 0);
  stop.request_stop();
  server.join();
  ASSERT_TRUE(served && served->ok()) << (served ? served->error() : "no summary");
  const auto serving = files();
  // Another configuration on this state is refused, and leaves it as it was.
  FedSelServeConfig other = c;
  other.config.epochs = 2;
  other.serve.key_file = Path("other.key");
  other.serve.shuffler_token_file = Path("other.token");
  const auto refused = ServeFedSel(other, data_, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("another task"), std::string::npos) << refused.error();
  EXPECT_EQ(files(), serving);
}

// A client's options are checked before it dials anyone: no server runs
// here, and each refusal is immediate and names what is missing.
TEST_F(ServeTest, AClientsOptionsAreCheckedBeforeItConnects) {
  FedSelClientOptions o;
  o.address = "127.0.0.1:1";
  o.token = "t";
  o.ledger = Path("ledger");
  EXPECT_TRUE(o.Validate().ok());
  const auto refused = [&](const FedSelClientOptions& bad, const char* words) {
    const auto r = RunFedSelClient(bad, data_, {0});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().find(words), std::string::npos) << r.error();
    LdpFlClientOptions l;
    static_cast<FedSelClientOptions&>(l) = bad;
    const auto lr = RunLdpFlClient(l, data_, {{0}});
    ASSERT_FALSE(lr.ok());
    EXPECT_EQ(lr.error(), r.error());
  };
  FedSelClientOptions bad = o;
  bad.token.clear();
  refused(bad, "token");
  bad = o;
  bad.ledger.clear();
  refused(bad, "ledger");
  bad = o;
  bad.budget = -1;
  refused(bad, "budget");
  bad = o;
  bad.give_up = std::chrono::milliseconds(0);
  refused(bad, "give_up");
  EXPECT_FALSE(std::filesystem::exists(Path("ledger")));
}

// An LDP-FL client that cannot load Torch says so before it connects: it
// would otherwise join, count toward the roster, and leave its rounds empty.
TEST_F(ServeTest, AnLdpFlClientWithoutTorchFailsBeforeItConnects) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("FEDLDP_TORCH_PLUGIN", "/nonexistent/libfedldp_torch.so", 1);
        LdpFlClientOptions o;
        o.address = "127.0.0.1:1";  // nothing listens: a connection attempt would retry
        o.token = "t";
        o.ledger = Path("ledger");
        o.give_up = std::chrono::seconds(1);
        const auto r = RunLdpFlClient(o, data_, {{0}});
        std::fprintf(stderr, "%s\n", r.ok() ? "ran" : r.error().c_str());
        std::exit(!r.ok() && !std::filesystem::exists(Path("ledger")) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "plugin libfedldp_torch.so: not found");
}

// The whole FedSel task through ServeFedSel: two clients train it to the
// end, every epoch's model is evaluated, and the summary counts every report
// once; the same call on the finished state says so at once.
TEST_F(ServeTest, FedSelClientsTrainToTheEndAndTheSummaryCountsEveryReport) {
  const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(2).value();
  PortBox port;
  std::optional<Result<ServeSummary>> served;
  std::thread server([&] { served = ServeFedSel(FedSel(), data_, {}, Observer(port)); });
  const int p = port.Wait();
  ASSERT_GT(p, 0);
  std::vector<std::thread> clients;
  std::vector<Result<FedSelClientSummary>> results(2, Error{"not run"});
  for (std::size_t i = 0; i < 2; ++i) {
    clients.emplace_back([&, i] { results[i] = FedSelClient(p, tokens[i], i, 200); });
  }
  for (auto& t : clients) t.join();
  server.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->reports, 400u);  // 200 users, 2 epochs
  }
  ASSERT_TRUE(served && served->ok()) << (served ? served->error() : "no summary");
  const ServeSummary& s = **served;
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.rounds, 40u);
  EXPECT_EQ(s.reports_counted, 800u);
  EXPECT_EQ(s.accepted_here, 800u);
  EXPECT_DOUBLE_EQ(s.majority, data_.MajorityRate());
  EXPECT_GT(s.accuracy, s.majority + 0.05);
  EXPECT_GT(s.training_seconds, 0);
  const std::string log = Log();
  EXPECT_NE(log.find("listening on 127.0.0.1:" + std::to_string(p)), std::string::npos) << log;
  EXPECT_NE(log.find("epoch 1: accuracy"), std::string::npos) << log;
  EXPECT_NE(log.find("epoch 2: accuracy"), std::string::npos) << log;

  PortBox again;
  const auto resumed = ServeFedSel(FedSel(), data_, {}, Observer(again));
  ASSERT_TRUE(resumed.ok()) << resumed.error();
  EXPECT_TRUE(resumed->finished);
  EXPECT_EQ(resumed->reports_counted, 800u);
  EXPECT_EQ(resumed->accepted_here, 0u);
  EXPECT_DOUBLE_EQ(resumed->accuracy, s.accuracy);
}

// The load test's callback clients join as deployed clients do: a server
// they cannot reach yet is retried, not taken for a failed client. (CI, an
// ASan build: one of `fedldp load`'s 20 clients had its first connection
// time out "before receiving SETTINGS frame" and the run stopped at once.)
// Here the clients start 1.5 s before the server listens; a stop ends
// clients still joining as stopped, not failed.
TEST_F(ServeTest, LoadClientsRetryAServerThatIsNotListeningYet) {
  const std::vector<net_internal::LoadClientSpec> specs = TwoLoadClients();
  const int port = testing::processes::FreePort();
  net_internal::LoadClientsProgress progress;
  std::jthread clients(
      [&] { net_internal::RunCallbackClients(Local(port), data_, specs, progress, {}); });
  std::this_thread::sleep_for(1500ms);
  ASSERT_EQ(progress.failed.load(), 0u) << progress.first_error;  // else no one joins
  FedSelServeConfig c = FedSel();
  c.serve.address = Local(port);
  PortBox box;
  const auto served = ServeFedSel(c, data_, {}, Observer(box));
  clients.join();
  ASSERT_TRUE(served.ok()) << served.error();
  EXPECT_EQ(served->reports_counted, 800u);
  EXPECT_EQ(progress.failed.load(), 0u) << progress.first_error;
  EXPECT_EQ(progress.finished.load(), 2u);
  EXPECT_EQ(progress.accepted.load(), 800u);
  // Nobody listening, then a stop: the clients end stopped, at once.
  net_internal::LoadClientsProgress nowhere;
  std::stop_source stop;
  const auto start = Clock::now();
  std::jthread lost([&] {
    net_internal::RunCallbackClients(Local(testing::processes::FreePort()), data_, specs, nowhere,
                                     stop.get_token());
  });
  std::this_thread::sleep_for(1000ms);
  stop.request_stop();
  lost.join();
  EXPECT_LT(Clock::now() - start, 6s);
  EXPECT_EQ(nowhere.failed.load(), 0u) << nowhere.first_error;
  EXPECT_EQ(nowhere.finished.load(), 0u);
}

// The load test's clients ride out what deployed clients ride out: the
// server stopped mid-run (its held polls cancelled, then nobody listening)
// and started again on its state, which forgets the sessions. Before, one
// failed poll ended a client, and the run with it. Nothing is lost or
// counted twice: every report accepted once, the server counting 800.
TEST_F(ServeTest, LoadClientsRideOutAServerRestart) {
  const std::vector<net_internal::LoadClientSpec> specs = TwoLoadClients();
  const int port = testing::processes::FreePort();
  net_internal::LoadClientsProgress progress;
  std::jthread clients(
      [&] { net_internal::RunCallbackClients(Local(port), data_, specs, progress, {}); });
  FedSelServeConfig c = FedSel();
  c.serve.address = Local(port);
  std::stop_source stop;
  PortBox box;
  ServeObserver o = Observer(box);
  o.log = [&, log = o.log](const std::string& line) {
    log(line);
    if (line.starts_with("epoch 1: accuracy")) stop.request_stop();
  };
  const auto first = ServeFedSel(c, data_, {}, o, stop.get_token());
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_FALSE(first->finished);
  std::this_thread::sleep_for(1500ms);  // the clients find nobody listening
  EXPECT_EQ(progress.failed.load(), 0u) << progress.first_error;
  PortBox again;
  const auto resumed = ServeFedSel(c, data_, {}, Observer(again));
  clients.join();
  ASSERT_TRUE(resumed.ok()) << resumed.error();
  EXPECT_TRUE(resumed->finished);
  EXPECT_EQ(resumed->reports_counted, 800u);
  EXPECT_EQ(first->accepted_here + resumed->accepted_here, 800u);
  EXPECT_EQ(progress.failed.load(), 0u) << progress.first_error;
  EXPECT_EQ(progress.finished.load(), 2u);
  EXPECT_EQ(progress.accepted.load(), 800u);
  EXPECT_GT(progress.retries.load(), 0u);
  EXPECT_NE(Log().find("resumed at round"), std::string::npos) << Log();
}

// Issue 44, item 2: a client stopped cleanly tells the server, and the
// rounds after it take about as long as those before: none waits
// --stale-ms for its users (as every round holding one of them did).
TEST_F(ServeTest, AClientStoppedCleanlyIsNotWaitedFor) {
  const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(4).value();
  FedSelServeConfig c = PatientFedSel();
  PortBox port;
  std::mutex mu;
  std::vector<Clock::time_point> epochs;  // when each epoch's accuracy was said
  Clock::time_point all_joined{};
  ServeObserver o = Observer(port);
  o.log = [&, log = o.log](const std::string& line) {
    log(line);
    std::lock_guard lock(mu);
    if (line.find("(400 of 400)") != std::string::npos) all_joined = Clock::now();
    if (line.starts_with("epoch ") && line.find(": accuracy") != std::string::npos) {
      epochs.push_back(Clock::now());
    }
  };
  std::optional<Result<ServeSummary>> served;
  std::thread server([&] { served = ServeFedSel(c, data_, {}, o); });
  const int p = port.Wait();
  std::stop_source stop_last;
  std::vector<std::thread> clients;
  std::vector<Result<FedSelClientSummary>> results(4, Error{"not run"});
  for (std::size_t i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      results[i] =
          FedSelClient(p, tokens[i], i, 100, i == 3 ? stop_last.get_token() : std::stop_token());
    });
  }
  while ([&] {
    std::lock_guard lock(mu);
    return epochs.empty();
  }()) {
    std::this_thread::sleep_for(5ms);
  }
  stop_last.request_stop();  // the operator stops one client after the first epoch
  for (auto& t : clients) t.join();
  server.join();
  ASSERT_TRUE(served && served->ok()) << (served ? served->error() : "no summary");
  EXPECT_TRUE((*served)->finished);
  ASSERT_TRUE(results[3].ok()) << results[3].error();
  EXPECT_FALSE(results[3]->finished);
  const std::string log = Log();
  EXPECT_NE(log.find("99 stopped; no round waits for its users until it joins again"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("went quiet"), std::string::npos) << log;
  ASSERT_EQ(epochs.size(), 3u);
  // 20 rounds an epoch, 15 or so of them holding the stopped client's users:
  // waiting 3 s for them would take 45 s an epoch.
  const auto before = epochs[0] - all_joined, after = (epochs[2] - epochs[0]) / 2;
  EXPECT_LT(after, 2s) << log;
  EXPECT_LT(after, 3 * before + 500ms) << log;
}

// Issue 44, item 2: --min-users starts training with the users who are
// there; a client joining later takes part from then on, and no round waits
// for users whose client never joined.
TEST_F(ServeTest, MinUsersStartsWithWhoIsThereAndLaterJoinersTakePart) {
  const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(4).value();
  FedSelServeConfig c = PatientFedSel();
  c.serve.policy.min_users = 200;
  PortBox port;
  std::atomic<int> epochs_said{0};
  ServeObserver o = Observer(port);
  o.log = [&, log = o.log](const std::string& line) {
    log(line);
    if (line.starts_with("epoch ") && line.find(": accuracy") != std::string::npos) ++epochs_said;
  };
  std::optional<Result<ServeSummary>> served;
  const auto started = Clock::now();
  std::thread server([&] { served = ServeFedSel(c, data_, {}, o); });
  const int p = port.Wait();
  const auto client = [&](std::size_t i) { return FedSelClient(p, tokens[i], i, 100); };
  std::vector<Result<FedSelClientSummary>> results(3, Error{"not run"});
  std::thread first([&] { results[0] = client(0); }), second([&] { results[1] = client(1); });
  while (epochs_said == 0) std::this_thread::sleep_for(5ms);
  std::thread late([&] { results[2] = client(2); });  // after the first epoch
  first.join(), second.join(), late.join();
  server.join();
  ASSERT_TRUE(served && served->ok()) << (served ? served->error() : "no summary");
  const ServeSummary& s = **served;
  EXPECT_TRUE(s.finished);
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(results[0]->reports, 300u);  // 100 users, 3 epochs
  EXPECT_EQ(results[1]->reports, 300u);
  EXPECT_GE(results[2]->reports, 100u);  // at least the last epoch
  EXPECT_LE(results[2]->reports, 200u);
  EXPECT_EQ(s.reports_counted, 600u + results[2]->reports);
  const std::string log = Log();
  EXPECT_NE(log.find("training starts with 200 of 400 users joined (--min-users 200)"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("went quiet"), std::string::npos) << log;
  EXPECT_EQ(log.find("deadline"), std::string::npos) << log;
  EXPECT_LT(Clock::now() - started, 30s) << log;

  FedSelServeConfig bad = FedSel();
  bad.serve.policy.min_users = 401;
  EXPECT_NE(bad.Validate().error().find("exceeds the task's 400 users"), std::string::npos);
  bad.serve.policy.min_users = 10;
  bad.config = DefaultFedSelConfig(ParseFedSelVariant("privunitg").value());
  bad.config.tail_average = 0;
  bad.config.shuffle = true;
  bad.serve.shuffler_token_file = Path("t");
  EXPECT_NE(bad.Validate().error().find("--min-users with a shuffled task"), std::string::npos);
}

// A FedSel task served with --monitor: read while its second epoch's model
// is evaluated, the metrics say the round, the users, the reports, each
// user's budget spent and the statement the server stated; the page and
// the JSON say the same.
TEST_F(ServeTest, ItsMonitorShowsTheRoundUsersReportsAndPrivacy) {
  const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(2).value();
  FedSelServeConfig c = PatientFedSel();
  c.serve.monitor = "127.0.0.1:0";
  std::mutex mu;
  std::condition_variable listening;
  int port = 0, monitor = 0;
  std::string metrics, page, json, first_accuracy;
  ServeObserver o;
  o.listening = [&](int p) {
    std::lock_guard lock(mu);
    port = p;
    listening.notify_all();
  };
  o.monitoring = [&](int p) {
    std::lock_guard lock(mu);
    monitor = p;
    listening.notify_all();
  };
  o.log = [&](const std::string& line) {
    if (line.starts_with("epoch 1: accuracy "))
      first_accuracy = line.substr(18, line.find(' ', 18) - 18);
    if (!line.starts_with("epoch 2: accuracy")) return;
    httplib::Client http("127.0.0.1", monitor);
    metrics = http.Get("/metrics")->body;
    page = http.Get("/")->body;
    json = http.Get("/status.json")->body;
  };
  std::optional<Result<ServeSummary>> served;
  std::thread server([&] {
    served = ServeFedSel(c, data_, {}, o);
    std::lock_guard lock(mu);
    port = -1;  // ended: wait no more
    listening.notify_all();
  });
  {
    std::unique_lock lock(mu);
    listening.wait_for(lock, 60s, [&] { return port != 0 && monitor != 0; });
  }
  if (monitor <= 0) {
    server.join();
    FAIL() << (served && !served->ok() ? served->error() : "the monitor did not start");
  }
  {  // before anyone joined
    httplib::Client http("127.0.0.1", monitor);
    const auto waiting = testing::ParseMetrics(http.Get("/metrics")->body);
    EXPECT_EQ(waiting.at("fedldp_started{task=\"serve-test\"}"), 0);
    EXPECT_EQ(waiting.at("fedldp_users{task=\"serve-test\",state=\"joined\"}"), 0);
    EXPECT_EQ(waiting.at("fedldp_tokens{task=\"serve-test\"}"), 2);
    EXPECT_NE(http.Get("/")->body.find("waiting for users"), std::string::npos);
  }
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < 2; ++i) {
    clients.emplace_back([&, i] {
      FedSelClientOptions f;
      f.address = "127.0.0.1:" + std::to_string(port);
      f.token = tokens[i];
      f.ledger = Path("ledger" + std::to_string(i));
      std::vector<std::size_t> rows(200);
      std::iota(rows.begin(), rows.end(), 200 * i);
      EXPECT_TRUE(RunFedSelClient(f, data_, rows).ok());
    });
  }
  for (auto& t : clients) t.join();
  server.join();
  ASSERT_TRUE(served && served->ok());
  const auto m = testing::ParseMetrics(metrics);
  const std::string task = "task=\"serve-test\"";
  const auto at = [&](const std::string& name, const std::string& labels = "") {
    return m.at(name + "{" + task + (labels.empty() ? "" : "," + labels) + "}");
  };
  EXPECT_EQ(at("fedldp_started"), 1);
  EXPECT_GE(at("fedldp_rounds_closed"), 40);
  EXPECT_EQ(at("fedldp_rounds"), 60);
  EXPECT_EQ(at("fedldp_users", "state=\"joined\""), 400);
  EXPECT_EQ(at("fedldp_users", "state=\"active\""), 400);
  EXPECT_EQ(at("fedldp_sessions"), 2);
  EXPECT_GE(at("fedldp_reports_counted_total"), 800);
  // Every user has had 2 or 3 reports received: none 1 or fewer.
  const double eps = (*served)->privacy->local.epsilon;
  EXPECT_EQ(at("fedldp_budget_spent_epsilon_bucket", "le=\"" + PrometheusNumber(eps) + "\""), 0);
  EXPECT_EQ(at("fedldp_budget_spent_epsilon_count"), 400);
  EXPECT_GE(at("fedldp_budget_spent_epsilon_sum"), 800 * eps * (1 - 1e-12));
  EXPECT_NEAR(at("fedldp_privacy_epsilon", "scope=\"total\""), (*served)->privacy->total.epsilon,
              1e-9);
  EXPECT_NEAR(100 * at("fedldp_accuracy"), std::stod(first_accuracy), 0.005);
  EXPECT_GT(at("fedldp_round_duration_seconds"), 0);
  EXPECT_NE(page.find("serve-test (fedsel): training"), std::string::npos) << page;
  EXPECT_NE(page.find("400 of 400 joined"), std::string::npos) << page;
  EXPECT_NE(page.find("per user in total"), std::string::npos) << page;
  EXPECT_EQ(nlohmann::json::parse(json)["users"]["joined"], 400);
}

// A stop while the server waits for its users ends the call with a summary
// that is not finished; the state keeps the task, and a shuffled task's
// key pair and token, made on the first call, are the ones the second uses.
TEST_F(ServeTest, AStopEndsTheServerAndTheSameConfigResumes) {
  ASSERT_TRUE(ServerState::Open(Path("server.sqlite")).value().IssueTokens(1).ok());
  FedSelServeConfig c = FedSel();
  c.config = DefaultFedSelConfig(ParseFedSelVariant("privunitg").value());
  c.config.tail_average = 0;
  c.config.shuffle = true;
  c.serve.shuffler_token_file = Path("shuffler.token");
  for (int start = 0; start < 2; ++start) {
    std::stop_source stop;
    PortBox port;
    std::optional<Result<ServeSummary>> served;
    std::thread server(
        [&] { served = ServeFedSel(c, data_, {}, Observer(port), stop.get_token()); });
    EXPECT_GT(port.Wait(), 0);
    stop.request_stop();
    server.join();
    ASSERT_TRUE(served && served->ok()) << (served ? served->error() : "no summary");
    EXPECT_FALSE((*served)->finished);
    EXPECT_EQ((*served)->rounds, 0u);
    EXPECT_NE(privacy_.find("fedldp account run"), std::string::npos) << privacy_;
    const std::string log = Log();
    const auto created = [&](const char* words) {
      std::size_t n = 0;
      for (auto at = log.find(words); at != std::string::npos; at = log.find(words, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(created("created the server's key pair"), 1u) << log;
    EXPECT_EQ(created("created the shuffler's token"), 1u) << log;
    EXPECT_EQ(created("start again to resume"), static_cast<std::size_t>(start + 1)) << log;
  }
  EXPECT_TRUE(std::filesystem::exists(Path("server.sqlite.key.pub")));
  // Another task on this state is refused.
  c.config.epochs = 2;
  const auto other = ServeFedSel(c, data_, {});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.code(), ErrorCode::kInvalidArgument);
}

// An LDP-FL task of 4 users on 2 clients (2 users, 30 rows each), served
// through ServeLdpFl: clients -> shuffler (RunShuffler) -> server, to the
// end. `tokens`: the state file's, issued before.
struct LdpFlServed {
  std::optional<Result<ServeSummary>> served;
  std::optional<Result<ShufflerSummary>> shuffled;
  std::vector<Result<FedSelClientSummary>> clients;
};

LdpFlServeConfig LdpFlServe(const std::string& state) {
  LdpFlServeConfig c;
  c.serve.state = state;
  c.serve.address = "127.0.0.1:0";
  c.serve.task = "serve-ldpfl";
  c.serve.users = 4;
  c.serve.policy.deadline = 60s;
  c.serve.policy.stale_after = 1s;
  c.serve.policy.retry = 5ms;
  c.serve.shuffler_token_file = state + ".shuffler-token";
  c.config.rounds = 2;
  c.config.perturb_updates = true;
  c.config.fixed_range = {0, 0.075};
  c.chunk = 4096;
  return c;
}

class ServeLdpFlTest : public ServeTest {
 protected:
  LdpFlServed Run(const LdpFlServeConfig& c, const std::vector<std::string>& tokens) {
    LdpFlServed out;
    PortBox port;
    std::thread server([&] { out.served = ServeLdpFl(c, train_, {}, test_, Observer(port)); });
    const int p = port.Wait();
    EXPECT_GT(p, 0);
    ShufflerServerOptions s;
    s.address = "127.0.0.1:0";
    s.server = Local(p);
    s.shuffler_token = ReadTokenFile(c.serve.shuffler_token_file).value();
    std::stop_source shuffler_stop;
    PortBox shuffler_port;
    s.log = [&](const std::string& line) {
      const std::string listening = "listening on 127.0.0.1:";
      if (const auto at = line.find(listening); at != std::string::npos) {
        shuffler_port.Set(std::stoi(line.substr(at + listening.size())));
      }
    };
    std::thread shuffler(
        [&] { out.shuffled = RunShuffler(s, {.min_batch = 2}, shuffler_stop.get_token()); });
    const int sp = shuffler_port.Wait();
    EXPECT_GT(sp, 0);
    out.clients.assign(2, Error{"not run"});
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < 2; ++i) {
      clients.emplace_back([&, i] {
        LdpFlClientOptions o;
        o.address = Local(p);
        o.shuffler = Local(sp);
        o.token = tokens[i];
        o.ledger = Path("ledger" + std::to_string(i));
        o.budget = 1e9;
        std::vector<std::vector<std::size_t>> shards(2);
        for (std::size_t u = 0; u < 2; ++u) {
          shards[u].resize(30);
          std::iota(shards[u].begin(), shards[u].end(), (2 * i + u) * 30);
        }
        out.clients[i] = RunLdpFlClient(o, train_, std::move(shards));
      });
    }
    for (auto& t : clients) t.join();
    server.join();
    shuffler_stop.request_stop();
    shuffler.join();
    return out;
  }
  // Every user's report of every round counted, no piece rejected.
  void ExpectEveryReport(const LdpFlServed& out, std::uint64_t rounds) {
    for (const auto& r : out.clients) {
      ASSERT_TRUE(r.ok()) << r.error();
      EXPECT_EQ(r->reports, 2 * rounds);  // 2 users a client
    }
    ASSERT_TRUE(out.served && out.served->ok()) << (out.served ? out.served->error() : "none");
    const ServeSummary& served = **out.served;
    EXPECT_TRUE(served.finished);
    EXPECT_EQ(served.rounds, rounds);
    EXPECT_EQ(served.reports_counted, 4 * rounds);
    EXPECT_EQ(served.pieces_rejected, 0u);
    EXPECT_DOUBLE_EQ(served.majority, test_.MajorityRate());
    ASSERT_TRUE(out.shuffled && out.shuffled->ok());
    EXPECT_EQ((*out.shuffled)->stats.forwarded, 4 * rounds);
  }

  const Dataset train_ = testing::Stripes(120, 1), test_ = testing::Stripes(50, 2);
};

// Two-point reports, every round's model evaluated on the test rows.
TEST_F(ServeLdpFlTest, LdpFlReportsPassTheShufflerToTheEnd) {
  const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(2).value();
  const LdpFlServeConfig c = LdpFlServe(Path("server.sqlite"));
  LdpFlServeConfig bad = c;
  bad.config.adaptive = true;
  EXPECT_NE(bad.Validate().error().find("takes a fixed range"), std::string::npos);
  bad = c;
  bad.serve.shuffler_token_file.clear();
  EXPECT_NE(bad.Validate().error().find("shuffler's token"), std::string::npos);
  ExpectEveryReport(Run(c, tokens), 2);
  const std::string log = Log();
  EXPECT_NE(log.find("round 2 of 2: accuracy"), std::string::npos) << log;
  EXPECT_NE(privacy_.find("per weight"), std::string::npos) << privacy_;
}

// Issue 44, item 5: the operator's own network (serve --model net.pt) is
// announced with the task, bytes and all: every client runs the file it
// received (kept by its hash in the temporary folder), not a file of its own.
TEST_F(ServeLdpFlTest, TheOperatorsOwnNetworkIsAnnouncedAndTrainedByEveryClient) {
  ASSERT_EQ(testing::WriteTorchScriptMlp(Path("mlp.pt"), 8), "");
  const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(2).value();
  LdpFlServeConfig c = LdpFlServe(Path("server.sqlite"));
  c.config.arch = Path("mlp.pt");
  ExpectEveryReport(Run(c, tokens), 2);
  const auto task =
      DecodeLdpFlTask(ServerState::Open(Path("server.sqlite")).value().Task().value().value());
  ASSERT_TRUE(task.ok()) << task.error();
  std::ifstream file(Path("mlp.pt"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  EXPECT_EQ(task->model, bytes);
  const std::string kept = ModelFileOf(task->model).value();
  EXPECT_EQ(ModelFileOf(task->model).value(), kept);  // the same file, by its hash
  EXPECT_NE(kept, Path("mlp.pt"));
  std::ifstream copy(kept, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(copy)), {}), bytes);
  // A task whose network is a file but carries none (or the reverse) is refused.
  LdpFlTaskSpec wrong = *task;
  wrong.model.clear();
  EXPECT_NE(DecodeLdpFlTask(EncodeLdpFlTask(wrong)).error().find("disagree"), std::string::npos);
}

// Issue 42, item 7: a shuffled CNN task whose clients send PrivUnitG
// reports of their whole update, and whose server steps with Adam and
// releases the mean of its last two models, runs over gRPC to the end; the
// state file keeps Adam's moments and the average.
TEST_F(ServeLdpFlTest, AShuffledCnnTaskWithAdamAndAveragingRunsToTheEnd) {
  const auto tokens = ServerState::Open(Path("server.sqlite")).value().IssueTokens(2).value();
  LdpFlServeConfig c = LdpFlServe(Path("server.sqlite"));
  const std::vector<std::pair<std::string, OptionValue>> given = {
      {"randomizer", std::string("privunitg")},
      {"clip", 1.0},
      {"epsilon", 4.0},
      {"rounds", std::int64_t{3}},
      {"server_optimizer", std::string("adam")},
      {"server_lr", 0.01},
      {"average", std::string("tail")},
      {"average_tail", 0.5}};
  c.config = LdpFlConfigWith(c.config, given).value();
  ASSERT_EQ(c.config.arch, "cnn");
  ExpectEveryReport(Run(c, tokens), 3);
  const std::string log = Log();
  EXPECT_NE(log.find("server: adam (lr 0.01, beta1 0.9, beta2 0.99, tau 0.001); releases the "
                     "mean of the models of rounds 2 to 3"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("round 3 of 3: accuracy"), std::string::npos) << log;
  const auto snapshot = ServerState::Open(Path("server.sqlite")).value().Load().value().value();
  EXPECT_TRUE(snapshot.finished);
  const std::size_t d = snapshot.weights.size();
  ASSERT_EQ(snapshot.server.size(), 2 * d + 1 + d);  // m, v; 2 models averaged, their mean
  EXPECT_EQ(snapshot.server[2 * d], 2.0);
}

}  // namespace
}  // namespace fedldp
