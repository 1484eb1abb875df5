#include "fedldp/net/roster.h"

#include <algorithm>

namespace fedldp {

std::string CheckRoundPolicy(const RoundPolicy& policy) {
  if (!(policy.min_participation > 0 && policy.min_participation <= 1)) {
    return "minimum participation must be in (0, 1]";
  }
  if (policy.deadline.count() <= 0) return "the round deadline must be positive";
  if (policy.stale_after.count() <= 0) {
    return "the time after which a client counts as quiet must be positive";
  }
  if (policy.retry.count() <= 0) return "the poll interval must be positive";
  return "";
}

Joined Roster::Join(ServerState& state, std::string_view token, std::uint64_t users,
                    Clock::time_point now, std::string* line) {
  Joined out;
  if (!state.KnownToken(token)) {
    out.error = "unknown token (not enrolled with this server)";
    return out;
  }
  if (!state.FindClient(token)) {
    const std::uint64_t joined = state.joined_users();
    if (users > task_users_ - std::min(joined, task_users_)) {
      out.error = "the task has " + std::to_string(task_users_) + " users and " +
                  std::to_string(joined) + " have joined; no room for " + std::to_string(users);
      return out;
    }
  }
  auto client = state.Join(token, users);
  if (!client.ok()) {
    out.error = client.error();
    return out;
  }
  out.first = client->first;
  out.users = client->users;
  clients_[std::string(token)] = {*client, now};
  *line = "client joined: users " + std::to_string(out.first) + ".." +
          std::to_string(out.first + out.users - 1) + " (" +
          std::to_string(state.joined_users()) + " of " + std::to_string(task_users_) + ")";
  return out;
}

std::optional<ServerState::Client> Roster::Find(ServerState& state, std::string_view token) {
  const auto it = clients_.find(std::string(token));
  if (it != clients_.end()) return it->second.first;
  auto client = state.FindClient(token);  // joined before a restart
  if (client) clients_[std::string(token)] = {*client, Clock::time_point{}};
  return client;
}

void Roster::Seen(std::string_view token, Clock::time_point now) {
  const auto it = clients_.find(std::string(token));
  if (it != clients_.end()) it->second.second = now;
}

bool Roster::Quiet(std::uint64_t user, Clock::time_point now,
                   std::chrono::milliseconds stale_after) const {
  for (const auto& [token, entry] : clients_) {
    const auto& [client, seen] = entry;
    if (user >= client.first && user < client.first + client.users) {
      if (seen == Clock::time_point{}) break;  // found again, not heard from yet
      return now - seen >= stale_after;
    }
  }
  // Not heard from since this process started (training runs only once
  // every user joined, so the user's client joined before a restart).
  return now - started_ >= stale_after + kReconnectAllowance;
}

const char* Roster::CloseReason(Clock::time_point opened, const RoundPolicy& policy,
                                Clock::time_point now, std::span<const std::uint64_t> assigned,
                                const std::function<bool(std::uint64_t)>& in) const {
  if (now >= opened + policy.deadline) return "deadline";
  // A round just opened gives its clients stale_after to show up.
  if (now < opened + policy.stale_after) return nullptr;
  for (const std::uint64_t user : assigned) {
    if (!in(user) && !Quiet(user, now, policy.stale_after)) return nullptr;
  }
  return "the missing users' clients went quiet";
}

}  // namespace fedldp
