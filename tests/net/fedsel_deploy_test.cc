// The deployment's FedSel logic without a network (coordinator and
// participants called directly, with a test clock), then the same over gRPC
// on loopback.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <numeric>
#include <optional>
#include <thread>

#include "fedldp/data/synthetic.h"
#include "fedldp/model/linear.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/fedsel_participant.h"
#include "fedldp/net/services.h"
#include "testing/synthetic.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using Clock = FedSelCoordinator::Clock;
using namespace std::chrono_literals;

Dataset Synthetic(std::size_t rows) { return testing::SmallSynthetic(rows); }

class FedSelDeployTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    spec_.id = "test-task";
    spec_.config.variant = "ps-pm";
    spec_.config.epsilon = 8;
    spec_.config.epochs = 2;
    spec_.config.batch_fraction = 0.05;  // m = 100 of 2000: 20 rounds per epoch
    spec_.users = data_.size();
    spec_.dimension = data_.dimension;
  }
  ServerState State() { return ServerState::Open(Path("server.sqlite")).value(); }

  // `parts` participants hosting consecutive quarters of the rows.
  struct Party {
    std::string token;
    std::unique_ptr<PrivacyLedger> ledger;
    std::unique_ptr<FedSelParticipant> participant;
  };
  std::vector<Party> Parties(FedSelCoordinator& c, std::size_t parts, double budget,
                             std::vector<std::string> tokens, Clock::time_point now) {
    std::vector<Party> out;
    const std::size_t n = data_.size();
    for (std::size_t p = 0; p < parts; ++p) {
      Party party;
      party.token = tokens[p];
      std::vector<std::size_t> rows(n / parts);
      std::iota(rows.begin(), rows.end(), p * (n / parts));
      party.ledger = std::make_unique<PrivacyLedger>(
          PrivacyLedger::Open(Path("ledger" + std::to_string(p)), budget).value());
      party.participant = std::make_unique<FedSelParticipant>(
          FedSelParticipant::Create(spec_, data_, rows, *party.ledger).value());
      const auto joined = c.Join(party.token, rows.size(), now);
      EXPECT_EQ(joined.error, "");
      party.participant->SetFirstUser(joined.first);
      out.push_back(std::move(party));
    }
    return out;
  }

  // One pass: every live party polls and answers. Returns reports accepted.
  // With `only_round`, only answers that round (so that a pass closes
  // exactly one round).
  std::size_t Pass(FedSelCoordinator& c, std::vector<Party>& parties, Clock::time_point now,
                   std::size_t skip = ~std::size_t{0},
                   std::optional<std::uint64_t> only_round = std::nullopt) {
    std::size_t accepted = 0;
    for (std::size_t p = 0; p < parties.size(); ++p) {
      if (p == skip) continue;
      const auto poll = c.PollRound(parties[p].token, now);
      EXPECT_EQ(poll.error, "");
      if (poll.state != FedSelCoordinator::Poll::State::kRound) continue;
      if (only_round && poll.round != *only_round) continue;
      const auto answer = parties[p].participant->Respond(poll.round, poll.weights, poll.users);
      const auto verdicts = c.Submit(parties[p].token, answer.reports, now).value();
      for (const auto& v : verdicts) accepted += v.accepted;
    }
    return accepted;
  }

  const Dataset data_ = Synthetic(2000);
  FedSelTaskSpec spec_;
};

TEST_F(FedSelDeployTest, AllUsersReportEveryEpochAndTheModelLearns) {
  auto state = State();
  const auto tokens = state.IssueTokens(4).value();
  auto c = FedSelCoordinator::Create(spec_, {}, std::move(state)).value();
  auto now = Clock::now();
  auto parties = Parties(*c, 4, spec_.config.epsilon, tokens, now);
  std::size_t accepted = 0;
  for (int i = 0; i < 1000 && !c->stats().finished; ++i) accepted += Pass(*c, parties, now);
  const auto s = c->stats();
  ASSERT_TRUE(s.finished);
  EXPECT_EQ(s.round, 40u);  // 2 epochs of 20 rounds
  EXPECT_EQ(accepted, 2 * data_.size());
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.rounds_without_update, 0u);
  // Each user spent exactly its budget: E reports of eps' = eps / E.
  EXPECT_NEAR(parties[0].ledger->spent("row-0"), spec_.config.epsilon, 1e-9);
  const double acc = LinearModel::Accuracy(c->weights(), data_, {});
  EXPECT_GT(acc, data_.MajorityRate() + 0.05) << "majority " << data_.MajorityRate();
}

// A state file's snapshot is checked like a report: a damaged one stops the
// server with the reason, instead of a fresh task or an index past the end.
TEST_F(FedSelDeployTest, ADamagedSnapshotIsRefusedWithItsReason) {
  const std::vector<double> good_weights(spec_.dimension, 0.0);
  std::vector<std::uint64_t> order(spec_.users);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  struct Case {
    ServerState::Snapshot snapshot;
    std::string expected;
  };
  auto nan_weights = good_weights;
  nan_weights[3] = std::nan("");
  auto repeated = order;
  repeated[1] = 0;
  auto outside = order;
  outside[0] = spec_.users;
  const std::vector<Case> cases = {
      {{0, 0, 0, order, nan_weights, false, 0}, "a weight is not finite"},
      {{0, 0, 0, order, {1.0, 2.0}, false, 0}, "2 weights for dimension"},
      {{0, 0, 0, repeated, good_weights, false, 0}, "not a permutation"},
      {{0, 0, 0, outside, good_weights, false, 0}, "not a permutation"},
      {{0, 0, 0, {1, 0}, good_weights, false, 0}, "a user order of 2 for"},
      {{5, 0, spec_.users, order, good_weights, false, 0}, "outside the task's 2 epochs"},
      {{5, 2, 0, order, good_weights, false, 0}, "(epoch 2, position 0) is outside"},
  };
  for (const auto& c : cases) {
    std::filesystem::remove(Path("server.sqlite"));
    {
      auto state = State();
      ASSERT_EQ(state.Commit(c.snapshot), "");
    }
    const auto made = FedSelCoordinator::Create(spec_, {}, State());
    ASSERT_FALSE(made.ok()) << c.expected;
    EXPECT_NE(made.error().find(c.expected), std::string::npos) << made.error();
  }
  // A finished task's snapshot may stand anywhere in the schedule.
  std::filesystem::remove(Path("server.sqlite"));
  {
    auto state = State();
    ASSERT_EQ(state.Commit({40, 2, spec_.users, order, good_weights, true, 0}), "");
  }
  EXPECT_TRUE(FedSelCoordinator::Create(spec_, {}, State()).ok());
}

TEST_F(FedSelDeployTest, DroppedClientsDoNotBlockRoundsAndTrainingStillConverges) {
  auto state = State();
  const auto tokens = state.IssueTokens(10).value();
  RoundPolicy policy;
  policy.stale_after = 100ms;
  policy.deadline = 1s;
  policy.min_participation = 0.5;
  auto c = FedSelCoordinator::Create(spec_, policy, std::move(state)).value();
  auto now = Clock::now();
  auto parties = Parties(*c, 10, spec_.config.epsilon, tokens, now);
  // Clients 0, 1 and 2 (30 %) drop out after the first pass; time moves on
  // 10 ms per pass.
  Pass(*c, parties, now);
  std::vector<Party> alive;
  for (std::size_t p = 3; p < parties.size(); ++p) alive.push_back(std::move(parties[p]));
  for (int i = 0; i < 100000 && !c->stats().finished; ++i) {
    now += 10ms;
    Pass(*c, alive, now);
    c->Tick(now);
  }
  const auto s = c->stats();
  ASSERT_TRUE(s.finished);
  EXPECT_EQ(s.round, 40u);
  EXPECT_EQ(s.rounds_without_update, 0u);  // ~70 % report, above the 50 % minimum
  EXPECT_GT(LinearModel::Accuracy(c->weights(), data_, {}), data_.MajorityRate() + 0.05);
}

TEST_F(FedSelDeployTest, BelowTheMinimumParticipationARoundPassesWithoutAnUpdate) {
  auto state = State();
  const auto tokens = state.IssueTokens(2).value();
  RoundPolicy policy;
  policy.deadline = 1s;
  policy.min_participation = 0.9;
  auto c = FedSelCoordinator::Create(spec_, policy, std::move(state)).value();
  auto now = Clock::now();
  auto parties = Parties(*c, 2, spec_.config.epsilon, tokens, now);
  // Only client 1 answers (about half of each round): every round waits for
  // its deadline and passes without an update.
  for (int round = 0; round < 3; ++round) {
    Pass(*c, parties, now, /*skip=*/0);
    now += 1s;
    c->Tick(now);
  }
  const auto s = c->stats();
  EXPECT_EQ(s.round, 3u);
  EXPECT_EQ(s.rounds_without_update, 3u);
  for (const double w : c->weights()) EXPECT_EQ(w, 0.0);
}

TEST_F(FedSelDeployTest, ARestartMidRoundLosesNoReportAndCountsNoneTwice) {
  std::vector<std::string> tokens;
  {
    auto state = State();
    tokens = state.IssueTokens(4).value();
  }
  auto now = Clock::now();
  auto c = FedSelCoordinator::Create(spec_, {}, State()).value();
  auto parties = Parties(*c, 4, spec_.config.epsilon, tokens, now);
  for (std::uint64_t r = 0; r < 5; ++r) Pass(*c, parties, now, ~std::size_t{0}, r);
  ASSERT_EQ(c->stats().round, 5u);
  // In round 5, clients 0 and 1 report; then the server dies.
  std::vector<std::vector<std::pair<std::uint64_t, std::string>>> sent(2);
  for (std::size_t p = 0; p < 2; ++p) {
    const auto poll = c->PollRound(parties[p].token, now);
    sent[p] = parties[p].participant->Respond(poll.round, poll.weights, poll.users).reports;
    const auto verdicts = c->Submit(parties[p].token, sent[p], now).value();
    for (const auto& v : verdicts) {
      EXPECT_TRUE(v.accepted) << v.reason;
    }
  }
  const auto weights_before = c->weights();
  c.reset();
  std::vector<std::string> log;
  auto resumed = FedSelCoordinator::Create(spec_, {}, State(), [&](const std::string& line) {
                   log.push_back(line);
                 }).value();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log[0], "resumed at round 5 (epoch 1), " +
                        std::to_string(sent[0].size() + sent[1].size()) +
                        " reports of it already recorded");
  EXPECT_EQ(resumed->stats().round, 5u);
  EXPECT_EQ(resumed->weights(), weights_before);
  // Client 0 did not hear its answer and resends: counted once, not twice.
  const auto resent = resumed->Submit(parties[0].token, sent[0], now).value();
  ASSERT_EQ(resent.size(), sent[0].size());
  for (const auto& v : resent) {
    EXPECT_TRUE(v.accepted);
    EXPECT_EQ(v.reason, "already counted");
  }
  EXPECT_EQ(resumed->stats().accepted, 0u);
  // The participants' ledgers give back the recorded bytes when asked again.
  const auto poll = resumed->PollRound(parties[1].token, now);
  EXPECT_TRUE(poll.users.empty());  // all of client 1's users of round 5 are counted
  // Clients 2 and 3 complete round 5, and training goes on to the end.
  std::size_t accepted = 0;
  for (int i = 0; i < 1000 && !resumed->stats().finished; ++i) {
    accepted += Pass(*resumed, parties, now);
  }
  EXPECT_TRUE(resumed->stats().finished);
  // Every user reported once per epoch: what was counted before the restart
  // plus what was counted after it is exactly 2 N.
  const std::size_t before = 5 * 100 + sent[0].size() + sent[1].size();
  EXPECT_EQ(before + accepted, 2 * data_.size());
  EXPECT_EQ(resumed->stats().counted, 2 * data_.size());  // in the model: each exactly once
}

// After a restart, a client that does not come back counts as quiet once
// the server has listened for stale_after, so rounds go on with the clients
// that returned instead of each waiting its deadline (here an hour).
TEST_F(FedSelDeployTest, AfterARestartAClientThatDoesNotComeBackIsQuiet) {
  std::vector<std::string> tokens;
  {
    auto state = State();
    tokens = state.IssueTokens(4).value();
  }
  RoundPolicy policy;
  policy.stale_after = 1s;  // also the margin for the time Create takes below
  policy.deadline = 1h;
  policy.min_participation = 0.5;
  auto c = FedSelCoordinator::Create(spec_, policy, State()).value();
  auto parties = Parties(*c, 4, spec_.config.epsilon, tokens, Clock::now());
  for (std::uint64_t r = 0; r < 3; ++r) Pass(*c, parties, Clock::now(), ~std::size_t{0}, r);
  ASSERT_EQ(c->stats().round, 3u);
  c.reset();
  auto resumed = FedSelCoordinator::Create(spec_, policy, State()).value();
  const auto back = Clock::now() + 10ms;
  Pass(*resumed, parties, back, /*skip=*/3);  // clients 0-2 come back; 3 never does
  // Client 3 may still be reconnecting: the round waits for it ...
  resumed->Tick(back + Roster::kReconnectAllowance);
  EXPECT_EQ(resumed->stats().round, 3u) << "client 3 was cut off while it could reconnect";
  // ... but not until its deadline (an hour).
  resumed->Tick(back + Roster::kReconnectAllowance + 1100ms);
  EXPECT_EQ(resumed->stats().round, 4u) << "client 3, never back, held the round";
  EXPECT_EQ(resumed->stats().rounds_without_update, 0u);  // 3 of 4 clients: above 50 %
}

TEST_F(FedSelDeployTest, TheLedgerRefusesAReportBeyondTheClientsBudget) {
  auto state = State();
  const auto tokens = state.IssueTokens(1).value();
  spec_.users = 500;
  auto c = FedSelCoordinator::Create(spec_, {}, std::move(state)).value();
  // The client's own total is 5, the task asks 2 reports of eps 4 each.
  auto ledger = PrivacyLedger::Open(Path("ledger"), 5.0).value();
  std::vector<std::size_t> rows(500);
  std::iota(rows.begin(), rows.end(), 0);
  auto participant = FedSelParticipant::Create(spec_, data_, rows, ledger).value();
  const auto now = Clock::now();
  participant.SetFirstUser(c->Join(tokens[0], 500, now).first);
  std::size_t reports = 0, refusals = 0;
  std::string refusal;
  for (int i = 0; i < 100 && !c->stats().finished; ++i) {
    const auto poll = c->PollRound(tokens[0], now);
    if (poll.state != FedSelCoordinator::Poll::State::kRound) break;
    auto answer = participant.Respond(poll.round, poll.weights, poll.users);
    reports += answer.reports.size();
    refusals += answer.refusals.size();
    if (!answer.refusals.empty()) {
      refusal = answer.refusals.front();
      break;
    }
    c->Submit(tokens[0], answer.reports, now).value();
  }
  EXPECT_EQ(reports, 500u);  // the first epoch
  EXPECT_EQ(refusals, 25u);  // the first round of the second epoch: m = 25
  EXPECT_NE(refusal.find("refused"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("left"), std::string::npos) << refusal;
  EXPECT_EQ(ledger.reports(), 500u);
}

TEST_F(FedSelDeployTest, BadReportsAndStrangersAreRefusedWithAReason) {
  auto state = State();
  const auto tokens = state.IssueTokens(2).value();
  auto c = FedSelCoordinator::Create(spec_, {}, std::move(state)).value();
  const auto now = Clock::now();
  EXPECT_NE(c->Join("stranger", 10, now).error, "");
  EXPECT_NE(c->PollRound("stranger", now).error, "");
  EXPECT_FALSE(c->Submit("stranger", {}, now).ok());
  EXPECT_NE(c->Join(tokens[0], 5000, now).error, "");  // more users than the task has
  c->Join(tokens[0], 1000, now);
  c->Join(tokens[1], 1000, now);
  const auto poll = c->PollRound(tokens[0], now);
  ASSERT_EQ(poll.state, FedSelCoordinator::Poll::State::kRound);
  const std::uint64_t mine = poll.users.front();
  std::uint64_t absent = 0;  // one of client 0's users not in this round
  while (std::find(poll.users.begin(), poll.users.end(), absent) != poll.users.end()) ++absent;
  const std::vector<std::pair<std::uint64_t, std::string>> bad = {
      {mine, "garbage"}, {absent, "x"}, {1500, "x"}};
  const auto v = c->Submit(tokens[0], bad, now).value();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_FALSE(v[0].accepted);
  EXPECT_NE(v[0].reason.find("malformed"), std::string::npos) << v[0].reason;
  EXPECT_NE(v[1].reason.find("does not take part"), std::string::npos) << v[1].reason;
  EXPECT_NE(v[2].reason.find("not this client's"), std::string::npos) << v[2].reason;
  EXPECT_EQ(c->stats().rejected, 3u);
}

TEST_F(FedSelDeployTest, OverGrpcOnLoopbackClientsTrainToTheEnd) {
  auto state = State();
  const auto tokens = state.IssueTokens(4).value();
  RoundPolicy policy;
  policy.retry = 5ms;
  auto c = FedSelCoordinator::Create(spec_, policy, std::move(state)).value();
  auto server = CoordinatorServer::Start(*c, "127.0.0.1:0").value();
  ASSERT_GT(server->port(), 0);
  std::vector<std::thread> threads;
  std::vector<Result<FedSelClientSummary>> results(4, Error{"not run"});
  for (std::size_t p = 0; p < 4; ++p) {
    threads.emplace_back([&, p] {
      FedSelClientOptions o;
      o.address = "127.0.0.1:" + std::to_string(server->port());
      o.token = tokens[p];
      o.ledger = Path("ledger" + std::to_string(p));
      std::vector<std::size_t> rows(500);
      std::iota(rows.begin(), rows.end(), p * 500);
      results[p] = RunFedSelClient(o, data_, rows);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_TRUE(r->finished);
    EXPECT_EQ(r->reports, 1000u);  // 500 users, 2 epochs
    EXPECT_EQ(r->refused, 0u);
  }
  EXPECT_TRUE(c->stats().finished);
  EXPECT_GT(LinearModel::Accuracy(c->weights(), data_, {}), data_.MajorityRate() + 0.05);
  // A stranger is told why it cannot join.
  FedSelClientOptions o;
  o.address = "127.0.0.1:" + std::to_string(server->port());
  o.token = "not-enrolled";
  o.ledger = Path("stranger-ledger");
  const auto stranger = RunFedSelClient(o, data_, {0});
  ASSERT_FALSE(stranger.ok());
  EXPECT_NE(stranger.error().find("unknown token"), std::string::npos) << stranger.error();
}

}  // namespace
}  // namespace fedldp
