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
  explicit Roster(std::uint64_t task_users) : task_users_(task_users) {}

  // Enrolled tokens only; a new client gets the next free user numbers if
  // the task has room. On success `line` says who joined, for the log.
  Joined Join(ServerState& state, std::string_view token, std::uint64_t users,
              Clock::time_point now, std::string* line);
  // A client that joined (in this process, or before a restart).
  std::optional<ServerState::Client> Find(ServerState& state, std::string_view token);
  void Seen(std::string_view token, Clock::time_point now);
  // The client hosting `user` has not polled for `stale_after`. A client
  // not heard from since this process started (a restart) is not judged.
  bool Quiet(std::uint64_t user, Clock::time_point now,
             std::chrono::milliseconds stale_after) const;
  // Why a round opened at `opened` should close now, or nullptr: its
  // deadline passed, or (after stale_after) every user of `assigned` not
  // `in` belongs to a quiet client.
  const char* CloseReason(Clock::time_point opened, const RoundPolicy& policy, Clock::time_point now,
                          std::span<const std::uint64_t> assigned,
                          const std::function<bool(std::uint64_t)>& in) const;

 private:
  const std::uint64_t task_users_;
  std::unordered_map<std::string, std::pair<ServerState::Client, Clock::time_point>> clients_;
};

}  // namespace fedldp

#endif  // FEDLDP_NET_ROSTER_H_
