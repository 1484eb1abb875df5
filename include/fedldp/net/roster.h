// The clients a deployed server knows (FedSel and LDP-FL alike): joining
// with an enrolment token, finding a client again after a restart, and
// telling which users' clients have gone quiet. Not thread-safe: the owning
// coordinator holds its lock.
#ifndef FEDLDP_NET_ROSTER_H_
#define FEDLDP_NET_ROSTER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/store/server_state.h"

namespace fedldp {

struct RoundPolicy {
  std::chrono::milliseconds deadline{10000};
  std::chrono::milliseconds stale_after{2000};
  std::chrono::milliseconds retry{20};  // how often clients poll
  double min_participation = 0.5;
  // Training starts once this many users have joined (0: all the task's);
  // later joiners take part from the round after they join. A user whose
  // client has not joined is not waited for.
  std::uint64_t min_users = 0;
  // Tests only (serve never sets it): the schedule (who is in which round)
  // from DeploymentRng(test_seed, ...) instead of SecureRng, so that an
  // in-process deployment with seeded participants replays bit for bit.
  std::optional<std::uint64_t> test_seed;
};
// OK if the policy is usable, else why not.
Status CheckRoundPolicy(const RoundPolicy& policy);

// A coordinator's task identity is its state's: sets an empty `deployment`
// to state.deployment(); OK, or why the two differ.
Status AdoptDeployment(std::string& deployment, const ServerState& state);

// A client's call is refused with a Status whose code says why:
//   kUnauthenticated     the token is not enrolled (or, but for Join, has not joined);
//   kFailedPrecondition  not the token's live session: join again;
//   kAlreadyExists       Join: another client's session on the token is live;
//   kInvalidArgument     a user count the task has no room for, a user that is
//                        not the client's, or another refusal.

struct Joined {
  Status status;  // not OK: refused
  std::uint64_t first = 0, users = 0;
  std::string session;  // the live session it opened
  bool ok() const { return status.ok(); }
};

// A call's client, or why it is refused.
struct Access {
  Status status;
  ServerState::Client client;
  bool ok() const { return status.ok(); }
};

// OK if the joined clients' users are what joining gives them: ranges of
// one or more users, one after another from user 0, within the task's
// `task_users` (a range past them, or two that overlap, is an edited file).
Status CheckJoined(const ServerState& state, std::uint64_t task_users);

// A client's answer to Withdraw.
struct Withdrawal {
  Status status;
  std::uint64_t withdrawn = 0;  // of the client's users, in all
  bool ok() const { return status.ok(); }
};
// What both coordinators do on Withdraw, under their lock: checks that
// `users` are the calling client's (`access`, from Roster::Enter), records
// the new ones in `state`, then in `withdrawn`; *line says what changed
// ("" if nothing), for the log. Throws if the state cannot be written.
Withdrawal WithdrawUsers(ServerState& state, const Access& access,
                         std::span<const std::uint64_t> users, std::uint64_t task_users,
                         std::set<std::uint64_t>& withdrawn, std::string* line);
// The users withdrawn in `state`, into `withdrawn`; OK or why they are unusable.
Status LoadWithdrawn(const ServerState& state, std::uint64_t task_users,
                     std::set<std::uint64_t>& withdrawn);

// ---- The shuffler's side of a server (LDP-FL, and FedSel with --shuffle).

// The shuffler's view of the server's round (RoundInfo).
struct ShuffleInfo {
  std::uint64_t round = 0;
  std::uint64_t expected = 0;            // users drawn, less those withdrawn
  std::vector<std::uint64_t> delivered;  // users whose pieces the server has
  bool listed = true;                    // delivered was asked for, and is whole
  std::uint64_t waiting = 0;             // users not delivered whose clients still poll
  std::uint32_t deadline_ms = 0;
  bool open = false, finished = false;
  std::uint64_t chunks = 0;       // pieces per report
  std::uint64_t piece_bytes = 0;  // the largest sealed piece the server takes (0: not said)
  std::uint64_t batch = 1;        // users per batch, at least: the statement's n
  std::uint64_t unheld = 0;       // of waiting, users no shuffler has vouched for
};

// A batch the shuffler forwards: who contributed (sorted), never which
// piece is whose.
struct ShuffleDelivery {
  std::uint64_t round = 0;
  std::vector<std::pair<std::string, std::uint64_t>> contributors;  // (token, user)
  std::vector<std::vector<std::string>> pieces;  // per chunk, one sealed piece each
};

struct ShuffleDelivered {
  bool accepted = false;
  std::string reason;
  std::uint64_t pieces_accepted = 0, pieces_rejected = 0;
};

// ServerState keeps a shuffled round's records by a number: below
// kPieceKey a user whose pieces were delivered (no bytes); from kPieceKey
// on, one accepted piece each.
inline constexpr std::uint64_t kPieceKey = std::uint64_t{1} << 48;

class Roster {
 public:
  using Clock = std::chrono::steady_clock;
  // `started`: when this process began to listen for the task's clients.
  explicit Roster(std::uint64_t task_users, Clock::time_point started = Clock::now())
      : task_users_(task_users), started_(started) {}

  // Enrolled tokens only; a new client gets the next free user numbers if
  // the task has room. Opens a new session for the token, ending any other,
  // unless another session is live (heard from within `stale_after`): one
  // token, one client at a time. On success `line` says who joined, for the
  // log.
  Joined Join(ServerState& state, std::string_view token, std::uint64_t users,
              Clock::time_point now, std::chrono::milliseconds stale_after, std::string* line);
  // The client of a call that carries `session`, which must be the token's
  // live one; the client counts as heard from at `now`.
  Access Enter(ServerState& state, std::string_view token, std::string_view session,
               Clock::time_point now);
  // Whether a call may be heard at all, before its body is read: `token` is
  // enrolled (Join: no session) or `session` is its live one (every other
  // call). Refuses as Join and Enter would; changes nothing.
  Access Admit(const ServerState& state, std::string_view token,
               std::optional<std::string_view> session) const;
  // A client that joined (in this process, or before a restart), whatever
  // its session: for what the shuffler names.
  std::optional<ServerState::Client> Find(ServerState& state, std::string_view token);
  // The client of `token` if this process has seen it join (no state read).
  std::optional<ServerState::Client> Cached(std::string_view token) const;
  // The client whose users begin at `first` got a new token: whatever this
  // process knows of it under its old one (its live session) is gone.
  void Forget(std::uint64_t first);
  // A client that stops cleanly says so (WithdrawRequest.leaving): its
  // session ends, and its users are away, not waited for, until it joins
  // again. Refused as Enter refuses.
  Access Leave(ServerState& state, std::string_view token, std::string_view session);
  // The user's client left (Leave) and has not joined since: a lookup in
  // the clients that left (Done asks it of every user of a round, on every
  // report).
  bool Left(std::uint64_t user) const;
  // How many users such clients host.
  std::uint64_t LeftUsers() const { return left_users_; }
  // The client hosting `user` has not polled for `stale_after`. A client
  // not heard from since this process started (after a restart) is quiet
  // once the process has listened for stale_after + kReconnectAllowance: a
  // client that does not come back must not hold every round until its
  // deadline, and one that does must not be cut off while it reconnects.
  bool Quiet(std::uint64_t user, Clock::time_point now,
             std::chrono::milliseconds stale_after) const;
  // Clients that opened a session in this process.
  std::size_t sessions() const;
  // Every client is quiet (Quiet's rule): none is there to answer a round.
  bool AllQuiet(Clock::time_point now, std::chrono::milliseconds stale_after) const;
  // How long a client may take to find a restarted server: a call on a dead
  // connection runs to its 3 s deadline, then the retry backoff (<= 1 s)
  // and gRPC's reconnect backoff (<= 1 s) follow. Seen: 6 s in the SIGKILL
  // end-to-end test; 10 s leaves a margin.
  static constexpr std::chrono::seconds kReconnectAllowance{10};
  // Why a round opened at `opened` should close now, or nullptr: its
  // deadline passed, or every user of `assigned` not `in` belongs to a
  // quiet client (one not heard from for stale_after). A client that
  // vanished is waited for once, until it is quiet, not stale_after again
  // in every later round.
  const char* CloseReason(Clock::time_point opened, const RoundPolicy& policy,
                          Clock::time_point now, std::span<const std::uint64_t> assigned,
                          const std::function<bool(std::uint64_t)>& in) const;

 private:
  struct Entry {
    ServerState::Client client;
    Clock::time_point seen{};  // {}: not heard from in this process
    std::string session;       // "": none open in this process
  };
  const std::uint64_t task_users_;
  const Clock::time_point started_;
  // Looked up by a call's token as it is (a string_view), not a copy.
  struct TokenHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Entry, TokenHash, std::equal_to<>> clients_;
  // The clients by their first user, to find a user's client in O(log n):
  // a round's close check asks for each of its users (a scan of every
  // client each was 10^10 steps a check with 1,000,000 users and 10,000
  // clients).
  std::map<std::uint64_t, std::string> token_of_first_;
  void Put(std::string_view token, Entry entry);
  const Entry* EntryOf(std::uint64_t user) const;
  // Clients that stopped cleanly (Leave) and have not joined since: first
  // user -> users, and their users in all.
  std::map<std::uint64_t, std::uint64_t> left_;
  std::uint64_t left_users_ = 0;
  void Returned(std::uint64_t first);  // a client that left is back (or forgotten)
};

// What both coordinators check under their lock before the shuffler may
// hand over `user`'s report for `round` (Vouch): the caller (`access`, from
// Roster::Enter) hosts the user, the round is the open one (`open_round`,
// if any), the user is drawn for it (`assigned`, sorted) and neither
// delivered nor withdrawn. OK, or why not.
Status CheckVouch(const Access& access, std::uint64_t user, std::uint64_t round,
                  std::optional<std::uint64_t> open_round, bool finished,
                  std::span<const std::uint64_t> assigned, const std::set<std::uint64_t>& delivered,
                  const std::set<std::uint64_t>& withdrawn);

// What both coordinators check of a delivered batch before opening a piece:
// it is for the open round, every contributor is a user of the client its
// token names, drawn for the round (`assigned`, sorted), delivered neither
// before nor twice, and every one of `chunks` chunks holds one piece per
// contributor. OK with the users in *users, or the refusal.
Status CheckDelivery(const ShuffleDelivery& batch, std::uint64_t open_round, Roster& roster,
                     ServerState& state, std::span<const std::uint64_t> assigned,
                     const std::set<std::uint64_t>& delivered, std::size_t chunks,
                     std::set<std::uint64_t>* users);

// The open round as the shuffler sees it: of the `assigned` users, those
// `delivered` and those not `gone` (withdrawn, or away: their client left
// or never joined) are expected; of those waited for, the ones not
// `vouched` are unheld.
ShuffleInfo OpenRoundInfo(std::uint64_t round, std::uint64_t chunks,
                          std::span<const std::uint64_t> assigned,
                          const std::set<std::uint64_t>& delivered,
                          const std::function<bool(std::uint64_t)>& gone, const Roster& roster,
                          std::chrono::milliseconds stale_after,
                          std::chrono::steady_clock::time_point deadline,
                          std::chrono::steady_clock::time_point now,
                          const std::set<std::uint64_t>& vouched);

}  // namespace fedldp

#endif  // FEDLDP_NET_ROSTER_H_
