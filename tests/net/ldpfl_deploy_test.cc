// The LDP-FL deployment's logic without a network: server, shuffler and
// clients called directly.
#include "fedldp/net/ldpfl_deploy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <stop_token>
#include <thread>

#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/net/services.h"
#include "fedldp/v1/service.pb.h"
#include "testing/ldpfl_task.h"
#include "testing/processes.h"
#include "testing/synthetic.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using Clock = LdpFlCoordinator::Clock;
using namespace std::chrono_literals;

class LdpFlDeployTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    keys_ = ServerKeys::Generate();
    auto net = NeuralNet::Create("cnn", 3).value();
    initial_ = net.GetWeights();
    spec_ = testing::SmallCnnTask("mnist-test", 6, keys_, net);
    policy_.deadline = 60s;
    policy_.stale_after = 30s;
  }

  std::unique_ptr<LdpFlCoordinator> Coordinator() {
    auto state = ServerState::Open(Path("server.sqlite")).value();
    auto tokens = state.IssueTokens(0).value();
    std::vector<double> initial(initial_.begin(), initial_.end());
    return LdpFlCoordinator::Create(spec_, policy_, std::move(state), keys_, initial).value();
  }

  // Three clients of two users each, 40 rows per user.
  void MakeClients(double budget) {
    auto state = ServerState::Open(Path("server.sqlite")).value();
    tokens_ = state.IssueTokens(3).value();
    spec_.deployment = state.deployment();
    for (int c = 0; c < 3; ++c) {
      ledgers_.push_back(std::make_unique<PrivacyLedger>(
          PrivacyLedger::Open(Path("ledger" + std::to_string(c)), budget).value()));
      std::vector<std::vector<std::size_t>> shards(2);
      for (std::size_t u = 0; u < 2; ++u) {
        shards[u].resize(40);
        std::iota(shards[u].begin(), shards[u].end(), (2 * c + u) * 40);
      }
      clients_.push_back(std::make_unique<LdpFlParticipant>(
          LdpFlParticipant::Create(spec_, data_, std::move(shards), *ledgers_.back()).value()));
    }
  }
  void JoinAll(LdpFlCoordinator& server) {
    for (int c = 0; c < 3; ++c) {
      const auto joined = server.Join(tokens_[c], 2, Clock::now());
      ASSERT_TRUE(joined.ok()) << joined.status.error();
      sessions_[c] = joined.session;
      clients_[c]->SetFirstUser(joined.first);
    }
  }
  // Every client answers the open round: (token, session, user, pieces).
  struct Submission {
    std::string token;
    std::string session;
    std::uint64_t user;
    std::vector<std::string> pieces;
  };
  std::vector<Submission> Answers(LdpFlCoordinator& server, std::uint64_t* round = nullptr) {
    std::vector<Submission> out;
    for (int c = 0; c < 3; ++c) {
      const auto poll = server.PollRound(tokens_[c], sessions_[c], Clock::now());
      if (poll.round.state != FedSelCoordinator::Poll::State::kRound) continue;
      if (round) *round = poll.round.round;
      auto answer =
          clients_[c]->Respond(poll.round.round, poll.round.weights, poll.ranges, poll.round.users);
      EXPECT_TRUE(answer.refusals.empty()) << answer.refusals.front();
      for (auto& [user, pieces] : answer.reports)
        out.push_back({tokens_[c], sessions_[c], user, std::move(pieces)});
    }
    return out;
  }
  static LdpFlCoordinator::Delivery Batch(std::uint64_t round, std::span<const Submission> subs) {
    LdpFlCoordinator::Delivery batch;
    batch.round = round;
    batch.pieces.resize(subs.front().pieces.size());
    for (const auto& s : subs) {
      batch.contributors.emplace_back(s.token, s.user);
      for (std::size_t c = 0; c < s.pieces.size(); ++c) batch.pieces[c].push_back(s.pieces[c]);
    }
    return batch;
  }
  // After a round with updates over (0, r): every weight is w0 + r B (2k/n - 1).
  void ExpectLattice(std::span<const double> before, std::span<const double> after, double n) {
    const double e = std::exp(spec_.config.epsilon);
    const double rb = spec_.config.fixed_range.radius * (e + 1) / (e - 1);
    double worst = 0;
    for (std::size_t j = 0; j < before.size(); ++j) {
      const double k = ((after[j] - before[j]) / rb + 1) * n / 2;
      worst = std::max(worst, std::abs(k - std::round(k)));
      ASSERT_GE(std::round(k), 0);
      ASSERT_LE(std::round(k), n);
    }
    EXPECT_LT(worst, 1e-3);  // float rounding of the stored mean
  }

  // What the server's model must be after a round of `subs`: the pieces
  // opened and aggregated here, independently of the coordinator.
  std::vector<double> Expected(std::span<const double> before, std::span<const Submission> subs,
                               std::uint64_t round) {
    const std::vector<LayerRange> ranges(spec_.layer_sizes.size(), spec_.config.fixed_range);
    const auto full = LdpFlRandomizer::Create(1, spec_.layer_sizes, ranges).value();
    LdpFlAggregator aggregator(full);
    const auto chunks = spec_.chunks();
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      const auto r =
          LdpFlRandomizer::Create(1, {chunks[c].end - chunks[c].begin}, {spec_.config.fixed_range})
              .value();
      ReportGate gate(round, r);
      for (std::size_t i = 0; i < subs.size(); ++i) {
        const std::string plain = Unseal(subs[i].pieces[c], keys_).value();
        auto v = gate.Admit(std::to_string(i),
                            {reinterpret_cast<const std::uint8_t*>(plain.data()), plain.size()});
        EXPECT_TRUE(v.accepted());
        EXPECT_TRUE(aggregator.AddPiece(chunks[c], std::get<LdpFlReport>(*v.report)).ok());
      }
    }
    const auto mean = aggregator.Mean();
    std::vector<double> after(before.begin(), before.end());
    for (std::size_t j = 0; j < after.size(); ++j) after[j] += mean[j];
    return after;
  }

  // `subs` of round r through `shuffler` (the server vouching), the batch
  // delivered: every piece accepted, and the model `before` plus the mean of
  // the reports whose sum is `sum`.
  void DeliverAndExpectTheirMean(LdpFlCoordinator& server, ShufflerCore& shuffler,
                                 std::span<const Submission> subs, std::uint64_t r,
                                 std::span<const double> before, std::span<const double> sum) {
    for (const auto& sub : subs) {
      ASSERT_TRUE(shuffler
                      .Shuffle(sub.token, r, sub.user, sub.pieces,
                               [&] { return server.Vouch(sub.token, sub.session, sub.user, r); })
                      .ok());
    }
    shuffler.Update(server.RoundInfo(Clock::now()));
    auto batch = shuffler.TakeBatch();
    ASSERT_TRUE(batch.has_value());
    const auto delivered = server.Deliver(*batch, Clock::now());
    ASSERT_TRUE(delivered.accepted) << delivered.reason;
    EXPECT_EQ(delivered.pieces_accepted, subs.size() * subs.front().pieces.size());
    EXPECT_EQ(delivered.pieces_rejected, 0u);
    const auto after = server.weights();
    const double n = static_cast<double>(subs.size());
    for (std::size_t j = 0; j < after.size(); ++j) {
      ASSERT_NEAR(after[j], before[j] + sum[j] / n, 1e-9 * (1 + std::abs(sum[j]))) << j;
    }
  }

  // One round of `name`'s compact reports through the shuffler, each user's
  // decoded here apart from the coordinator (CompactReports tests below).
  void ExpectACompactRound(const char* name) {
    spec_.config.vector = ParseVectorMechanism(name).value();
    spec_.config.clip = 0.5;
    spec_.config.epsilon = 2;
    ASSERT_TRUE(spec_.Check().ok());
    ASSERT_EQ(spec_.chunks().size(), 1u);
    EXPECT_EQ(spec_.chunks()[0].end, spec_.weights());
    MakeClients(10);
    auto server = Coordinator();
    JoinAll(*server);
    ShufflerCore shuffler({.min_batch = 3});
    const auto randomizer = LdpFlVectorRandomizer(spec_.config, spec_.weights(), 0).value();
    const auto before = server->weights();
    shuffler.Update(server->RoundInfo(Clock::now()));
    std::uint64_t r = 0;
    const auto subs = Answers(*server, &r);
    ASSERT_EQ(subs.size(), 6u);
    std::vector<double> sum(spec_.weights(), 0.0);
    for (const auto& sub : subs) {
      ASSERT_EQ(sub.pieces.size(), 1u);
      const std::string plain = Unseal(sub.pieces[0], keys_).value();
      EXPECT_LE(plain.size(), randomizer->MaxSentBytes() + 8);  // the round and the framing
      ReportGate gate(r, *randomizer);
      auto v = gate.Admit("x", {reinterpret_cast<const std::uint8_t*>(plain.data()), plain.size()});
      ASSERT_TRUE(v.accepted()) << v.detail;
      const auto& report = std::get<VectorReport>(*v.report).values;
      ASSERT_EQ(report.size(), spec_.weights());
      for (std::size_t j = 0; j < report.size(); ++j) sum[j] += report[j];
    }
    DeliverAndExpectTheirMean(*server, shuffler, subs, r, before, sum);
    EXPECT_DOUBLE_EQ(ledgers_[0]->spent("rows-0+40"), 2);
  }

  const Dataset data_ = testing::Stripes(240, 1);
  ServerKeys keys_;
  std::vector<float> initial_;
  LdpFlTaskSpec spec_;
  RoundPolicy policy_;
  std::vector<std::string> tokens_;
  std::vector<std::unique_ptr<PrivacyLedger>> ledgers_;
  std::vector<std::unique_ptr<LdpFlParticipant>> clients_;
  std::string sessions_[3];
};

TEST_F(LdpFlDeployTest, RoundsPassThroughTheShufflerAndLandOnTheMechanismsLattice) {
  MakeClients(1e9);
  auto server = Coordinator();
  JoinAll(*server);
  ShufflerCore shuffler({.min_batch = 3});
  for (int round = 0; round < 2; ++round) {
    const auto before = server->weights();
    const auto info = server->RoundInfo(Clock::now());
    shuffler.Update(info);
    std::uint64_t r = 0;
    for (auto& s : Answers(*server, &r)) {
      // The server says how large a sealed piece can be, and means it: the
      // largest chunk's piece is within a few dozen bytes of it (varints
      // counted at their longest).
      std::size_t largest = 0;
      for (const std::string& piece : s.pieces) largest = std::max(largest, piece.size());
      EXPECT_LE(largest, info.piece_bytes);
      EXPECT_GE(largest + 64, info.piece_bytes);
      ASSERT_TRUE(shuffler
                      .Shuffle(s.token, r, s.user, s.pieces,
                               [&] { return server->Vouch(s.token, s.session, s.user, r); })
                      .ok());
      // A retry is taken and not held twice.
      ASSERT_TRUE(shuffler.Shuffle(s.token, r, s.user, s.pieces, [] { return Status(); }).ok());
    }
    shuffler.Update(server->RoundInfo(Clock::now()));
    auto batch = shuffler.TakeBatch();
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->contributors.size(), 6u);
    EXPECT_TRUE(std::is_sorted(batch->contributors.begin(), batch->contributors.end()));
    const auto delivered = server->Deliver(*batch, Clock::now());
    ASSERT_TRUE(delivered.accepted) << delivered.reason;
    EXPECT_EQ(delivered.pieces_rejected, 0u);
    ExpectLattice(before, server->weights(), 6);
  }
  const auto stats = server->stats();
  EXPECT_TRUE(stats.finished);
  EXPECT_EQ(stats.counted, 12u);
  EXPECT_EQ(shuffler.stats().forwarded, 12u);
}

// Issue 20: a vector randomizer's whole-update report travels as sealed
// VectorReport pieces through the same shuffler; the server's model moves
// by the mean of the pieces, each user's report is one the randomizer could
// output, and the ledger charges eps per report (not d eps).
TEST_F(LdpFlDeployTest, VectorReportsPassThroughTheShufflerAndMoveTheModelByTheirMean) {
  spec_.config.vector = VectorMechanism::kPrivUnitG;
  spec_.config.clip = 0.5;
  spec_.config.epsilon = 4;
  ASSERT_TRUE(spec_.Check().ok());
  EXPECT_EQ(spec_.ReportEpsilon(), 4);
  const LdpFlTaskSpec announced = DecodeLdpFlTask(EncodeLdpFlTask(spec_)).value();
  EXPECT_EQ(announced.config.vector, VectorMechanism::kPrivUnitG);
  EXPECT_EQ(announced.config.clip, 0.5);
  MakeClients(10);  // two reports of eps 4 each per user
  auto server = Coordinator();
  JoinAll(*server);
  ShufflerCore shuffler({.min_batch = 3});
  const auto privunitg = LdpFlVectorRandomizer(spec_.config, spec_.weights(), 0).value();
  const auto chunks = spec_.chunks();
  for (int round = 0; round < 2; ++round) {
    const auto before = server->weights();
    shuffler.Update(server->RoundInfo(Clock::now()));
    std::uint64_t r = 0;
    const auto subs = Answers(*server, &r);
    ASSERT_EQ(subs.size(), 6u);
    // Opened here, apart from the coordinator: the mean of the reports.
    std::vector<double> sum(spec_.weights(), 0.0);
    for (const auto& sub : subs) {
      std::vector<double> report;
      for (std::size_t c = 0; c < chunks.size(); ++c) {
        ReportGate gate(r, ReportGate::VectorPiece{chunks[c].end - chunks[c].begin});
        const std::string plain = Unseal(sub.pieces[c], keys_).value();
        auto v =
            gate.Admit("x", {reinterpret_cast<const std::uint8_t*>(plain.data()), plain.size()});
        ASSERT_TRUE(v.accepted()) << v.detail;
        const auto& values = std::get<VectorReport>(*v.report).values;
        report.insert(report.end(), values.begin(), values.end());
      }
      ASSERT_EQ(report.size(), spec_.weights());
      EXPECT_TRUE(privunitg->ValidateReport(report).ok());
      for (std::size_t j = 0; j < report.size(); ++j) sum[j] += report[j];
    }
    DeliverAndExpectTheirMean(*server, shuffler, subs, r, before, sum);
  }
  EXPECT_TRUE(server->stats().finished);
  EXPECT_EQ(server->stats().counted, 12u);
  // eps 4 per report, twice: 2 of the 10 left for every user.
  for (int c = 0; c < 3; ++c) {
    for (int u = 0; u < 2; ++u) {
      const std::string account = "rows-" + std::to_string((2 * c + u) * 40) + "+40";
      EXPECT_DOUBLE_EQ(ledgers_[c]->spent(account), 8) << account;
    }
  }
  // A piece of the wrong length is refused by the server's gate.
  ReportGate gate(0, ReportGate::VectorPiece{3});
  const std::string two = EncodeReport(0, VectorReport{{1.0, 2.0}});
  EXPECT_FALSE(
      gate.Admit("y", {reinterpret_cast<const std::uint8_t*>(two.data()), two.size()}).accepted());
  // What the deployment cannot serve: (eps, delta) reports, a public seed.
  for (const VectorMechanism refused :
       {VectorMechanism::kGaussian, VectorMechanism::kFastProjUnitCorr, VectorMechanism::kDuchi}) {
    LdpFlTaskSpec bad = spec_;
    bad.config.vector = refused;
    EXPECT_FALSE(bad.Check().ok()) << VectorMechanismName(refused);
  }
}

// Issue 45, item 4: a randomizer with a compact form sends its whole report
// as one sealed piece of its bytes (privunitg-seed: 16; fastprojunit-seed:
// 24), which the server decodes with the round's randomizer and checks as
// its report; the model moves by the mean of the decoded reports, and the
// ledger charges eps per report.
TEST_F(LdpFlDeployTest, PrivUnitGSeedReportsTravelAsOnePieceOfTheirBytes) {
  ExpectACompactRound("privunitg-seed");
}

TEST_F(LdpFlDeployTest, FastProjUnitSeedReportsTravelAsOnePieceOfTheirBytes) {
  ExpectACompactRound("fastprojunit-seed");
}

// The announced task carries LdpFlConfig's deployed rows (TaskOption): a
// client rebuilds every one exactly; one it does not know is refused.
TEST_F(LdpFlDeployTest, TheAnnouncedTaskCarriesEveryDeployedOptionExactly) {
  using Given = std::vector<std::pair<std::string, OptionValue>>;
  for (const Given& given :
       std::vector<Given>{{},
                          {{"perturb", std::string("weights")},
                           {"range", std::string("adaptive")},
                           {"adaptive_margin", 1.25},
                           {"epsilon", 0.1 + 0.2}},
                          {{"range", std::string("fixed")},
                           {"perturb", std::string("updates")},
                           {"center", 0.01},
                           {"radius", 1.0 / 3}},
                          {{"range", std::string("fixed")},
                           {"randomizer", std::string("privunitg")},
                           {"clip", 0.5},
                           {"disjoint_rounds", true}},
                          {{"fraction", 0.5},
                           {"batch", std::int64_t{20}},
                           {"learning_rate", 0.07},
                           {"delta", 1e-7}},
                          {{"server_optimizer", std::string("yogi")},
                           {"server_lr", 0.1 / 3},
                           {"server_beta1", 0.8},
                           {"server_beta2", 0.95},
                           {"server_tau", 1e-2},
                           {"average", std::string("ema")},
                           {"average_decay", 0.7}},
                          {{"average", std::string("tail")}, {"average_tail", 0.25}}}) {
    LdpFlTaskSpec spec = spec_;
    spec.config = LdpFlConfigWith(spec_.config, given).value();
    ASSERT_TRUE(spec.Check().ok()) << spec.Check().error();
    const LdpFlTaskSpec decoded = DecodeLdpFlTask(EncodeLdpFlTask(spec)).value();
    for (const LdpFlOption& o : LdpFlOptions()) {
      if (o.deployed) {
        EXPECT_EQ(o.get(decoded.config), o.get(spec.config)) << o.key;
      }
    }
    EXPECT_EQ(decoded.config.clients, spec.users);
    EXPECT_EQ(decoded.layer_sizes, spec.layer_sizes);
  }
  // A task from a newer server, with an option this client lacks.
  fedldp::v1::Task task;
  ASSERT_TRUE(task.ParseFromString(EncodeLdpFlTask(spec_)));
  fedldp::v1::TaskOption& extra = *task.mutable_ldpfl()->add_options();
  extra.set_key("momentum");
  extra.set_number(0.9);
  const auto refused = DecodeLdpFlTask(task.SerializeAsString());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("'momentum'"), std::string::npos) << refused.error();
  // A value its row refuses.
  task.mutable_ldpfl()->mutable_options()->RemoveLast();
  for (auto& option : *task.mutable_ldpfl()->mutable_options()) {
    if (option.key() == "range") option.set_text("wide");
  }
  EXPECT_NE(DecodeLdpFlTask(task.SerializeAsString()).error().find("range = wide"),
            std::string::npos);
}

TEST_F(LdpFlDeployTest, MakeLdpFlTaskAnnouncesTheSimulatorsStandardisation) {
  std::vector<std::size_t> rows(120);
  std::iota(rows.begin(), rows.end(), std::size_t{60});
  const auto spec = MakeLdpFlTask("t", spec_.config, 7, data_, rows, keys_.public_key, 100).value();
  const InputMoments m = InputMomentsOf(data_, rows);
  EXPECT_EQ(spec.input_mean, m.mean);
  EXPECT_EQ(spec.input_sd, m.sd);
  EXPECT_EQ(spec.users, 7u);
  EXPECT_EQ(spec.chunk, 100u);
  EXPECT_EQ(spec.layer_sizes, spec_.layer_sizes);
  EXPECT_EQ(spec.public_key, keys_.public_key);
  EXPECT_TRUE(spec.Check().ok());
  rows.push_back(data_.size());
  EXPECT_NE(MakeLdpFlTask("t", spec_.config, 7, data_, rows, keys_.public_key)
                .error()
                .find("beyond the data"),
            std::string::npos);
  rows.pop_back();
  EXPECT_NE(MakeLdpFlTask("t", spec_.config, 0, data_, rows, keys_.public_key)
                .error()
                .find("needs users"),
            std::string::npos);
  LdpFlConfig vgg = spec_.config;
  vgg.arch = "vgg";  // expects 3072 features
  EXPECT_NE(MakeLdpFlTask("t", vgg, 7, data_, rows, keys_.public_key).error().find("expects 3072"),
            std::string::npos);
}

TEST_F(LdpFlDeployTest, ServerRefusesWhatItCannotCount) {
  MakeClients(1e9);
  spec_.config.shuffle_batch = 3;  // the statement's n: each report among at least 3
  auto server = Coordinator();
  JoinAll(*server);
  std::uint64_t round = 0;
  auto subs = Answers(*server, &round);
  ASSERT_EQ(subs.size(), 6u);
  // Fewer users than the statement's n: refused whole, whatever else holds.
  const auto small = server->Deliver(Batch(round, std::span(subs).first(2)), Clock::now());
  EXPECT_FALSE(small.accepted);
  EXPECT_NE(small.reason.find("a batch of 2 users; the task's statement shuffles each report "
                              "among at least 3"),
            std::string::npos)
      << small.reason;
  EXPECT_EQ(server->RoundInfo(Clock::now()).batch, 3u);
  // Wrong round, a stranger among the contributors, a wrong shape: refused whole.
  EXPECT_FALSE(server->Deliver(Batch(round + 1, subs), Clock::now()).accepted);
  auto stranger = subs;
  stranger[0].token = "not-a-client";
  EXPECT_FALSE(server->Deliver(Batch(round, stranger), Clock::now()).accepted);
  auto short_batch = Batch(round, subs);
  short_batch.pieces[0].pop_back();
  EXPECT_FALSE(server->Deliver(short_batch, Clock::now()).accepted);
  // A piece altered on the way, and a piece sealed for another round: each
  // rejected alone, the rest counted.
  auto batch = Batch(round, std::span(subs).first(3));
  batch.pieces[0][1][20] ^= 1;
  LdpFlReport other;
  other.ranges = {spec_.config.fixed_range};
  other.weights = spec_.chunks()[1].end - spec_.chunks()[1].begin;
  other.bits.assign((other.weights + 63) / 64, 0);
  batch.pieces[1][2] = Seal(EncodeReport(round + 7, other), keys_.public_key);
  const auto d = server->Deliver(batch, Clock::now());
  ASSERT_TRUE(d.accepted) << d.reason;
  EXPECT_EQ(d.pieces_rejected, 2u);
  EXPECT_EQ(d.pieces_accepted, 3 * spec_.chunks().size() - 2);
  // The same users again: refused (no report counted twice).
  EXPECT_FALSE(server->Deliver(Batch(round, std::span(subs).first(3)), Clock::now()).accepted);
  EXPECT_EQ(server->stats().batches_refused, 5u);  // the small batch too
  EXPECT_EQ(server->Vouch(subs[0].token, subs[0].session, subs[0].user, round).error(),
            "already delivered");
  EXPECT_FALSE(server->Vouch(tokens_[0], sessions_[0], 5, round).ok());  // not this client's user
  EXPECT_FALSE(server->Vouch(tokens_[0], "", 0, round).ok());            // no session
}

// A snapshot read back is checked against the task (issue 41: a finished
// snapshot was trusted at any round): its weights, its round within the
// schedule, and a finished task at the schedule's end only.
TEST_F(LdpFlDeployTest, ASnapshotOutsideTheScheduleIsRefusedWithItsReason) {
  ASSERT_FALSE(spec_.config.disjoint_rounds);
  std::vector<std::uint64_t> drawn(spec_.per_round());
  std::iota(drawn.begin(), drawn.end(), std::uint64_t{0});
  const std::vector<double> w(initial_.begin(), initial_.end());
  auto nan = w;
  nan[7] = std::nan("");
  auto twice = drawn;
  twice[1] = 0;
  auto made = [&](const ServerState::Snapshot& snapshot) {
    std::filesystem::remove(Path("server.sqlite"));
    {
      auto state = ServerState::Open(Path("server.sqlite")).value();
      EXPECT_TRUE(state.Commit(snapshot).ok());
    }
    return LdpFlCoordinator::Create(spec_, policy_,
                                    ServerState::Open(Path("server.sqlite")).value(), keys_, w);
  };
  const std::vector<std::pair<ServerState::Snapshot, std::string>> cases = {
      {{0, 0, 0, drawn, {1.0, 2.0}, false, 0}, "2 weights for a model of"},
      {{0, 0, 0, drawn, nan, false, 0}, "a weight is not finite"},
      {{1000000, 0, 0, drawn, w, false, 0}, "round 1000001 is past the task's 2"},
      {{0, 0, 0, drawn, w, true, 0}, "the task finishes after round 2, not 0"},
      {{1000000, 0, 0, drawn, w, true, 0}, "the task finishes after round 2, not 1000000"},
      {{1, 0, 0, twice, w, false, 0}, "distinct users of the task"},
      // fedavg at lr 1 without averaging keeps no state besides the model.
      {{1, 0, 0, drawn, w, false, 0, {0.5}}, "the task averages no models"},
  };
  for (const auto& [snapshot, expected] : cases) {
    const auto c = made(snapshot);
    if (c.ok()) {
      ADD_FAILURE() << expected << ": accepted";
      continue;
    }
    EXPECT_NE(c.error().find(expected), std::string::npos) << c.error();
  }
  EXPECT_TRUE(made({1, 0, 0, drawn, w, false, 0}).ok());
  EXPECT_TRUE(made({2, 0, 0, drawn, w, true, 0}).ok());
  // Momentum's state is one moment per weight (ServerLearner's own refusals
  // are server_optimizer_test's).
  spec_.config.server = {ServerOptimizerKind::kMomentum, 0.5, 0.9, 0.99, 1e-3};
  const auto short_state = made({1, 0, 0, drawn, w, false, 0, {0.5}});
  ASSERT_FALSE(short_state.ok());
  EXPECT_NE(short_state.error().find("server state: the server's learning state holds 1 numbers"),
            std::string::npos)
      << short_state.error();
  EXPECT_TRUE(made({1, 0, 0, drawn, w, false, 0, std::vector<double>(w.size(), 0.1)}).ok());
}

TEST_F(LdpFlDeployTest, RestartKeepsDeliveredPiecesAndCountsNothingTwice) {
  MakeClients(1e9);
  spec_.config.shuffle_batch = 3;  // half the round's users make a batch
  std::vector<double> before;
  std::vector<Submission> subs;
  std::uint64_t round = 0;
  {
    auto server = Coordinator();
    JoinAll(*server);
    before = server->weights();
    subs = Answers(*server, &round);
    ASSERT_TRUE(server->Deliver(Batch(round, std::span(subs).first(3)), Clock::now()).accepted);
  }  // the server dies here; its state file stays
  auto server = Coordinator();
  const auto info = server->RoundInfo(Clock::now());
  EXPECT_EQ(info.round, round);
  EXPECT_EQ(info.delivered.size(), 3u);
  // Unasked, the list is left out (a shuffler has it once a round).
  const auto unlisted = server->RoundInfo(Clock::now(), "", false);
  EXPECT_FALSE(unlisted.listed);
  EXPECT_TRUE(unlisted.delivered.empty());
  EXPECT_EQ(unlisted.waiting, info.waiting);
  ShufflerCore shuffler({.min_batch = 1});
  EXPECT_TRUE(shuffler.WantsDelivered());  // nothing known yet
  shuffler.Update(unlisted);
  EXPECT_TRUE(shuffler.WantsDelivered());  // the round's list not had yet
  shuffler.Update(info);
  EXPECT_FALSE(shuffler.WantsDelivered());
  auto next = unlisted;
  ++next.round;
  shuffler.Update(next);
  EXPECT_TRUE(shuffler.WantsDelivered());  // a new round: its list once
  EXPECT_FALSE(server->Deliver(Batch(round, std::span(subs).first(3)), Clock::now()).accepted);
  ASSERT_TRUE(server->Deliver(Batch(round, std::span(subs).subspan(3)), Clock::now()).accepted);
  EXPECT_EQ(server->stats().counted, 6u);
  EXPECT_EQ(server->weights(), Expected(before, subs, round));  // every piece, each once
}

// The server's optimiser (adam) and average (the mean of every round's
// model) on the deployed rounds: each closed round's model and release are
// a ServerLearner's from the pieces' estimate, across a restart (moments and
// average restored from the state file), and a round closed without
// reports keeps the model and still counts in the average.
TEST_F(LdpFlDeployTest, TheServerOptimiserAndAverageGoOnAcrossARestart) {
  spec_.config.rounds = 3;
  spec_.config.server = {ServerOptimizerKind::kAdam, 0.01, 0.9, 0.99, 1e-3};
  spec_.config.averaging = {IterateAveragingKind::kTail, 0.9, 1.0};
  const LdpFlTaskSpec announced = DecodeLdpFlTask(EncodeLdpFlTask(spec_)).value();
  EXPECT_EQ(announced.config.server.kind, ServerOptimizerKind::kAdam);
  EXPECT_EQ(announced.config.averaging.tail, 1.0);
  MakeClients(1e9);
  ServerLearner reference(spec_.config.server, spec_.config.averaging, 3, spec_.weights());
  std::vector<double> x(initial_.begin(), initial_.end()), released(x.size());
  auto server = Coordinator();
  for (int round = 1; round <= 2; ++round) {
    if (round == 2) {  // a restart between the rounds
      server.reset();
      server = Coordinator();
      EXPECT_EQ(server->weights(), x);
      EXPECT_EQ(server->released(), released);
    }
    JoinAll(*server);
    std::uint64_t r = 0;
    const auto subs = Answers(*server, &r);
    ASSERT_EQ(subs.size(), 6u);
    ASSERT_TRUE(server->Deliver(Batch(r, subs), Clock::now()).accepted);
    reference.Step<double>(round, x, Expected(x, subs, r));
    reference.Release<double>(x, released);
    EXPECT_EQ(server->weights(), x) << "round " << round;
    EXPECT_EQ(server->released(), released) << "round " << round;
    if (round == 2) {
      ASSERT_NE(released, x);  // the mean of rounds 1 and 2
    }
  }
  // Round 3 reaches its deadline with no report: no update.
  auto t = Clock::now();
  for (int c = 0; c < 3; ++c) (void)server->PollRound(tokens_[c], sessions_[c], t);
  t += 61s;
  for (int c = 0; c < 3; ++c) (void)server->PollRound(tokens_[c], sessions_[c], t);
  server->Tick(t);
  ASSERT_TRUE(server->stats().finished);
  EXPECT_EQ(server->stats().rounds_without_update, 1u);
  reference.Step<double>(3, x, {});
  reference.Release<double>(x, released);
  EXPECT_EQ(server->weights(), x);
  EXPECT_EQ(server->released(), released);
  server.reset();
  server = Coordinator();  // a finished task still releases its average
  EXPECT_EQ(server->released(), released);
}

TEST_F(LdpFlDeployTest, LedgerChargesDEpsilonPerReportAndResendsTheRecordedPieces) {
  const double d = static_cast<double>(spec_.weights());
  MakeClients(1.5 * d * spec_.config.epsilon);
  auto server = Coordinator();
  JoinAll(*server);
  const auto poll = server->PollRound(tokens_[0], sessions_[0], Clock::now());
  ASSERT_EQ(poll.round.users.size(), 2u);
  const auto first =
      clients_[0]->Respond(poll.round.round, poll.round.weights, poll.ranges, poll.round.users);
  ASSERT_EQ(first.reports.size(), 2u);
  EXPECT_NEAR(ledgers_[0]->spent("rows-0+40"), d, 1e-6);
  const auto again =
      clients_[0]->Respond(poll.round.round, poll.round.weights, poll.ranges, poll.round.users);
  ASSERT_EQ(again.reports.size(), 2u);
  EXPECT_EQ(again.reports[0].second, first.reports[0].second);  // the same sealed bytes
  EXPECT_NEAR(ledgers_[0]->spent("rows-0+40"), d, 1e-6);        // nothing spent again
  // The next round would pass the total: refused, with the reason.
  const auto refused =
      clients_[0]->Respond(poll.round.round + 1, poll.round.weights, poll.ranges, poll.round.users);
  EXPECT_TRUE(refused.reports.empty());
  ASSERT_EQ(refused.refusals.size(), 2u);
  EXPECT_NE(refused.refusals[0].find("d eps"), std::string::npos) << refused.refusals[0];
}

// Issue 20: disjoint rounds in the deployment. Each epoch of
// floor(N / per round) rounds is cut from one random order, so every user is
// drawn exactly once per epoch; a restart mid-epoch resumes the same order;
// the task states reports_per_user() = epochs begun.
TEST_F(LdpFlDeployTest, DisjointRoundsDrawEveryUserOncePerEpochAcrossARestart) {
  spec_.config.disjoint_rounds = true;
  spec_.config.fraction = 1.0 / 3;  // 2 of 6 users a round, 3 rounds an epoch
  spec_.config.rounds = 7;
  EXPECT_EQ(spec_.rounds_per_epoch(), 3u);
  EXPECT_EQ(spec_.reports_per_user(), 3u);  // epochs 1, 2 and the first round of 3
  EXPECT_TRUE(DecodeLdpFlTask(EncodeLdpFlTask(spec_)).value().config.disjoint_rounds);
  MakeClients(1e9);
  auto server = Coordinator();
  JoinAll(*server);
  auto t = Clock::now();
  // The open round's users, as the clients hear them; then the round is
  // closed by its deadline (no report: no update, which is not tested here)
  // while the clients still poll (a round of absent clients would pause).
  const auto round_users = [&](LdpFlCoordinator& s) {
    std::set<std::uint64_t> users;
    for (int c = 0; c < 3; ++c) {
      auto poll = s.PollRound(tokens_[c], sessions_[c], t);
      if (poll.round.status.code() == ErrorCode::kFailedPrecondition) {
        sessions_[c] = s.Join(tokens_[c], 2, t).session;
        poll = s.PollRound(tokens_[c], sessions_[c], t);
      }
      EXPECT_TRUE(poll.round.ok()) << poll.round.status.error();
      users.insert(poll.round.users.begin(), poll.round.users.end());
    }
    t += 61s;
    for (int c = 0; c < 3; ++c) (void)s.PollRound(tokens_[c], sessions_[c], t);
    s.Tick(t);
    return users;
  };
  std::vector<std::set<std::uint64_t>> rounds;
  for (int r = 0; r < 4; ++r) rounds.push_back(round_users(*server));
  // A restart in epoch 2 (round 5 open): the same order goes on.
  server.reset();
  server = Coordinator();
  EXPECT_EQ(server->stats().round, 4u);
  for (int r = 4; r < 7; ++r) rounds.push_back(round_users(*server));
  EXPECT_TRUE(server->stats().finished);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::uint64_t> drawn;
    for (int b = 0; b < 3; ++b) {
      const auto& users = rounds[static_cast<std::size_t>(3 * epoch + b)];
      EXPECT_EQ(users.size(), 2u);
      drawn.insert(users.begin(), users.end());
    }
    EXPECT_EQ(drawn, (std::multiset<std::uint64_t>{0, 1, 2, 3, 4, 5})) << "epoch " << epoch + 1;
  }
  EXPECT_EQ(rounds[6].size(), 2u);
}

// The shuffler alone, with a made-up round: 3 users, 2 chunks.
LdpFlCoordinator::Info Round(std::uint64_t round, std::uint64_t waiting, std::uint32_t left_ms) {
  LdpFlCoordinator::Info info;
  info.round = round;
  info.expected = 5;
  info.waiting = waiting;
  info.unheld = waiting;  // no other shuffler holds any of them
  info.deadline_ms = left_ms;
  info.open = true;
  info.chunks = 2;
  return info;
}

std::vector<std::string> Pieces(std::uint64_t user) {
  return {"u" + std::to_string(user) + "c0", "u" + std::to_string(user) + "c1"};
}

// Views of the round come from two threads (the shuffler's timer, and a
// client's call that names a round the shuffler has not seen open): a view
// fetched before a newer one must not close the newer round and drop what it
// holds.
TEST(ShufflerCore, AStaleViewIsIgnoredAndANewRoundAsksForAFreshOne) {
  ShufflerCore shuffler({.min_batch = 2, .flush_before = 0ms});
  const auto yes = [] { return Status(); };
  EXPECT_TRUE(shuffler.Behind(0));  // nothing known yet
  shuffler.Update(Round(3, 2, 10000));
  EXPECT_FALSE(shuffler.Behind(3));
  EXPECT_TRUE(shuffler.Behind(4));   // a client is ahead: ask the server
  EXPECT_FALSE(shuffler.Behind(2));  // a client is behind: refuse
  ASSERT_TRUE(shuffler.Shuffle("tok0", 3, 0, Pieces(0), yes).ok());
  shuffler.Update(Round(2, 2, 10000));  // stale: ignored
  ASSERT_TRUE(shuffler.Shuffle("tok1", 3, 1, Pieces(1), yes).ok());
  const auto batch = shuffler.TakeBatch();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->round, 3u);
  EXPECT_EQ(batch->contributors.size(), 2u);
  EXPECT_EQ(shuffler.stats().dropped, 0u);
}

// RunShuffler, the library call under `fedldp shuffle`: a stop shuts it
// down and it says it stopped (no server ever answered, so nothing moved);
// an address it cannot listen on is an error, before any work.
TEST(RunShuffler, AStopShutsItDownAndABadAddressIsRefused) {
  ShufflerServerOptions options;
  options.address = "127.0.0.1:0";  // the kernel's pick: no race with parallel tests
  options.server = "127.0.0.1:" + std::to_string(testing::processes::FreePort());  // nobody there
  options.shuffler_token = "a-shuffler-token-0123456789";
  // The shuffler's pump thread logs too ("server ... unavailable"), and may
  // do so before "listening on".
  std::mutex log_mu;
  std::vector<std::string> log;
  options.log = [&](const std::string& line) {
    std::lock_guard lock(log_mu);
    log.push_back(line);
  };
  std::stop_source stop;
  std::jthread stopper([&stop] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  const auto summary = RunShuffler(options, {.min_batch = 2}, stop.get_token());
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_FALSE(summary->finished);
  EXPECT_EQ(summary->stats.forwarded, 0u);
  const auto listening = [&] {
    std::lock_guard lock(log_mu);
    return std::any_of(log.begin(), log.end(), [&](const std::string& line) {
      return line.find("listening on 127.0.0.1:") != std::string::npos &&
             line.find("listening on 127.0.0.1:0;") == std::string::npos;
    });
  };
  EXPECT_TRUE(listening());
  options.address = "not an address";
  EXPECT_FALSE(RunShuffler(options, {}, stop.get_token()).ok());
}

TEST(ShufflerCore, PermutesEveryChunkOnItsOwnUniformly) {
  ShufflerCore shuffler({.min_batch = 3, .flush_before = 0ms});
  const auto yes = [] { return Status(); };
  // position_of_user0[chunk][position], and how often both chunks put it at
  // the same place.
  std::map<std::pair<int, std::size_t>, int> positions;
  int same = 0;
  const int trials = 600;
  for (int t = 0; t < trials; ++t) {
    shuffler.Update(Round(static_cast<std::uint64_t>(t), 3, 10000));
    for (std::uint64_t u : {2, 0, 1}) {
      ASSERT_TRUE(
          shuffler
              .Shuffle("tok" + std::to_string(u), static_cast<std::uint64_t>(t), u, Pieces(u), yes)
              .ok());
    }
    const auto batch = shuffler.TakeBatch();
    ASSERT_TRUE(batch.has_value());
    ASSERT_EQ(batch->contributors.size(), 3u);
    EXPECT_EQ(batch->contributors[0].second, 0u);  // sorted, not in arrival order
    std::size_t at[2] = {0, 0};
    for (int c = 0; c < 2; ++c) {
      auto sorted = batch->pieces[c];
      std::sort(sorted.begin(), sorted.end());
      ASSERT_EQ(sorted,
                (std::vector<std::string>{"u0c" + std::to_string(c), "u1c" + std::to_string(c),
                                          "u2c" + std::to_string(c)}));
      at[c] = static_cast<std::size_t>(
          std::find(batch->pieces[c].begin(), batch->pieces[c].end(), "u0c" + std::to_string(c)) -
          batch->pieces[c].begin());
      ++positions[{c, at[c]}];
    }
    same += at[0] == at[1];
  }
  // Each count is Binomial(600, 1/3): mean 200, sd 11.5; 5 sd either side.
  for (const auto& [key, n] : positions) {
    EXPECT_GT(n, 142) << key.first << "," << key.second;
    EXPECT_LT(n, 258) << key.first << "," << key.second;
  }
  EXPECT_EQ(positions.size(), 6u);
  EXPECT_GT(same, 142);  // independent chunks: same place with probability 1/3
  EXPECT_LT(same, 258);
}

// The pieces of a submission are read only once the server vouched for its
// sender; a refusal before that never reads them, and a retry is answered
// unread only for the token whose pieces are held or sent on.
TEST(ShufflerCore, ReadsPiecesOnlyOnceTheServerVouchedForTheirSender) {
  ShufflerCore shuffler({.min_batch = 1, .flush_before = 1000ms});
  int reads = 0;
  const auto read = [&](std::uint64_t u) {
    return [&reads, u]() -> std::optional<std::vector<std::string>> {
      ++reads;
      return Pieces(u);
    };
  };
  const auto yes = [] { return Status(); };
  const auto no = [] { return Status(Error{"not this client's user"}); };
  EXPECT_FALSE(shuffler.Receive("a", 4, 0, read(0), yes).ok());  // no round known yet
  shuffler.Update(Round(4, 1, 10000));
  EXPECT_FALSE(shuffler.Receive("a", 3, 0, read(0), yes).ok());  // wrong round
  EXPECT_FALSE(shuffler.Receive("a", 4, 0, read(0), no).ok());   // not vouched for
  EXPECT_EQ(reads, 0);
  ASSERT_TRUE(shuffler.Receive("a", 4, 0, read(0), yes).ok());
  EXPECT_EQ(reads, 1);
  EXPECT_TRUE(shuffler.Receive("a", 4, 0, read(0), no).ok());    // a retry, held: unread
  EXPECT_FALSE(shuffler.Receive("b", 4, 0, read(0), yes).ok());  // another token's held user
  ASSERT_TRUE(shuffler.TakeBatch().has_value());
  EXPECT_TRUE(shuffler.Receive("a", 4, 0, read(0), no).ok());    // a retry, sent on: unread
  EXPECT_FALSE(shuffler.Receive("b", 4, 0, read(0), yes).ok());  // another token's, sent on
  EXPECT_EQ(reads, 1);
  // Pieces that cannot be read are refused.
  EXPECT_FALSE(shuffler
                   .Receive(
                       "a", 4, 1, [] { return std::optional<std::vector<std::string>>(); }, yes)
                   .ok());
}

// An admitted token cannot flood the shuffler: once refused kMaxRefusals
// times in a round (not vouched for, or pieces that are no report), its
// calls are refused unread and unasked until the next round, and no other
// token's are. (Before, each such call cost the server a Vouch, or this
// process a body read whole, without end.)
TEST(ShufflerCore, ATokenRefusedTooOftenIsRefusedUnreadUntilTheNextRound) {
  ShufflerCore shuffler({.min_batch = 100, .flush_before = 0ms});
  shuffler.Update(Round(4, 5, 10000));
  int reads = 0, asked = 0;
  const auto read = [&](std::vector<std::string> pieces) {
    return [&reads, pieces]() -> std::optional<std::vector<std::string>> {
      ++reads;
      return pieces;
    };
  };
  const auto yes = [&] {
    ++asked;
    return Status();
  };
  const auto no = [&] {
    ++asked;
    return Status(Error{"not this client's user"});
  };
  for (std::uint64_t i = 0; i < ShufflerCore::kMaxRefusals; ++i) {
    ASSERT_FALSE(shuffler.Receive("a", 4, i, read(Pieces(i)), no).ok());
    ASSERT_FALSE(shuffler.Receive("c", 4, i, read({"only one"}), yes).ok());  // no report
  }
  EXPECT_EQ(reads, static_cast<int>(ShufflerCore::kMaxRefusals));
  const int asked_before = asked, read_before = reads;
  for (const char* token : {"a", "c"}) {
    const Status refused = shuffler.Receive(token, 4, 0, read(Pieces(0)), yes);
    EXPECT_EQ(refused.code(), ErrorCode::kResourceExhausted) << token;
    EXPECT_NE(refused.error().find("refused 64 times in round 5"), std::string::npos)
        << refused.error();
  }
  EXPECT_EQ(asked, asked_before);                                       // the server was not asked
  EXPECT_EQ(reads, read_before);                                        // nor the pieces read
  EXPECT_TRUE(shuffler.Receive("b", 4, 0, read(Pieces(0)), yes).ok());  // another token
  shuffler.Update(Round(5, 5, 10000));                                  // the next round: afresh
  EXPECT_TRUE(shuffler.Receive("a", 5, 1, read(Pieces(1)), yes).ok());
}

// A piece larger than the server says it takes is refused (and counted
// against the token), never held: what an admitted token's calls leave in
// the shuffler is what its users' reports can need. A server that says
// nothing (0) leaves the size unchecked here.
TEST(ShufflerCore, APieceLargerThanTheServerTakesIsRefusedNotHeld) {
  ShufflerCore shuffler({.min_batch = 100, .flush_before = 0ms});
  LdpFlCoordinator::Info info = Round(4, 5, 10000);
  info.piece_bytes = 4;
  shuffler.Update(info);
  const auto yes = [] { return Status(); };
  const Status big = shuffler.Shuffle("a", 4, 0, {"u0c0", "u0c1x"}, yes);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error(), "a piece of 5 bytes; the server takes 4 at most");
  EXPECT_TRUE(shuffler.Shuffle("a", 4, 0, Pieces(0), yes).ok());  // 4 bytes each: held
  EXPECT_EQ(shuffler.stats().held, 1u);
  EXPECT_EQ(shuffler.stats().refused, 1u);
  // Junk of many reports' size counts once per report's worth (2 chunks
  // of 4 bytes): one call of 66 reports' bytes ends the token's round, and
  // no other token's.
  EXPECT_FALSE(shuffler.Shuffle("a", 4, 2, {"u2c0", std::string(520, 'x')}, yes).ok());
  EXPECT_EQ(shuffler.Shuffle("a", 4, 3, Pieces(3), yes).code(), ErrorCode::kResourceExhausted);
  EXPECT_TRUE(shuffler.Shuffle("b", 4, 3, Pieces(3), yes).ok());
  info.piece_bytes = 0;
  shuffler.Update(info);
  EXPECT_TRUE(shuffler.Shuffle("b", 4, 1, {"u1c0", "u1c1 and more"}, yes).ok());
}

TEST(ShufflerCore, HoldsUntilTheMinimumBatchAndEveryoneExpectedThenDropsWhatCannotGo) {
  ShufflerCore shuffler({.min_batch = 3, .flush_before = 1000ms});
  const auto yes = [] { return Status(); };
  EXPECT_FALSE(shuffler.Shuffle("a", 0, 0, Pieces(0), yes).ok());  // no round known yet
  shuffler.Update(Round(4, 5, 10000));
  EXPECT_FALSE(shuffler.Shuffle("a", 3, 0, Pieces(0), yes).ok());     // wrong round
  EXPECT_FALSE(shuffler.Shuffle("a", 4, 0, {"only one"}, yes).ok());  // wrong shape
  EXPECT_FALSE(shuffler.Shuffle("a", 4, 0, Pieces(0), [] { return Status(Error{"no"}); }).ok());
  for (std::uint64_t u = 0; u < 2; ++u)
    ASSERT_TRUE(shuffler.Shuffle("a", 4, u, Pieces(u), yes).ok());
  EXPECT_FALSE(shuffler.Shuffle("b", 4, 1, Pieces(1), yes).ok());  // someone else's held user
  shuffler.Update(Round(4, 5, 500));                               // late, but 2 < 3: nothing goes
  EXPECT_FALSE(shuffler.TakeBatch().has_value());
  ASSERT_TRUE(shuffler.Shuffle("a", 4, 2, Pieces(2), yes).ok());
  shuffler.Update(Round(4, 5, 10000));  // 3 held, 5 expected, not late: wait
  EXPECT_FALSE(shuffler.TakeBatch().has_value());
  shuffler.Update(Round(4, 3, 10000));  // the other two went quiet: everyone left is here
  auto batch = shuffler.TakeBatch();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->contributors.size(), 3u);
  // The server could not be reached: the batch comes back, then goes again.
  shuffler.Return(std::move(*batch));
  ASSERT_TRUE(shuffler.TakeBatch().has_value());
  // Two late users, then the round closes: dropped, never sent as a batch of 2.
  shuffler.Update(Round(4, 2, 10000));
  for (std::uint64_t u = 3; u < 5; ++u)
    ASSERT_TRUE(shuffler.Shuffle("a", 4, u, Pieces(u), yes).ok());
  shuffler.Update(Round(4, 2, 0));
  EXPECT_FALSE(shuffler.TakeBatch().has_value());
  shuffler.Update(Round(5, 5, 10000));
  EXPECT_FALSE(shuffler.TakeBatch().has_value());
  const auto stats = shuffler.stats();
  EXPECT_EQ(stats.forwarded, 3u);
  EXPECT_EQ(stats.dropped, 2u);
  EXPECT_EQ(stats.refused, 4u);
}

// The server counts a user as held by a shuffler from the moment it vouched
// for it there, before its pieces are read. A view that says every user is
// held (unheld 0) while this shuffler still reads one user's pieces is no
// "all in": taking the batch then left that user behind, alone and below
// the minimum, dropped at the round's deadline (CI, an ASan build: one
// report of 32,561 lost and a round held ten minutes). Nor is a view whose
// waiting users are as many as are held here (others' clients went quiet).
// Every user whose pieces were being read goes in the batch; one whose read
// fails holds nothing back.
TEST(ShufflerCore, AUserVouchedForButStillBeingReadIsWaitedFor) {
  ShufflerCore shuffler({.min_batch = 2, .flush_before = 1000ms});
  const auto yes = [] { return Status(); };
  LdpFlCoordinator::Info info = Round(4, 4, 10000);  // 4 waiting: 3 here, 1 at another
  shuffler.Update(info);
  for (std::uint64_t u = 0; u < 2; ++u)
    ASSERT_TRUE(shuffler.Shuffle("a", 4, u, Pieces(u), yes).ok());
  info.unheld = 0;  // the fourth is held by the other shuffler
  const auto read = [&]() -> std::optional<std::vector<std::string>> {
    shuffler.Update(info);  // the timer's view, fetched after the vouch
    EXPECT_FALSE(shuffler.TakeBatch().has_value()) << "user 2 is still being read";
    return Pieces(2);
  };
  ASSERT_TRUE(shuffler.Receive("a", 4, 2, read, yes).ok());
  auto batch = shuffler.TakeBatch();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->contributors.size(), 3u);
  // Nor when the server counts fewer waiting than are held here (their
  // clients went quiet) while a user's pieces are being read.
  shuffler.Update(Round(5, 4, 10000));
  for (std::uint64_t u = 0; u < 2; ++u)
    ASSERT_TRUE(shuffler.Shuffle("a", 5, u, Pieces(u), yes).ok());
  const auto read_quiet = [&]() -> std::optional<std::vector<std::string>> {
    shuffler.Update(Round(5, 2, 10000));  // 2 waiting, 2 held, 1 being read
    EXPECT_FALSE(shuffler.TakeBatch().has_value()) << "user 2 is still being read";
    return Pieces(2);
  };
  ASSERT_TRUE(shuffler.Receive("a", 5, 2, read_quiet, yes).ok());
  batch = shuffler.TakeBatch();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->contributors.size(), 3u);
  // A read that fails after the vouch holds no batch back.
  shuffler.Update(Round(6, 4, 10000));
  for (std::uint64_t u = 0; u < 2; ++u)
    ASSERT_TRUE(shuffler.Shuffle("a", 6, u, Pieces(u), yes).ok());
  info.round = 6;
  shuffler.Update(info);
  const auto unreadable = [&]() -> std::optional<std::vector<std::string>> {
    EXPECT_FALSE(shuffler.TakeBatch().has_value());
    return std::nullopt;
  };
  EXPECT_FALSE(shuffler.Receive("a", 6, 2, unreadable, yes).ok());
  batch = shuffler.TakeBatch();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->contributors.size(), 2u);
}

TEST(PackPieces, RoundTripsAndRefusesTruncation) {
  const std::vector<std::string> pieces = {"", "abc", std::string(300, '\0')};
  const std::string packed = PackPieces(pieces);
  EXPECT_EQ(UnpackPieces(packed).value(), pieces);
  EXPECT_FALSE(UnpackPieces(packed.substr(0, packed.size() - 1)).ok());
  EXPECT_FALSE(UnpackPieces("abc").ok());
}

}  // namespace
}  // namespace fedldp
