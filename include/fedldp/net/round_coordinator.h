// The round lifecycle both deployed servers share (FedSelCoordinator,
// LdpFlCoordinator): clients join through the roster; once every user has
// joined, training starts; each round opens for its users, takes their
// reports (or the shuffler's batches of them), and closes when every user is
// done (reported or withdrawn), when every missing user's client has gone
// quiet, or at its deadline; then the next round opens, or the task is
// finished. Every step is committed to the server state before it is
// acknowledged, under one lock.
//
// Group commit (EnableGroupCommit, the gRPC server's choice): the reports a
// call brings are queued, not written at once, and the call gets a ticket;
// CommitQueued writes everything queued in one transaction, and only then
// calls back those waiting on their tickets (WhenDurable), who may reply.
// A round's close writes the queue before its snapshot. A server killed
// with reports queued has acknowledged none of them: their clients send
// them again.
//
// What differs is the protocol's, behind four hooks called under the lock:
// how training starts and a round closes (its schedule, gate, aggregate and
// model step), whether a round is open for reports, and which users of the
// open round have reported.
#ifndef FEDLDP_NET_ROUND_COORDINATOR_H_
#define FEDLDP_NET_ROUND_COORDINATOR_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/net/roster.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/store/server_state.h"
#include "fedldp/wire/report_codec.h"
#include "fedldp/wire/sealed_box.h"

namespace fedldp {

// What a task needs of a client's side, and what a client brings (its Join
// says): the protocol ("fedsel", "ldpfl"), the features per row of the data
// (0: any, or not said) and whether reports go through a shuffler (unset:
// not said).
struct Participation {
  std::string protocol;
  std::uint64_t dimension = 0;
  std::optional<bool> shuffled;
};
// OK if a client bringing `client` can take part in task `task_id` needing
// `task`, else one sentence telling its operator what to change. Checked at
// Join, before the client counts as joined.
Status CheckParticipation(std::string_view task_id, const Participation& task,
                          const Participation& client);

// A client's poll: what it should do now.
struct RoundPoll {
  enum class State { kWaiting, kRound, kFinished };
  Status status;  // not OK: refused (roster.h says what each code means)
  State state = State::kWaiting;
  std::uint64_t round = 0;
  std::vector<double> weights;       // kRound
  std::vector<std::uint64_t> users;  // kRound: this client's users in the round
  std::uint32_t deadline_ms = 0;
  std::uint32_t retry_ms = 0;
  bool ok() const { return status.ok(); }
};

class RoundCoordinator {
 public:
  using Clock = std::chrono::steady_clock;
  using Log = std::function<void(const std::string&)>;

  RoundCoordinator(const RoundCoordinator&) = delete;
  RoundCoordinator& operator=(const RoundCoordinator&) = delete;

  Joined Join(std::string_view token, std::uint64_t users, Clock::time_point now);
  // Before a call's body is read: Roster::Admit (Join: no session).
  Access Admit(std::string_view token, std::optional<std::string_view> session) const;
  // The client's `users` whose budget is spent: recorded, then no round
  // waits for them. `withdrawn` counts the client's withdrawn users.
  Withdrawal Withdraw(std::string_view token, std::string_view session,
                      std::span<const std::uint64_t> users, Clock::time_point now);
  // The client stops cleanly (WithdrawRequest.leaving): its session ends
  // and its users are away, so the open round and the next ones do not wait
  // for them, until it joins again; their budgets are untouched.
  Status Leave(std::string_view token, std::string_view session, Clock::time_point now);
  // A lost token replaced while the server runs (token_requests.h): the
  // client hosting `user` is known by the token whose hash is `hash_hex`
  // from now on, and its old token's live session ends at once.
  Result<ServerState::Client> ReplaceToken(std::uint64_t user, std::string_view hash_hex);

  // The shuffler's questions. Vouch: OK if the client's live session may
  // hand over this user's report for this round, else why not.
  Status Vouch(std::string_view token, std::string_view session, std::uint64_t user,
               std::uint64_t round);
  // `instance`: the asking shuffler process (RoundInfoRequest.instance);
  // `listed`: with the users delivered in the open round (else none, and
  // not listed).
  ShuffleInfo RoundInfo(Clock::time_point now, std::string_view instance = {}, bool listed = true);

  // A heartbeat (PollRequest.heartbeat): the client is heard from, its
  // session checked, and nothing else. It learns nothing of the round and
  // is not counted as told that the task is over (a client busy handing
  // over pieces ignores the reply: counted, it let the server exit while
  // the client, never told, retried for a day).
  Status Heard(std::string_view token, std::string_view session, Clock::time_point now);

  // Closes the open round if it is complete, its missing users' clients
  // are quiet, or its deadline has passed. Called by a timer.
  void Tick(Clock::time_point now);

  // Grows whenever what a poll answers may change for a waiting client: a
  // round opens, or the task finishes. A server may hold a waiting poll until
  // it moves (read it before polling).
  std::uint64_t changes() const { return changes_.load(); }
  const RoundPolicy& policy() const { return policy_; }
  // The task is finished and every client with a session in this process
  // has been told so (a poll answered FINISHED), and so has every shuffler
  // (RoundInfo) heard from within stale_after, if the task has one: the
  // server may go.
  bool EveryoneKnowsItIsOver() const;
  std::vector<double> weights() const;

  // ---- Group commit.
  // From now on reports are queued (Record returns a ticket > 0).
  void EnableGroupCommit();
  // Calls done(true) once the reports of `ticket` are on disk: now if they
  // are (ticket 0 always is), else from CommitQueued on its thread; or
  // done(false) once they never will be (AbandonWaiters).
  void WhenDurable(std::uint64_t ticket, std::function<void(bool durable)> done);
  // The state cannot be written: calls every waiter, and from now on every
  // new one at once, with false, so that its call is answered (its client
  // sends the reports again once the server restarts).
  void AbandonWaiters();
  // Waits up to `wait` for reports to be queued (or waiters to be due),
  // then `gather` more for others to join them, writes the queue in one
  // transaction and calls the waiters it made durable; throws if the state
  // cannot be written. One thread calls it in a loop; draining, it is
  // called once with no wait.
  void CommitQueued(std::chrono::milliseconds wait, std::chrono::microseconds gather = {});
  // The ticket of the reports queued last (0: none yet).
  std::uint64_t queued_ticket() const { return queued_ticket_.load(); }
  std::uint64_t durable_ticket() const { return durable_ticket_.load(); }
  // Says `line` in the task's log (the server's and its transport's).
  void Say(const std::string& line) const;

  // Who is there, for an operator (net/monitor.h): users joined, withdrawn
  // and away (their client left), clients with a live session, reports and
  // pieces refused by kind, and users by the reports of theirs received in
  // closed rounds (index k: users with k), since this process started; the
  // last is empty for a task of more than kCountedUsers users.
  struct Occupancy {
    std::uint64_t joined = 0, withdrawn = 0, away = 0, sessions = 0, tokens = 0;
    std::map<std::string, std::uint64_t> refused;
    std::vector<std::uint64_t> users_by_reports;
  };
  static constexpr std::uint64_t kCountedUsers = std::uint64_t{1} << 24;
  Occupancy occupancy() const;

  // What one client may send (CallAllowance): an admitted token cannot
  // flood. Bytes: in the open round, its users' reports four times over
  // (resends) and 1 MiB more, counting only what a call carries past
  // kFreeCallBytes; a client that has sent more is refused unread until the
  // next round. Calls: a bucket of `burst` calls refilled at
  // `calls_per_second`, four times the pace the server asks polls at (and
  // at least 8 a second); a client calling faster is refused unread until
  // it slows down. Small calls are bounded by the pace, large ones by the
  // bytes, and a long round (polls every retry) no longer runs a client out
  // of its round's bytes.
  struct Allowance {
    std::uint64_t round = 0;  // the open round, as the schedule counts
    std::uint64_t users = 0;  // the client's (0: it has not joined)
    std::uint64_t bytes = 0;
    double calls_per_second = 8;
    double burst = 256;
  };
  static constexpr std::uint64_t kFreeCallBytes = 4096;
  Allowance AllowanceOf(std::string_view token) const;
  // The largest call a client or the shuffler can need to send: every
  // user's report at once, with 256 bytes each for sealing and framing, and
  // 1 MiB more; 0 where the task cannot say (its reports go to the
  // shuffler, whose batches the server takes up to kMaxMessageBytes).
  // Before, any call of up to 64 MB was read whole.
  std::uint64_t LargestCall() const;

 protected:
  RoundCoordinator(const RoundPolicy& policy, ServerState state, std::uint64_t users, Log log);
  virtual ~RoundCoordinator() = default;

  // ---- The protocol's hooks, called under mu_.
  // Starts training once every user (or RoundPolicy::min_users) has joined
  // (started_ is false).
  virtual void Start(Clock::time_point now) = 0;
  // True while a round takes reports.
  virtual bool RoundOpen() const = 0;
  // True if `user`'s report of the open round is counted (or delivered).
  virtual bool Reported(std::uint64_t user) const = 0;
  // Closes the open round: the model step, the schedule, the commit, and
  // the next round opened, or the task finished.
  virtual void CloseRound(Clock::time_point now, const char* why) = 0;
  // The open round's number as the log shows it (LDP-FL counts from 1).
  virtual std::uint64_t ShownRound() const { return snap_.round; }
  // Whether the shuffler delivers this task's reports, and in how many
  // pieces each.
  virtual bool Shuffled() const { return true; }
  virtual std::size_t Chunks() const { return 1; }
  // The most bytes one user's report of the open round takes in a call to
  // the server (0: reports go to the shuffler).
  virtual std::uint64_t ReportBytes() const { return 0; }
  // The most bytes one sealed piece of a user's report in the open round
  // takes (0: not said); the shuffler holds no larger one.
  virtual std::uint64_t PieceBytes() const { return 0; }
  // The fewest users a shuffler's batch may hold: the n of the task's
  // statement (each report shuffled among at least n). Deliver refuses a
  // smaller batch: a statement of n where a shuffler forwarded fewer (a
  // deadline's flush, a round split among shufflers, clients that dropped
  // out) would claim more than holds.
  virtual std::uint64_t ShuffleBatch() const { return 1; }

  // ---- For the protocols, under mu_.
  // A shuffler's batch checked (CheckDelivery, then at least ShuffleBatch()
  // users): OK with its users in *users, or the refusal.
  Status CheckBatch(const ShuffleDelivery& batch, std::set<std::uint64_t>* users);
  // Reads the withdrawn users and the snapshot back (check: whether it fits
  // the task). True if a snapshot was there (started_ is then true).
  Result<bool> Resume(const std::function<Status(const ServerState::Snapshot&)>& check);
  // The user's client has not joined, or left (Leave) and has not joined
  // again: no round waits for it.
  bool Away(std::uint64_t user) const;
  // Nothing more to wait for from this user in the open round.
  bool Done(std::uint64_t user) const {
    return Reported(user) || withdrawn_.contains(user) || Away(user);
  }
  // How many joined users start training (RoundPolicy::min_users).
  std::uint64_t StartsWith() const { return policy_.min_users == 0 ? users_ : policy_.min_users; }
  void CloseIfComplete(Clock::time_point now);
  // The position in round_users_ of the first user not Done (its size if
  // none). Done users stay done within a round but for one case (an away
  // client's users return when it joins), so the scan resumes where it last
  // stopped and checks every user again only on reaching the end: O(1)
  // amortised a call. Scanning from the start on every submit and tick was
  // quadratic in the round's users (minutes for a round of 1,000,000).
  std::size_t FirstNotDone();
  // A closing round's count: `got` reports of its users, against the
  // policy's minimum share of those who might report (withdrawn users will
  // not: the minimum is of the others). Called once as a round closes: each
  // user who reported has one more report on record (occupancy()).
  struct Tally {
    std::size_t users = 0, got = 0, active = 0, needed = 0;
    bool update = false;  // got > 0 and at least the minimum
  };
  Tally TallyRound(std::size_t got);
  // A poll's answer for the client on `token` and `session`, but for what
  // the protocol adds to a kRound answer.
  RoundPoll PollCommon(std::string_view token, std::string_view session, Clock::time_point now);
  // A shuffled report (or piece) through `gate` under a name of its own:
  // it reaches the server without a sender, so the gate's duplicate check
  // never fires (the shuffler keeps one report per user, and the server one
  // delivery per user). The report, or nullopt with *why.
  std::optional<DecodedReport> AdmitUnnamed(ReportGate& gate, std::string_view plain,
                                            std::string* why);
  // A sealed report (or piece) the shuffler delivered, opened with `keys`
  // and admitted unnamed by `gate`: its plain bytes and the report, or
  // nullopt with the reason counted in `rejected`.
  struct Opened {
    std::string plain;
    DecodedReport report;
  };
  std::optional<Opened> OpenDelivered(ReportGate& gate, const std::string& sealed,
                                      const ServerKeys& keys,
                                      std::map<std::string, std::size_t>& rejected);
  // Says in one line, per reason, how many of a delivery's or a call's
  // `what` ("piece(s)") were rejected in the round people call
  // `round_shown` (a line per report let one call write 200,000 lines).
  // Also counts them by kind (the reason up to its first ':').
  void SayRejected(std::uint64_t round_shown, const char* what,
                   const std::map<std::string, std::size_t>& rejected);
  // The open round's state, reset as it opens.
  void ResetRound(Clock::time_point now);
  // True while the open round waits for absent clients (paused_), said once
  // as it pauses and once as it resumes.
  bool PausedForAbsence(Clock::time_point now);
  // Writes snap_; throws if it cannot: nothing may be acknowledged that is
  // not on disk (a restart resumes from the last commit).
  void Commit();
  // Stores reports of round `round`: written now (then ticket 0), or with
  // group commit queued under a new ticket. Throws if written and the
  // write fails.
  std::uint64_t Record(std::uint64_t round,
                       std::span<const std::pair<std::uint64_t, std::string>> reports);
  // Writes the queued reports (group commit); throws if it cannot.
  void FlushQueued();
  // The generator of a draw of the schedule (`what` tells the draws of one
  // round apart): SecureRng, or the test seed's stream (RoundPolicy).
  std::unique_ptr<Rng> ScheduleRng(std::uint64_t what) const;
  // snap_.order = a uniformly random order of all users (an epoch's).
  void DrawOrder();

  const RoundPolicy policy_;
  const std::uint64_t users_;  // N
  const Log log_;

  mutable std::mutex mu_;
  ServerState state_;
  ServerState::Snapshot snap_;
  bool started_ = false;
  std::vector<std::uint64_t> round_users_;  // the open round's, sorted
  std::set<std::uint64_t> withdrawn_;
  std::uint64_t joined_ = 0;           // users 0 .. joined_ - 1 have joined (state_.joined_users())
  std::set<std::uint64_t> delivered_;  // shuffled: users whose report the shuffler delivered
  // Shuffled: users of the open round some shuffler vouched for (it holds,
  // or read, their report), so that several shufflers know when every user
  // still expected is held by one of them (ShuffleInfo::unheld).
  std::set<std::uint64_t> vouched_;
  std::uint64_t piece_records_ = 0, piece_names_ = 0;
  Clock::time_point opened_{};
  // The open round waits, unclosed, because every client is quiet and it
  // has no report: closing it empty, and the next ones, would run the task
  // out untrained while the clients are away (issue 41).
  bool paused_ = false;
  Roster roster_;
  std::set<std::string> told_over_;               // tokens whose poll was answered FINISHED
  std::map<std::string, std::uint64_t> refused_;  // by kind (SayRejected)
  std::vector<std::uint32_t> reports_of_;         // per user, received (TallyRound)
  // Shufflers by instance: when last heard from, and whether told that the
  // task is over (EveryoneKnowsItIsOver).
  struct ShufflerSeen {
    Clock::time_point heard{};
    bool told_over = false;
  };
  std::map<std::string, ShufflerSeen, std::less<>> shufflers_;
  static constexpr std::size_t kMaxShufflers = 1024;
  // The entry of the shuffler `instance` (its first 64 bytes), heard at
  // `now`; at most kMaxShufflers are kept, the quiet ones dropped first.
  ShufflerSeen& HeardShuffler(std::string_view instance, Clock::time_point now);
  std::size_t done_prefix_ = 0;  // round_users_[0, done_prefix_) were Done when last seen
  std::atomic<std::uint64_t> changes_{0};

 private:
  bool group_commit_ = false;
  std::uint64_t queued_round_ = 0;
  std::vector<std::pair<std::uint64_t, std::string>> queued_;  // under mu_
  std::atomic<std::uint64_t> queued_ticket_{0}, durable_ticket_{0};
  // Who waits for which ticket; wait_mu_ is taken after mu_, never before.
  std::mutex wait_mu_;
  std::condition_variable wake_;
  std::vector<std::pair<std::uint64_t, std::function<void(bool)>>> waiters_;
  bool abandoned_ = false;  // under wait_mu_
};

}  // namespace fedldp

#endif  // FEDLDP_NET_ROUND_COORDINATOR_H_
