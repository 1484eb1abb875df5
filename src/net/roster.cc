#include "fedldp/net/roster.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "fedldp/base/checked.h"
#include "fedldp/random/secure_rng.h"

namespace fedldp {

namespace {
constexpr char kUnknownToken[] = "unknown token (not enrolled with this server)";
}  // namespace

Status CheckRoundPolicy(const RoundPolicy& policy) {
  if (!(policy.min_participation > 0 && policy.min_participation <= 1)) {
    return Error{"minimum participation must be in (0, 1]"};
  }
  if (policy.deadline.count() <= 0) return Error{"the round deadline must be positive"};
  if (policy.stale_after.count() <= 0) {
    return Error{"the time after which a client counts as quiet must be positive"};
  }
  if (policy.retry.count() <= 0) return Error{"the poll interval must be positive"};
  return {};
}

Status AdoptDeployment(std::string& deployment, const ServerState& state) {
  if (deployment.empty()) deployment = state.deployment();
  if (deployment == state.deployment()) return {};
  return Error{"the task names deployment " + deployment + " but the state file is deployment " +
               state.deployment()};
}

Withdrawal WithdrawUsers(ServerState& state, const Access& access,
                         std::span<const std::uint64_t> users, std::uint64_t task_users,
                         std::set<std::uint64_t>& withdrawn, std::string* line) {
  Withdrawal out;
  line->clear();
  if (!access.ok()) {
    out.status = access.status;
    return out;
  }
  const ServerState::Client& client = access.client;
  const auto mine = [&](std::uint64_t u) {
    return u >= client.first && u - client.first < client.users;
  };
  std::set<std::uint64_t> fresh;
  for (const std::uint64_t user : users) {
    if (!mine(user)) {
      out.status = Error{"user " + std::to_string(user) + " is not this client's",
                         ErrorCode::kInvalidArgument};
      return out;
    }
    if (!withdrawn.contains(user)) fresh.insert(user);
  }
  if (!fresh.empty()) {
    const std::vector<std::uint64_t> list(fresh.begin(), fresh.end());
    if (Status s = state.Withdraw(list); !s.ok()) {
      throw std::runtime_error("cannot record withdrawn users: " + s.error());
    }
    withdrawn.insert(fresh.begin(), fresh.end());
    *line = std::to_string(fresh.size()) + " user(s) withdrawn, their budget spent (" +
            std::to_string(withdrawn.size()) + " of " + std::to_string(task_users) + " in all)";
  }
  out.withdrawn =
      static_cast<std::uint64_t>(std::count_if(withdrawn.begin(), withdrawn.end(), mine));
  return out;
}

Status LoadWithdrawn(const ServerState& state, std::uint64_t task_users,
                     std::set<std::uint64_t>& withdrawn) {
  auto loaded = state.Withdrawn();
  if (!loaded.ok()) return Error{loaded.error(), loaded.code()};
  for (const std::uint64_t u : *loaded) {
    if (u >= task_users) return Error{"the state file's withdrawn users are not the task's"};
    withdrawn.insert(u);
  }
  return {};
}

Status CheckJoined(const ServerState& state, std::uint64_t task_users) {
  auto clients = state.Clients();
  if (!clients.ok()) return Error{clients.error(), clients.code()};
  std::uint64_t next = 0;
  for (const ServerState::Client& c : *clients) {
    const auto end = CheckedAdd(c.first, c.users);
    if (c.users == 0 || c.first != next || !end || *end > task_users) {
      return Error{"the state file's clients are not the task's: a client holds users " +
                   std::to_string(c.first) + " and " + std::to_string(c.users) +
                   " more, where joining gives users " + std::to_string(next) +
                   " onward of the task's " + std::to_string(task_users)};
    }
    next = *end;
  }
  return {};
}

Joined Roster::Join(ServerState& state, std::string_view token, std::uint64_t users,
                    Clock::time_point now, std::chrono::milliseconds stale_after,
                    std::string* line) {
  Joined out;
  if (!state.KnownToken(token)) {
    out.status = Error{kUnknownToken, ErrorCode::kUnauthenticated};
    return out;
  }
  const auto it = clients_.find(token);
  if (it != clients_.end() && !it->second.session.empty() && now - it->second.seen < stale_after) {
    const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.seen);
    out.status =
        Error{"this token is in use by another client, heard from " + std::to_string(ago.count()) +
                  " ms ago: a token serves one client at a time " +
                  "(two would spend its users' budget twice); it is free once that client has " +
                  "been quiet for " + std::to_string(stale_after.count()) + " ms",
              ErrorCode::kAlreadyExists};
    return out;
  }
  const bool rejoin = state.FindClient(token).has_value();
  if (!rejoin) {
    const std::uint64_t joined = state.joined_users();
    if (users > task_users_ - std::min(joined, task_users_)) {
      out.status =
          Error{"the task has " + std::to_string(task_users_) + " users and " +
                    std::to_string(joined) + " have joined; no room for " + std::to_string(users),
                ErrorCode::kInvalidArgument};
      return out;
    }
  }
  auto client = state.Join(token, users);
  if (!client.ok()) {
    out.status = Error{client.error(), ErrorCode::kInvalidArgument};
    return out;
  }
  SecureRng rng;
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  out.first = client->first;
  out.users = client->users;
  out.session = hex;
  Put(token, {*client, now, out.session});
  Returned(client->first);
  *line = std::string(rejoin ? "client joined again" : "client joined") + ": users " +
          std::to_string(out.first) + ".." + std::to_string(out.first + out.users - 1) + " (" +
          std::to_string(state.joined_users()) + " of " + std::to_string(task_users_) + ")";
  return out;
}

Access Roster::Admit(const ServerState& state, std::string_view token,
                     std::optional<std::string_view> session) const {
  Access out;
  if (!session) {
    if (!state.KnownToken(token)) {
      out.status = Error{kUnknownToken, ErrorCode::kUnauthenticated};
    }
    return out;
  }
  const auto it = clients_.find(token);
  if (it == clients_.end() && !state.FindClient(token)) {
    out.status = Error{"unknown client: join first", ErrorCode::kUnauthenticated};
    return out;
  }
  if (it == clients_.end() || it->second.session.empty() || it->second.session != *session) {
    out.status = Error{
        "this session is not the token's live one (the server restarted, or the session went "
        "quiet and another client took the token over): join again",
        ErrorCode::kFailedPrecondition};
    return out;
  }
  out.client = it->second.client;
  return out;
}

Access Roster::Enter(ServerState& state, std::string_view token, std::string_view session,
                     Clock::time_point now) {
  Access out = Admit(state, token, session);
  if (out.ok()) clients_.find(token)->second.seen = now;
  return out;
}

std::optional<ServerState::Client> Roster::Cached(std::string_view token) const {
  const auto it = clients_.find(token);
  if (it == clients_.end()) return std::nullopt;
  return it->second.client;
}

std::optional<ServerState::Client> Roster::Find(ServerState& state, std::string_view token) {
  const auto it = clients_.find(token);
  if (it != clients_.end()) return it->second.client;
  auto client = state.FindClient(token);  // joined before a restart
  if (client) Put(token, {*client, Clock::time_point{}, ""});
  return client;
}

Access Roster::Leave(ServerState& state, std::string_view token, std::string_view session) {
  Access out = Admit(state, token, session);
  if (!out.ok()) return out;
  clients_.find(token)->second.session.clear();
  if (left_.emplace(out.client.first, out.client.users).second) left_users_ += out.client.users;
  return out;
}

void Roster::Returned(std::uint64_t first) {
  if (const auto it = left_.find(first); it != left_.end()) {
    left_users_ -= it->second;
    left_.erase(it);
  }
}

bool Roster::Left(std::uint64_t user) const {
  if (left_.empty()) return false;
  auto it = left_.upper_bound(user);
  if (it == left_.begin()) return false;
  --it;
  return user - it->first < it->second;
}

void Roster::Forget(std::uint64_t first) {
  Returned(first);
  std::erase_if(clients_, [first](const auto& c) { return c.second.client.first == first; });
  token_of_first_.erase(first);
}

void Roster::Put(std::string_view token, Entry entry) {
  token_of_first_[entry.client.first] = std::string(token);
  clients_[std::string(token)] = std::move(entry);
}

const Roster::Entry* Roster::EntryOf(std::uint64_t user) const {
  auto it = token_of_first_.upper_bound(user);
  if (it == token_of_first_.begin()) return nullptr;
  --it;
  const auto entry = clients_.find(it->second);
  if (entry == clients_.end()) return nullptr;
  const ServerState::Client& client = entry->second.client;
  return user - client.first < client.users ? &entry->second : nullptr;
}

std::size_t Roster::sessions() const {
  return static_cast<std::size_t>(std::count_if(
      clients_.begin(), clients_.end(), [](const auto& c) { return !c.second.session.empty(); }));
}

bool Roster::AllQuiet(Clock::time_point now, std::chrono::milliseconds stale_after) const {
  const bool restarted_long_ago = now - started_ >= stale_after + kReconnectAllowance;
  return std::all_of(clients_.begin(), clients_.end(),
                     [&](const auto& c) {
                       const Clock::time_point seen = c.second.seen;
                       return seen == Clock::time_point{} ? restarted_long_ago
                                                          : now - seen >= stale_after;
                     }) &&
         (!clients_.empty() || restarted_long_ago);
}

bool Roster::Quiet(std::uint64_t user, Clock::time_point now,
                   std::chrono::milliseconds stale_after) const {
  const Entry* entry = EntryOf(user);
  if (entry != nullptr && entry->seen != Clock::time_point{}) {
    return now - entry->seen >= stale_after;
  }
  // Not found, or found again and not heard from since this process
  // started: the user's client joined before a restart (a user whose client never joined is away,
  // RoundCoordinator::Away, and no round asks whether it is quiet).
  return now - started_ >= stale_after + kReconnectAllowance;
}

const char* Roster::CloseReason(Clock::time_point opened, const RoundPolicy& policy,
                                Clock::time_point now, std::span<const std::uint64_t> assigned,
                                const std::function<bool(std::uint64_t)>& in) const {
  if (now >= opened + policy.deadline) return "deadline";
  for (const std::uint64_t user : assigned) {
    if (!in(user) && !Quiet(user, now, policy.stale_after)) return nullptr;
  }
  return "the missing users' clients went quiet";
}

Status CheckVouch(const Access& access, std::uint64_t user, std::uint64_t round,
                  std::optional<std::uint64_t> open_round, bool finished,
                  std::span<const std::uint64_t> assigned, const std::set<std::uint64_t>& delivered,
                  const std::set<std::uint64_t>& withdrawn) {
  if (!access.ok()) return access.status;
  const ServerState::Client& client = access.client;
  if (user < client.first || user - client.first >= client.users) {
    return Error{"user " + std::to_string(user) + " is not this client's"};
  }
  if (!open_round) return Error{finished ? "the task is finished" : "no round is open"};
  if (round != *open_round) {
    return Error{"round " + std::to_string(round) + " is not the open round " +
                 std::to_string(*open_round)};
  }
  if (!std::binary_search(assigned.begin(), assigned.end(), user)) {
    return Error{"user " + std::to_string(user) + " does not take part in round " +
                 std::to_string(round)};
  }
  if (delivered.contains(user)) return Error{"already delivered"};
  if (withdrawn.contains(user)) return Error{"user " + std::to_string(user) + " was withdrawn"};
  return {};
}

namespace {
std::string DeliveryRefusal(const ShuffleDelivery& batch, std::uint64_t open_round, Roster& roster,
                            ServerState& state, std::span<const std::uint64_t> assigned,
                            const std::set<std::uint64_t>& delivered, std::size_t chunks,
                            std::set<std::uint64_t>* users) {
  users->clear();
  if (batch.round != open_round) {
    return "wrong round: the batch is for round " + std::to_string(batch.round) +
           ", the open round is " + std::to_string(open_round);
  }
  if (batch.contributors.empty()) return "an empty batch";
  for (const auto& [token, user] : batch.contributors) {
    const auto client = roster.Find(state, token);
    if (!client || user < client->first || user - client->first >= client->users) {
      return "user " + std::to_string(user) + " is not its contributor's";
    }
    if (!std::binary_search(assigned.begin(), assigned.end(), user)) {
      return "user " + std::to_string(user) + " does not take part in this round";
    }
    if (delivered.contains(user) || !users->insert(user).second) {
      return "user " + std::to_string(user) + "'s report was already delivered";
    }
  }
  if (batch.pieces.size() != chunks) {
    return "malformed: " + std::to_string(batch.pieces.size()) + " chunks, the report has " +
           std::to_string(chunks);
  }
  for (const auto& pieces : batch.pieces) {
    if (pieces.size() != users->size()) {
      return "malformed: a chunk with " + std::to_string(pieces.size()) + " pieces for " +
             std::to_string(users->size()) + " contributors";
    }
  }
  return "";
}
}  // namespace

Status CheckDelivery(const ShuffleDelivery& batch, std::uint64_t open_round, Roster& roster,
                     ServerState& state, std::span<const std::uint64_t> assigned,
                     const std::set<std::uint64_t>& delivered, std::size_t chunks,
                     std::set<std::uint64_t>* users) {
  std::string why =
      DeliveryRefusal(batch, open_round, roster, state, assigned, delivered, chunks, users);
  if (why.empty()) return {};
  return Error{std::move(why)};
}

ShuffleInfo OpenRoundInfo(std::uint64_t round, std::uint64_t chunks,
                          std::span<const std::uint64_t> assigned,
                          const std::set<std::uint64_t>& delivered,
                          const std::function<bool(std::uint64_t)>& gone, const Roster& roster,
                          std::chrono::milliseconds stale_after,
                          std::chrono::steady_clock::time_point deadline,
                          std::chrono::steady_clock::time_point now,
                          const std::set<std::uint64_t>& vouched) {
  ShuffleInfo info;
  info.round = round;
  info.open = true;
  info.chunks = chunks;
  for (const std::uint64_t user : assigned) {
    const bool in = delivered.contains(user);
    if (!in && gone(user)) continue;  // withdrawn or away: not expected
    ++info.expected;
    if (in || roster.Quiet(user, now, stale_after)) continue;
    ++info.waiting;
    if (!vouched.contains(user)) ++info.unheld;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
  info.deadline_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(0, left.count()));
  return info;
}

}  // namespace fedldp
