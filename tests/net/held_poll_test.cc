// The FedSel server holds a waiting client's poll (PollRequest.wait_ms) and
// answers it when a round opens, when the wait is over, or when the server
// shuts down; a poll without wait_ms is answered at once, as before. A
// submit with wait_ms brings, once its reports are counted, what such a
// poll would answer (SubmitReply.next). And clients in one process do not
// share a connection to it. A Gate tells a held call that its client went.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>
#include <vector>

#include "client_loop.h"
#include "coordinator_gate.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/fedsel_participant.h"
#include "fedldp/net/services.h"
#include "fedldp/store/privacy_ledger.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "grpc_util.h"
#include "testing/synthetic.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

namespace pb = ::fedldp::v1;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class HeldPollTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    Start(7ms, "server.sqlite");
  }

  // A server (in place of the one before) asking for polls every `retry`,
  // its state at `file`, with two tokens; a client quiet for `stale_after`
  // counts as gone.
  void Start(std::chrono::milliseconds retry, const std::string& file,
             std::chrono::milliseconds stale_after = RoundPolicy{}.stale_after) {
    server_.reset();
    coordinator_.reset();
    FedSelTaskSpec spec;
    spec.id = "held-poll";
    spec.config.variant = ParseFedSelVariant("ps-pm").value();
    spec.config.epsilon = 8;
    spec.config.epochs = 1;
    spec.config.batch_fraction = 0.05;  // 100 of 2000 users per round
    spec.users = data_.size();
    spec.dimension = data_.dimension;
    auto state = ServerState::Open(Path(file)).value();
    tokens_ = state.IssueTokens(2).value();
    RoundPolicy policy;
    policy.retry = retry;
    policy.stale_after = stale_after;
    coordinator_ = FedSelCoordinator::Create(spec, policy, std::move(state)).value();
    server_ = CoordinatorServer::Start(*coordinator_, "127.0.0.1:0").value();
    stub_ = pb::Coordinator::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  }

  void Join(std::size_t client, std::uint64_t users) {
    pb::JoinRequest request;
    request.set_token(tokens_[client]);
    request.set_users(users);
    pb::JoinReply reply;
    grpc::ClientContext context;
    net_internal::SetClientCredentials(&context, tokens_[client]);
    ASSERT_TRUE(stub_->Join(&context, request, &reply).ok());
    sessions_[client] = reply.session();
    first_users_[client] = reply.first_user();
  }

  // A call's outcome, and how long it took to come back.
  template <typename Reply>
  struct Called {
    grpc::Status status;
    Reply reply;
    Clock::duration took{};
  };
  using Polled = Called<pb::PollReply>;
  using Submitted = Called<pb::SubmitReply>;

  // `request` (its credentials and wait_ms set here) sent by `client` with
  // rpc(context, request, reply).
  template <typename Reply, typename Request, typename Rpc>
  Called<Reply> Timed(std::size_t client, Request& request, std::uint32_t wait_ms, Rpc rpc) {
    request.set_token(tokens_[client]);
    request.set_session(sessions_[client]);
    request.set_wait_ms(wait_ms);
    Called<Reply> out;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    net_internal::SetClientCredentials(&context, tokens_[client], sessions_[client]);
    const auto start = Clock::now();
    out.status = rpc(&context, request, &out.reply);
    out.took = Clock::now() - start;
    return out;
  }

  Polled Poll(std::size_t client, std::uint32_t wait_ms) {
    pb::PollRequest request;
    return Timed<pb::PollReply>(client, request, wait_ms,
                                [this](auto* c, auto& q, auto* r) { return stub_->Poll(c, q, r); });
  }

  Submitted Submit(std::size_t client, const FedSelParticipant::Answer& answer,
                   std::uint32_t wait_ms) {
    pb::SubmitRequest request;
    for (const auto& [user, bytes] : answer.reports) {
      auto* r = request.add_reports();
      r->set_user(user);
      r->set_report(bytes);
    }
    return Timed<pb::SubmitReply>(client, request, wait_ms, [this](auto* c, auto& q, auto* r) {
      return stub_->Submit(c, q, r);
    });
  }

  const Dataset data_ = testing::SmallSynthetic(2000);
  std::vector<std::string> tokens_;
  std::string sessions_[2];
  std::uint64_t first_users_[2] = {0, 0};
  std::unique_ptr<FedSelCoordinator> coordinator_;
  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<pb::Coordinator::Stub> stub_;
};

TEST_F(HeldPollTest, WithoutWaitAWaitingPollIsAnsweredAtOnce) {
  Join(0, 1000);
  const Polled p = Poll(0, 0);
  ASSERT_TRUE(p.status.ok()) << p.status.error_message();
  EXPECT_EQ(p.reply.state(), pb::PollReply::WAITING);
  EXPECT_EQ(p.reply.retry_ms(), 7u);  // the client sleeps, as before
}

TEST_F(HeldPollTest, AHeldPollEndsAtItsWaitAndAsksForAnImmediatePoll) {
  Join(0, 1000);  // half the users: training cannot start
  const Polled p = Poll(0, 300);
  ASSERT_TRUE(p.status.ok()) << p.status.error_message();
  EXPECT_EQ(p.reply.state(), pb::PollReply::WAITING);
  EXPECT_EQ(p.reply.retry_ms(), 0u);
  EXPECT_GE(p.took, 290ms);  // held, up to the 10 ms of the server's timer
}

TEST_F(HeldPollTest, AHeldPollIsAnsweredWithTheRoundWhenItOpens) {
  Join(0, 1000);
  // Held for up to 1 s while client 1 has not joined; its join starts
  // training and opens round 0, in which client 0 hosts some of the 100
  // users (all 100 in client 1's half has probability below 1e-30). If the
  // open round did not release the poll, it would be answered only at the
  // end of its wait, 1 s after it came.
  auto held = std::async(std::launch::async, [&] { return Poll(0, 1000); });
  std::this_thread::sleep_for(200ms);
  Join(1, 1000);
  const Polled p = held.get();
  ASSERT_TRUE(p.status.ok()) << p.status.error_message();
  EXPECT_EQ(p.reply.state(), pb::PollReply::ROUND);
  EXPECT_EQ(p.reply.round(), 0u);
  EXPECT_GT(p.reply.users_size(), 0);
  EXPECT_EQ(p.reply.weights_size(), static_cast<int>(data_.dimension));
  EXPECT_LT(p.took, 900ms);
}

// One call per round: client 0's submit is held while round 0 waits for
// client 1, and answered with round 1 once client 1's reports close it.
TEST_F(HeldPollTest, ASubmitWithWaitIsAnsweredWithTheNextRound) {
  Join(0, 1000);
  Join(1, 1000);
  std::vector<std::unique_ptr<PrivacyLedger>> ledgers;
  std::vector<FedSelParticipant> parties;
  for (std::size_t client = 0; client < 2; ++client) {
    ledgers.push_back(std::make_unique<PrivacyLedger>(
        PrivacyLedger::Open(Path("ledger" + std::to_string(client)), 8).value()));
    std::vector<std::size_t> rows(1000);
    std::iota(rows.begin(), rows.end(), first_users_[client]);
    parties.push_back(
        FedSelParticipant::Create(coordinator_->spec(), data_, rows, *ledgers.back()).value());
    parties.back().SetFirstUser(first_users_[client]);
  }
  std::vector<FedSelParticipant::Answer> answers;
  for (std::size_t client = 0; client < 2; ++client) {
    const Polled p = Poll(client, 0);
    ASSERT_TRUE(p.status.ok()) << p.status.error_message();
    ASSERT_EQ(p.reply.state(), pb::PollReply::ROUND);  // each hosts some of round 0's 100
    ASSERT_EQ(p.reply.round(), 0u);
    const std::vector<double> weights(p.reply.weights().begin(), p.reply.weights().end());
    const std::vector<std::uint64_t> users(p.reply.users().begin(), p.reply.users().end());
    answers.push_back(parties[client].Respond(0, weights, users));
    ASSERT_EQ(answers.back().reports.size(), users.size());
  }
  auto held = std::async(std::launch::async, [&] { return Submit(0, answers[0], 2000); });
  std::this_thread::sleep_for(300ms);
  // Counted, but round 0 is still open: client 0 has nothing to do yet.
  EXPECT_EQ(held.wait_for(0ms), std::future_status::timeout);
  const Submitted last = Submit(1, answers[1], 0);
  ASSERT_TRUE(last.status.ok()) << last.status.error_message();
  EXPECT_FALSE(last.reply.has_next());  // not asked for
  const Submitted s = held.get();
  ASSERT_TRUE(s.status.ok()) << s.status.error_message();
  ASSERT_EQ(s.reply.verdicts_size(), static_cast<int>(answers[0].reports.size()));
  for (const auto& v : s.reply.verdicts()) EXPECT_TRUE(v.accepted()) << v.reason();
  ASSERT_TRUE(s.reply.has_next());
  EXPECT_EQ(s.reply.next().state(), pb::PollReply::ROUND);
  EXPECT_EQ(s.reply.next().round(), 1u);
  EXPECT_GT(s.reply.next().users_size(), 0);
  EXPECT_EQ(s.reply.next().weights_size(), static_cast<int>(data_.dimension));
  EXPECT_LT(s.took, 1900ms);  // released by the round, not at the end of its wait
  EXPECT_EQ(coordinator_->stats().accepted, answers[0].reports.size() + answers[1].reports.size());
}

TEST_F(HeldPollTest, ShuttingDownAnswersAHeldPoll) {
  Join(0, 1000);
  auto held = std::async(std::launch::async, [&] { return Poll(0, 1000); });
  std::this_thread::sleep_for(200ms);
  server_->Shutdown();  // would wait for the held call if nobody answered it
  const Polled p = held.get();
  EXPECT_LT(p.took, 1000ms);  // answered by the shutdown, not at the end of its wait
  if (p.status.ok()) {
    EXPECT_EQ(p.reply.state(), pb::PollReply::WAITING);
  } else {
    EXPECT_EQ(p.status.error_code(), grpc::StatusCode::UNAVAILABLE) << p.status.error_message();
  }
}

// The server's established TCP connections (from /proc/net/tcp and tcp6).
std::size_t ConnectionsTo(int port) {
  std::size_t n = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const auto colon = local.rfind(':');
      if (state == "01" && colon != std::string::npos &&
          std::stoi(local.substr(colon + 1), nullptr, 16) == port) {
        ++n;
      }
    }
  }
  return n;
}

// gRPC shares one connection among a process's channels to one address
// unless told not to: a test's or the load test's clients would be one
// client's calls on one connection.
TEST_F(HeldPollTest, EveryClientChannelHasAConnectionOfItsOwn) {
  Join(0, 1000);  // the fixture's channel is connected
  const std::size_t before = ConnectionsTo(server_->port());
  ASSERT_GE(before, 1u);
  std::vector<std::unique_ptr<pb::Coordinator::Stub>> stubs;
  for (int i = 0; i < 3; ++i) {
    auto channel = net_internal::MakeChannel("127.0.0.1:" + std::to_string(server_->port()), {});
    ASSERT_TRUE(channel.ok()) << channel.error();
    stubs.push_back(pb::Coordinator::NewStub(*channel));
    pb::PollRequest request;
    request.set_token(tokens_[0]);
    request.set_session(sessions_[0]);
    pb::PollReply reply;
    grpc::ClientContext context;
    net_internal::SetClientCredentials(&context, tokens_[0], sessions_[0]);
    ASSERT_TRUE(stubs.back()->Poll(&context, request, &reply).ok());
  }
  EXPECT_EQ(ConnectionsTo(server_->port()), before + 3);
}

// An admitted client cannot flood: once what it sent in a round (past 4 KiB
// a call) passes what its users' reports can need (four times over, and 1
// MiB more), its calls are refused unread until the next round, and no
// other client is. (Before, 40 sequential 60 MB Submits of one token took a
// server from 191 to 551 MB.)
TEST_F(HeldPollTest, AClientPastItsRoundsAllowanceIsRefusedUnread) {
  Join(0, 1000);
  Join(1, 1000);
  const auto allowance = coordinator_->AllowanceOf(tokens_[0]);
  EXPECT_EQ(allowance.users, 1000u);
  EXPECT_GT(allowance.bytes, 1u << 20);
  EXPECT_LT(allowance.bytes, 4u << 20);  // ps-pm reports are a few bytes
  FedSelParticipant::Answer junk;
  junk.reports.push_back({first_users_[0], std::string(256 << 10, 'x')});
  std::uint64_t sent = 0;
  Submitted s;
  for (int call = 0; call < 64; ++call) {
    s = Submit(0, junk, 0);
    if (s.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    EXPECT_TRUE(s.status.ok()) << s.status.error_message();  // read, its report refused
    sent += (256 << 10) - RoundCoordinator::kFreeCallBytes;
  }
  ASSERT_EQ(s.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.status.error_message().find("refused until the next round"), std::string::npos)
      << s.status.error_message();
  EXPECT_GE(sent, allowance.bytes);
  EXPECT_LT(sent, allowance.bytes + (256 << 10) + (1 << 10));
  junk.reports[0].second.assign(16 << 20, 'x');  // a large body: refused unread as well
  EXPECT_EQ(Submit(0, junk, 0).status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Poll(0, 0).status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Poll(1, 0).status.ok());  // the other client is not
}

// Nor with one large call: a call larger than every user's report at once
// (and 1 MiB) is refused by the transport, unread and uncounted. (Before,
// any call of up to 64 MB was read whole.)
TEST_F(HeldPollTest, ACallLargerThanTheTaskCanNeedIsRefusedUnread) {
  Join(0, 1000);
  const std::uint64_t largest = coordinator_->LargestCall();
  EXPECT_GT(largest, (1u << 20) + 2000 * 256);
  EXPECT_LT(largest, 2u << 20);  // 2,000 ps-pm reports of a few bytes
  FedSelParticipant::Answer junk;
  junk.reports.push_back({first_users_[0], std::string(largest, 'x')});
  const auto s = Submit(0, junk, 0);
  EXPECT_EQ(s.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.status.error_message();
  EXPECT_TRUE(Poll(0, 0).status.ok());                 // nothing was counted
  junk.reports[0].second.assign(largest - 4096, 'x');  // within: read, its report refused
  EXPECT_TRUE(Submit(0, junk, 0).status.ok());
}

// Nor with small calls: a client polling faster than four times the pace
// the server asks for (at least 8 a second; here polls every second) is
// refused unread once its burst of 256 is spent, and no other client is.
// (Before, any number of calls a second was answered, and a long round's
// polls ran an honest client out of its round's bytes.)
TEST_F(HeldPollTest, AClientCallingFasterThanItsPaceIsRefusedUntilItSlowsDown) {
  EXPECT_NEAR(coordinator_->AllowanceOf(tokens_[0]).calls_per_second, 4000.0 / 7, 1e-9);
  Start(1s, "paced.sqlite");
  Join(0, 1000);
  Join(1, 1000);
  const auto allowance = coordinator_->AllowanceOf(tokens_[0]);
  EXPECT_EQ(allowance.calls_per_second, 8);
  Polled p;
  int calls = 0;
  for (; calls < 2000; ++calls) {
    p = Poll(0, 0);
    if (!p.status.ok()) break;
  }
  ASSERT_EQ(p.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << calls;
  EXPECT_GE(calls, 255);  // the burst, less the Join
  EXPECT_NE(p.status.error_message().find("calls faster than 8 times a second"), std::string::npos)
      << p.status.error_message();
  EXPECT_TRUE(Poll(1, 0).status.ok());  // the other client is not
  std::this_thread::sleep_for(250ms);   // two calls' worth
  EXPECT_TRUE(Poll(0, 0).status.ok());
}

// The bucket itself, on a clock of its own: `burst` calls at once, then
// one per 1 / calls_per_second, never more than `burst` saved; bytes are
// counted past the first 4 KiB of a call; each client's first refusal in a
// round is told once.
TEST(CallAllowanceTest, RefillsAtItsPaceAndCountsBytesPastTheFreeShare) {
  std::vector<std::string> told;
  net_internal::CallAllowance allowance([&](const std::string& line) { told.push_back(line); });
  const RoundCoordinator::Allowance a{
      .round = 3, .users = 1, .bytes = 1000, .calls_per_second = 10, .burst = 20};
  const auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(allowance.Admit("a", a, t0).ok()) << i;
  const Status refused = allowance.Admit("a", a, t0);
  EXPECT_EQ(refused.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().find("calls faster than 10 times a second"), std::string::npos)
      << refused.error();
  EXPECT_TRUE(allowance.Admit("b", a, t0).ok());
  EXPECT_TRUE(allowance.Admit("a", a, t0 + 110ms).ok());  // one refilled
  EXPECT_FALSE(allowance.Admit("a", a, t0 + 120ms).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(allowance.Admit("a", a, t0 + 1h).ok()) << i;
  EXPECT_FALSE(allowance.Admit("a", a, t0 + 1h).ok());  // at most `burst` saved
  EXPECT_EQ(told.size(), 1u);
  allowance.Count("b", 3, RoundCoordinator::kFreeCallBytes);  // free
  EXPECT_TRUE(allowance.Admit("b", a, t0 + 1h).ok());
  allowance.Count("b", 3, RoundCoordinator::kFreeCallBytes + 1000);
  EXPECT_NE(allowance.Admit("b", a, t0 + 1h).error().find("sent 1000 bytes in round 4"),
            std::string::npos);
  auto next = a;
  ++next.round;  // a new round: bytes afresh
  EXPECT_TRUE(allowance.Admit("b", next, t0 + 1h).ok());
  EXPECT_EQ(told.size(), 2u);
}

// One server per port: gRPC's default SO_REUSEPORT let a second server bind
// the same port and take half of the clients.
TEST_F(HeldPollTest, ASecondServerOnTheSamePortIsRefused) {
  const std::string address = "127.0.0.1:" + std::to_string(server_->port());
  const auto second = CoordinatorServer::Start(*coordinator_, address);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("cannot listen on " + address), std::string::npos)
      << second.error();
  Join(0, 1000);  // the first still serves
}

// A Gate whose Poll is held: each arriving call's Finish goes to `held`.
void AddHeldPoll(net_internal::Gate& gate, std::promise<net_internal::Gate::Finish>& held) {
  gate.Add<pb::PollRequest, pb::PollReply>(
      net_internal::CoordinatorMethod("Poll"),
      [](const grpc::ServerContextBase&) { return grpc::Status::OK; },
      [&held](grpc::ServerContextBase&, const pb::PollRequest&, pb::PollReply*,
              net_internal::Gate::Finish finish) { held.set_value(std::move(finish)); });
}

// A Poll at `address` on its own thread, until `deadline`: its status.
std::future<grpc::StatusCode> PollUntil(const std::string& address,
                                        std::chrono::milliseconds deadline) {
  return std::async(std::launch::async, [address, deadline] {
    auto stub =
        pb::Coordinator::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    pb::PollRequest request;
    pb::PollReply reply;
    return stub->Poll(&context, request, &reply).error_code();
  });
}

// A Gate's held call learns that its client has gone (here: its deadline
// passed), so that it is not held to the end of its wait; answering it
// afterwards is harmless. gRPC's IsCancelled may not be asked on the
// completion-queue API before the call is over: the Gate says it instead.
TEST(GateTest, AHeldCallIsGoneOnceItsClientHasGone) {
  net_internal::Gate gate;
  std::promise<net_internal::Gate::Finish> held;
  AddHeldPoll(gate, held);
  int port = 0;
  auto server = net_internal::StartServer(
      net_internal::Served{.gate = &gate, .say = {}}, "127.0.0.1:0", {}, &port, [] {},
      std::make_shared<std::atomic<bool>>());
  ASSERT_TRUE(server.ok()) << server.error();
  auto call = PollUntil("127.0.0.1:" + std::to_string(port), 300ms);
  auto arrived = held.get_future();
  ASSERT_EQ(arrived.wait_for(10s), std::future_status::ready);
  const net_internal::Gate::Finish finish = arrived.get();
  EXPECT_FALSE(finish.gone());  // its client waits
  EXPECT_EQ(call.get(), grpc::StatusCode::DEADLINE_EXCEEDED);
  const auto start = Clock::now();
  while (!finish.gone() && Clock::now() - start < 10s) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(finish.gone());
  finish(grpc::Status::OK);
  (*server)->Shutdown();
}

// A server rebuilt on its port (as when a flood stalls its listener) serves
// new calls at once; a call held across the rebuilding is answered, or
// cancelled, never lost, and answering it later is harmless.
TEST(GateTest, ARebuiltServerServesAgainAndReleasesWhatItHeld) {
  net_internal::Gate gate;
  std::promise<net_internal::Gate::Finish> held;
  AddHeldPoll(gate, held);
  gate.Add<pb::JoinRequest, pb::JoinReply>(
      net_internal::CoordinatorMethod("Join"),
      [](const grpc::ServerContextBase&) { return grpc::Status::OK; },
      [](grpc::ServerContextBase&, const pb::JoinRequest&, pb::JoinReply*,
         net_internal::Gate::Finish finish) { finish(grpc::Status::OK); });
  int port = 0;
  std::vector<std::string> said;
  std::mutex mu;
  auto server = net_internal::StartServer(
      net_internal::Served{.gate = &gate,
                           .say =
                               [&](const std::string& line) {
                                 std::lock_guard lock(mu);
                                 said.push_back(line);
                               }},
      "127.0.0.1:0", {}, &port, [] {}, std::make_shared<std::atomic<bool>>());
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto call = PollUntil(address, 20s);
  auto arrived = held.get_future();
  ASSERT_EQ(arrived.wait_for(10s), std::future_status::ready);
  const net_internal::Gate::Finish finish = arrived.get();

  (*server)->Rebuild();
  EXPECT_NE(call.get(), grpc::StatusCode::DEADLINE_EXCEEDED);  // cancelled, not lost
  // A new connection to the same port is served by the new server.
  const auto start = Clock::now();
  grpc::Status joined;
  do {
    auto fresh =
        pb::Coordinator::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + 2s);
    pb::JoinRequest join;
    pb::JoinReply joined_reply;
    joined = fresh->Join(&c, join, &joined_reply);
  } while (!joined.ok() && Clock::now() - start < 20s);
  EXPECT_TRUE(joined.ok()) << joined.error_message();
  finish(grpc::Status::OK);  // the old server's call, answered late
  (*server)->Shutdown();
  std::lock_guard lock(mu);
  ASSERT_FALSE(said.empty());
  EXPECT_NE(said.front().find("rebuilt the listener 1 time"), std::string::npos) << said.front();
}

// A protocol whose participant is slow to create and to answer: it records
// the round it is first asked for and what the server had closed by the
// time it answered, then spends every user's budget.
class SlowProtocol final : public net_internal::ClientProtocol {
 public:
  SlowProtocol(const FedSelCoordinator& server, std::size_t dimension, std::uint64_t users,
               std::chrono::milliseconds slow)
      : server_(server), dimension_(dimension), users_(users), slow_(slow) {}
  Participation Brings() const override { return {"fedsel", dimension_, std::nullopt}; }
  Status Accept(const pb::JoinReply&) override { return Status::Ok(); }
  Result<std::string> Open(const pb::JoinReply& joined) override {
    first_user_ = joined.first_user();
    std::this_thread::sleep_for(slow_);  // as Torch loads on a busy machine
    return std::string("joined");
  }
  const std::string& task_id() const override { return id_; }
  bool shuffled() const override { return false; }
  void Prepare(pb::PollRequest&) const override {}
  bool StartRound(const pb::PollReply& reply, pb::PollRequest&) override {
    if (!first_round) first_round = reply.round();
    return true;
  }
  net_internal::ClientAnswer Respond(std::uint64_t, std::span<const std::uint64_t>) override {
    std::this_thread::sleep_for(slow_);  // as a local epoch trains
    closed_while_answering = server_.stats().rounds_closed;
    net_internal::ClientAnswer spent;
    spent.exhausted = true;
    return spent;
  }
  std::vector<std::uint64_t> Exhausted() const override {
    std::vector<std::uint64_t> all(users_);
    std::iota(all.begin(), all.end(), first_user_);
    return all;
  }
  std::uint64_t users() const override { return users_; }
  std::uint64_t ShownRound(std::uint64_t round) const override { return round + 1; }

  std::optional<std::uint64_t> first_round;
  std::uint64_t closed_while_answering = ~std::uint64_t{0};

 private:
  const FedSelCoordinator& server_;
  const std::size_t dimension_;
  const std::uint64_t users_;
  const std::chrono::milliseconds slow_;
  const std::string id_ = "held-poll";
  std::uint64_t first_user_ = 0;
};

// The server takes a client quiet for 1.2 s for gone (while another is
// heard from); this one spends 3 s creating its participant after joining
// and 3 s answering. It beats meanwhile: the first round waits for it and
// is answered, not closed as quiet (on CI, 20 clients loading Torch at once
// had lost a round's report).
TEST_F(HeldPollTest, AClientBusyLongerThanTheStaleTimeBeatsAndKeepsItsRound) {
  Start(7ms, "stale.sqlite", 1200ms);
  Join(1, 1000);
  pb::WithdrawRequest spent;  // the other client's users are done: only this one's are awaited
  spent.set_token(tokens_[1]);
  spent.set_session(sessions_[1]);
  for (std::uint64_t u = 0; u < 1000; ++u) spent.add_users(first_users_[1] + u);
  pb::WithdrawReply withdrawn;
  grpc::ClientContext context;
  net_internal::SetClientCredentials(&context, tokens_[1], sessions_[1]);
  ASSERT_TRUE(stub_->Withdraw(&context, spent, &withdrawn).ok());
  const std::jthread other([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      (void)Poll(1, 0);
      std::this_thread::sleep_for(100ms);
    }
  });
  SlowProtocol slow(*coordinator_, data_.dimension, 1000, 3s);
  FedSelClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(server_->port());
  options.token = tokens_[0];
  options.ledger = Path("ledger.sqlite");
  const auto summary = net_internal::RunClientLoop(options, 1000, slow, {});
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_TRUE(summary->exhausted);
  ASSERT_TRUE(slow.first_round.has_value());
  EXPECT_EQ(*slow.first_round, 0u);
  EXPECT_EQ(slow.closed_while_answering, 0u);
}

}  // namespace
}  // namespace fedldp
