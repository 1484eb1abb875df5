// The clients a deployed server knows (FedSel and LDP-FL alike): joining
// with an enrolment token, finding a client again after a restart, and
// telling which users' clients have gone quiet. Not thread-safe: the owning
// coordinator holds its lock.
#ifndef FEDLDP_NET_ROSTER_H_
#define FEDLDP_NET_ROSTER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "fedldp/store/server_state.h"

namespace fedldp {

struct RoundPolicy {
  std::chrono::milliseconds deadline{10000};
  std::chrono::milliseconds stale_after{2000};
  std::chrono::milliseconds retry{20};  // how often clients poll
  double min_participation = 0.5;
};
// "" if the policy is usable, else why not.
std::string CheckRoundPolicy(const RoundPolicy& policy);

struct Joined {
  std::string error;  // set: refused
  std::uint64_t first = 0, users = 0;
};

class Roster {
 public:
  using Clock = std::chrono::steady_clock;
  // `started`: when this process began to listen for the task's clients.
  explicit Roster(std::uint64_t task_users, Clock::time_point started = Clock::now())
      : task_users_(task_users), started_(started) {}

  // Enrolled tokens only; a new client gets the next free user numbers if
  // the task has room. On success `line` says who joined, for the log.
  Joined Join(ServerState& state, std::string_view token, std::uint64_t users,
              Clock::time_point now, std::string* line);
  // A client that joined (in this process, or before a restart).
  std::optional<ServerState::Client> Find(ServerState& state, std::string_view token);
  void Seen(std::string_view token, Clock::time_point now);
  // The client hosting `user` has not polled for `stale_after`. A client
  // not heard from since this process started (after a restart) is quiet
  // once the process has listened for stale_after + kReconnectAllowance: a
  // client that does not come back must not hold every round until its
  // deadline, and one that does must not be cut off while it reconnects.
  bool Quiet(std::uint64_t user, Clock::time_point now,
             std::chrono::milliseconds stale_after) const;
  // How long a client may take to find a restarted server: a call on a dead
  // connection runs to its 3 s deadline, then the retry backoff (<= 1 s)
  // and gRPC's reconnect backoff (<= 1 s) follow. Seen: 6 s in the SIGKILL
  // end-to-end test; 10 s leaves a margin.
  static constexpr std::chrono::seconds kReconnectAllowance{10};
  // Why a round opened at `opened` should close now, or nullptr: its
  // deadline passed, or (after stale_after) every user of `assigned` not
  // `in` belongs to a quiet client.
  const char* CloseReason(Clock::time_point opened, const RoundPolicy& policy, Clock::time_point now,
                          std::span<const std::uint64_t> assigned,
                          const std::function<bool(std::uint64_t)>& in) const;

 private:
  const std::uint64_t task_users_;
  const Clock::time_point started_;
  std::unordered_map<std::string, std::pair<ServerState::Client, Clock::time_point>> clients_;
};

}  // namespace fedldp

#endif  // FEDLDP_NET_ROSTER_H_
