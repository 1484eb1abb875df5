// The FedSel server of a deployment as plain logic (no network): users join
// through their clients, rounds are scheduled as in the simulator (every
// epoch visits all N users in a fresh random order, cut into rounds by
// FedSelPlan::Round), reports pass the same ReportGate and FedSelAggregator
// the simulator's server uses (for the vector variants, the ReportGate of the
// plan's VectorRandomizer and the mean of the reports), and every
// acknowledged report and closed round is in ServerState first.
//
// Variants: the two-stage ones, and the vector randomizers with pure eps-LDP
// reports that need no shared public seed: privunitg, fastprojunit and
// twopoint. The model is the last iterate (a task's tail_average is refused:
// the running mean is not in the server state).
//
// Sampled rounds (config.sample_clients): every round's users are m of the
// N drawn anew with the secure generator (SampleClients; committed before the
// round opens, so a restart resumes the same round), epochs x round(N / m)
// rounds in all. A user may then be drawn more often than `epochs` times:
// its client's ledger refuses a report past the user's budget and withdraws
// the user, whom no round waits for again (the simulator's "declined").
//
// Shuffled rounds (config.shuffle): clients hand their reports, sealed to
// the server's key (`public_key`), to the shuffler (ShufflerCore), which
// delivers each round's reports in batches of its own order, naming the
// contributors but never which report is whose. The server opens every
// report and passes it through the same gate and aggregate as a submitted
// one; Submit is refused. A report is one piece (one chunk): the whole
// report, so that the gate checks it whole (the two-point's +-B, a
// two-stage report's index and value). The server never learns whose
// report it reads, which the shuffled privacy statement rests on.
// Sampled rounds are refused with the shuffler: the server draws the sample,
// and amplification by sampling needs it hidden from the server.
//
// Rounds and faults:
// - A round closes as soon as all its users have reported.
// - It also closes early when every missing user belongs to a client that
//   has not polled for `stale_after` (it dropped out), and at the latest at
//   its deadline (a client that hangs).
// - Closing without all reports updates the model only if at least
//   `min_participation` of the round's users reported; otherwise the round
//   passes without an update (and says so).
// - The model step divides by the reports received: the mean of those.
// - Users a client withdrew (their budget is spent) are not waited for, nor
//   asked again, nor counted in the minimum participation.
//
// Sessions: a token holds one live session (Roster::Join); polls, reports
// and withdrawals must carry it. No user is counted twice in a round, and
// every user is in one round per epoch: the server counts at most `epochs`
// reports per user, the number the task's budget pays for, whatever its
// clients do (with sampled rounds, the ledgers keep that count).
//
// Thread-safe: the network service calls it from many threads; Tick is
// called by a timer. `now` is passed in so tests control time.
#ifndef FEDLDP_NET_FEDSEL_COORDINATOR_H_
#define FEDLDP_NET_FEDSEL_COORDINATOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fedldp/fl/fedsel.h"
#include "fedldp/net/roster.h"
#include "fedldp/net/round_coordinator.h"
#include "fedldp/store/server_state.h"
#include "fedldp/wire/report_codec.h"
#include "fedldp/wire/sealed_box.h"

namespace fedldp {

namespace net_internal {
class FedSelMethod;  // the variant's reports, both sides (src/net/fedsel_method.h)
}  // namespace net_internal

// What the server announces: clients rebuild the randomizer from it.
struct FedSelTaskSpec {
  std::string id;          // the task's name, for people
  std::string deployment;  // the server state's identity (ServerState::deployment)
  FedSelConfig config;
  std::uint64_t users = 0;      // N
  std::uint64_t dimension = 0;  // d
  std::string public_key;       // config.shuffle: the server's, 32 bytes
  double central_delta = 1e-6;  // config.shuffle: the statement's delta per user in total
  // The two classes as the server's file names them (TaskData); empty for a
  // built-in dataset.
  std::vector<std::string> classes;
};

// What a client's ledger files a task's reports under: its name and the
// deployment, so that entries of one server are never read for another's.
std::string LedgerTaskKey(std::string_view id, std::string_view deployment);
// OK if a task announced with this deployment identity may be charged to a
// ledger, else why not.
Status CheckAnnouncedDeployment(std::string_view deployment);

class FedSelCoordinator : public RoundCoordinator {
 public:
  // Called when an epoch ends (epoch counts from 1), with the model. It runs
  // under the coordinator's lock, where polls wait: keep it quick (copy the
  // model; evaluate elsewhere), or clients go unheard and are judged quiet.
  using OnEpoch = std::function<void(std::uint64_t, std::span<const double>)>;

  // OK if the task and policy can be served, else why not: what Create
  // checks first. Call it before writing the task into a state file.
  static Status Check(const FedSelTaskSpec& spec, const RoundPolicy& policy);

  // Resumes from `state` if it holds a snapshot of this task. The spec's
  // deployment is the state's (filled in when empty; another is an error).
  static Result<std::unique_ptr<FedSelCoordinator>> Create(const FedSelTaskSpec& spec,
                                                           const RoundPolicy& policy,
                                                           ServerState state, Log log = {},
                                                           OnEpoch on_epoch = {},
                                                           ServerKeys keys = {});
  ~FedSelCoordinator() override;

  // Join, Admit, Withdraw, Vouch, RoundInfo, Tick, changes and weights:
  // the shared round lifecycle (round_coordinator.h).
  using Joined = fedldp::Joined;
  using Withdrawal = fedldp::Withdrawal;
  using Poll = RoundPoll;
  Poll PollRound(std::string_view token, std::string_view session, Clock::time_point now);

  struct Verdict {
    bool accepted = false;
    std::string reason;
  };
  struct Submitted {
    Status status;                  // not OK: refused (roster.h)
    std::vector<Verdict> verdicts;  // one per report
    // With group commit: reply only once WhenDurable(ticket) calls back
    // (the accepted reports, or the counted ones a resend repeats, are on
    // disk). 0: at once.
    std::uint64_t ticket = 0;
    bool ok() const { return status.ok(); }
  };
  Submitted Submit(std::string_view token, std::string_view session,
                   std::span<const std::pair<std::uint64_t, std::string>> reports,
                   Clock::time_point now);

  // The shuffler's (config.shuffle): a batch of sealed reports (one chunk): each is opened, gated
  // and counted as a submitted one would be, and recorded before the answer.
  ShuffleDelivered Deliver(const ShuffleDelivery& batch, Clock::time_point now);

  struct Stats {
    std::uint64_t round = 0;  // the open round (or rounds run, when finished)
    std::uint64_t epoch = 0;
    std::uint64_t rounds_closed = 0;  // by this process
    std::uint64_t rounds_without_update = 0;
    std::uint64_t accepted = 0;  // reports counted, by this process
    std::uint64_t rejected = 0;
    std::uint64_t batches = 0, batches_refused = 0;  // from the shuffler
    std::uint64_t counted = 0;    // reports in the model, over every run of the server
    std::uint64_t withdrawn = 0;  // users withdrawn, over every run
    bool started = false;
    bool finished = false;
  };
  Stats stats() const;
  const FedSelPlan& plan() const { return plan_; }
  const FedSelTaskSpec& spec() const { return spec_; }

 private:
  FedSelCoordinator(const FedSelTaskSpec& spec, const RoundPolicy& policy, ServerState state,
                    FedSelPlan plan, std::unique_ptr<net_internal::FedSelMethod> method, Log log,
                    OnEpoch on_epoch, ServerKeys keys);
  // The kind of refusal ("users not in the round", for the log) of a report
  // of `client`'s `user` sent where it does not belong, with the reason for
  // the client in `reason`; null if it belongs.
  const char* Misplaced(const ServerState::Client& client, std::uint64_t user,
                        std::string& reason) const;
  // Counts an admitted report into the open round's aggregate.
  void Aggregate(const DecodedReport& report);
  void Start(Clock::time_point now) override;
  bool RoundOpen() const override { return gate_.has_value(); }
  // A report's bytes and its user's number and framing in a SubmitRequest
  // (the same in every round: the task's randomizer's).
  std::uint64_t ReportBytes() const override { return report_bytes_; }
  std::uint64_t PieceBytes() const override { return report_bytes_ + kSealedBoxOverhead; }
  bool Reported(std::uint64_t user) const override { return received_.contains(user); }
  bool Shuffled() const override { return spec_.config.shuffle; }
  std::uint64_t ShuffleBatch() const override {
    return ShuffleBatchOf(spec_.config.shuffle_batch, plan_.smallest_round);
  }
  void CloseRound(Clock::time_point now, const char* why) override;
  bool NextPlace(std::size_t m);
  void NewOrder();
  void DrawSample();  // sampled rounds: the next round's users, first in the order
  void OpenRound(Clock::time_point now);

  const FedSelTaskSpec spec_;
  const FedSelPlan plan_;
  // The variant's reports: how they are gated, added and averaged.
  const std::unique_ptr<net_internal::FedSelMethod> method_;
  const std::uint64_t report_bytes_;
  const OnEpoch on_epoch_;
  const ServerKeys keys_;  // config.shuffle

  // The open round (its users, delivered set and times: the base's).
  std::optional<ReportGate> gate_;
  std::unordered_map<std::uint64_t, std::string> received_;  // user -> bytes ("" if shuffled)
  Stats stats_;
};

}  // namespace fedldp

#endif  // FEDLDP_NET_FEDSEL_COORDINATOR_H_
