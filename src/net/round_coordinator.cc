#include "fedldp/net/round_coordinator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <utility>

#include "fedldp/base/checked.h"

namespace fedldp {

RoundCoordinator::RoundCoordinator(const RoundPolicy& policy, ServerState state,
                                   std::uint64_t users, Log log)
    : policy_(policy),
      users_(users),
      log_(std::move(log)),
      state_(std::move(state)),
      roster_(users) {}

Status CheckParticipation(std::string_view task_id, const Participation& task,
                          const Participation& client) {
  const std::string named = "task " + std::string(task_id);
  if (!client.protocol.empty() && client.protocol != task.protocol) {
    return Error{named + " is " + (task.protocol == "ldpfl" ? "an LDP-FL" : "a FedSel") +
                 " task: start the client with --protocol " + task.protocol};
  }
  if (client.dimension != 0 && task.dimension != 0 && client.dimension != task.dimension) {
    return Error{named + " needs data of " + std::to_string(task.dimension) +
                 " features per row; this client's has " + std::to_string(client.dimension)};
  }
  if (client.shuffled && task.shuffled && *client.shuffled != *task.shuffled) {
    return Error{*task.shuffled ? named +
                                      " takes reports only through the shuffler: start the "
                                      "client with --shuffler HOST:PORT"
                                : named +
                                      " takes reports directly, not through a shuffler: start "
                                      "the client without --shuffler"};
  }
  return {};
}

Joined RoundCoordinator::Join(std::string_view token, std::uint64_t users, Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::string line;
  Joined out = roster_.Join(state_, token, users, now, policy_.stale_after, &line);
  if (!out.ok()) return out;
  Say(line);
  joined_ = state_.joined_users();
  if (!started_ && joined_ >= StartsWith()) {
    if (joined_ < users_) {
      Say("training starts with " + std::to_string(joined_) + " of " + std::to_string(users_) +
          " users joined (--min-users " + std::to_string(policy_.min_users) +
          "); the others take part once they join");
    }
    Start(now);
  }
  return out;
}

Status RoundCoordinator::Leave(std::string_view token, std::string_view session,
                               Clock::time_point now) {
  std::lock_guard lock(mu_);
  const Access access = roster_.Leave(state_, token, session);
  if (!access.ok()) return access.status;
  const ServerState::Client& c = access.client;
  Say("client of users " + std::to_string(c.first) + ".." + std::to_string(c.first + c.users - 1) +
      " stopped; no round waits for its users until it joins again");
  if (started_ && !snap_.finished) CloseIfComplete(now);
  return {};
}

RoundCoordinator::Occupancy RoundCoordinator::occupancy() const {
  std::lock_guard lock(mu_);
  Occupancy o;
  o.joined = joined_;
  o.withdrawn = withdrawn_.size();
  o.away = roster_.LeftUsers();
  o.sessions = roster_.sessions();
  o.tokens = state_.tokens();
  o.refused = refused_;
  for (std::uint64_t u = 0; u < reports_of_.size() && u < joined_; ++u) {
    if (reports_of_[u] >= o.users_by_reports.size()) o.users_by_reports.resize(reports_of_[u] + 1);
    ++o.users_by_reports[reports_of_[u]];
  }
  if (!reports_of_.empty() && o.users_by_reports.empty()) o.users_by_reports = {joined_};
  return o;
}

bool RoundCoordinator::Away(std::uint64_t user) const {
  return user >= joined_ || roster_.Left(user);
}

Result<ServerState::Client> RoundCoordinator::ReplaceToken(std::uint64_t user,
                                                           std::string_view hash_hex) {
  std::lock_guard lock(mu_);
  auto client = state_.ReplaceTokenHash(user, hash_hex);
  if (client.ok()) roster_.Forget(client->first);
  return client;
}

Access RoundCoordinator::Admit(std::string_view token,
                               std::optional<std::string_view> session) const {
  std::lock_guard lock(mu_);
  return roster_.Admit(state_, token, session);
}

RoundCoordinator::Allowance RoundCoordinator::AllowanceOf(std::string_view token) const {
  constexpr std::uint64_t kCalls = 1 << 20;  // joins, polls, withdrawals
  std::lock_guard lock(mu_);
  Allowance a{.round = snap_.round};
  // Twice a call (its admission and its body): the roster's copy, not a
  // prepared and parsed SQLite query each time (a tenth of the server's CPU).
  auto client = roster_.Cached(token);
  if (!client) client = state_.FindClient(token);
  if (client) a.users = client->users;
  a.bytes = CheckedAdd(kCalls, CheckedMul(4 * ReportBytes(), a.users).value_or(UINT64_MAX))
                .value_or(UINT64_MAX);
  const auto retry = std::max<std::int64_t>(1, policy_.retry.count());
  a.calls_per_second = std::max(8.0, 4000.0 / static_cast<double>(retry));
  return a;
}

std::uint64_t RoundCoordinator::LargestCall() const {
  std::lock_guard lock(mu_);
  const std::uint64_t report = ReportBytes();
  if (report == 0) return 0;
  return CheckedAdd(std::uint64_t{1} << 20, CheckedMul(report + 256, users_).value_or(UINT64_MAX))
      .value_or(UINT64_MAX);
}

Withdrawal RoundCoordinator::Withdraw(std::string_view token, std::string_view session,
                                      std::span<const std::uint64_t> users, Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::string line;
  const Withdrawal out = WithdrawUsers(state_, roster_.Enter(state_, token, session, now), users,
                                       users_, withdrawn_, &line);
  if (!line.empty()) {
    Say(line);
    CloseIfComplete(now);
  }
  return out;
}

Status RoundCoordinator::Vouch(std::string_view token, std::string_view session, std::uint64_t user,
                               std::uint64_t round) {
  std::lock_guard lock(mu_);
  if (!Shuffled()) return Error{"this task takes reports from clients, not a shuffler"};
  const Access access = roster_.Enter(state_, token, session, Clock::now());
  const bool open = RoundOpen() && !snap_.finished;
  Status vouched = CheckVouch(access, user, round, open ? std::optional(snap_.round) : std::nullopt,
                              snap_.finished, round_users_, delivered_, withdrawn_);
  if (vouched.ok()) vouched_.insert(user);
  return vouched;
}

bool RoundCoordinator::EveryoneKnowsItIsOver() const {
  std::lock_guard lock(mu_);
  if (!snap_.finished || told_over_.size() < roster_.sessions()) return false;
  if (!Shuffled()) return true;
  // Every shuffler heard from lately was told, and at least one was.
  const auto lately = Clock::now() - policy_.stale_after;
  bool told = false;
  for (const auto& [instance, seen] : shufflers_) {
    if (!seen.told_over && seen.heard >= lately) return false;
    told = told || seen.told_over;
  }
  return told;
}

RoundCoordinator::ShufflerSeen& RoundCoordinator::HeardShuffler(std::string_view instance,
                                                                Clock::time_point now) {
  // A shuffler names itself with 32 hex digits; whatever else its token's
  // holder sends costs the server at most kMaxShufflers short entries.
  instance = instance.substr(0, 64);
  if (shufflers_.size() >= kMaxShufflers && !shufflers_.contains(instance)) {
    std::erase_if(shufflers_,
                  [&](const auto& s) { return s.second.heard < now - policy_.stale_after; });
    if (shufflers_.size() >= kMaxShufflers) shufflers_.erase(shufflers_.begin());
  }
  const auto at = shufflers_.try_emplace(std::string(instance)).first;
  at->second.heard = std::max(at->second.heard, now);
  return at->second;
}

ShuffleInfo RoundCoordinator::RoundInfo(Clock::time_point now, std::string_view instance,
                                        bool listed) {
  std::lock_guard lock(mu_);
  ShufflerSeen& seen = HeardShuffler(instance, now);
  if (!started_ || snap_.finished || !RoundOpen() || !Shuffled()) {
    if (snap_.finished) seen.told_over = true;
    ShuffleInfo info;
    info.round = snap_.round;
    info.finished = snap_.finished;
    info.chunks = Chunks();
    return info;
  }
  ShuffleInfo info = OpenRoundInfo(
      snap_.round, Chunks(), round_users_, delivered_,
      [&](std::uint64_t u) { return withdrawn_.contains(u) || Away(u); }, roster_,
      policy_.stale_after, opened_ + policy_.deadline, now, vouched_);
  info.piece_bytes = PieceBytes();
  info.batch = ShuffleBatch();
  info.listed = listed;
  if (listed) info.delivered.assign(delivered_.begin(), delivered_.end());
  return info;
}

Status RoundCoordinator::CheckBatch(const ShuffleDelivery& batch, std::set<std::uint64_t>* users) {
  FEDLDP_RETURN_IF_ERROR(CheckDelivery(batch, snap_.round, roster_, state_, round_users_,
                                       delivered_, Chunks(), users));
  if (users->size() < ShuffleBatch()) {
    return Error{"a batch of " + std::to_string(users->size()) +
                 " users; the task's statement shuffles each report among at least " +
                 std::to_string(ShuffleBatch())};
  }
  return {};
}

void RoundCoordinator::Tick(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (!started_ || snap_.finished || !RoundOpen()) return;
  const std::uint64_t round = snap_.round;
  CloseIfComplete(now);  // a round of withdrawn users only
  if (snap_.round != round || snap_.finished || !RoundOpen()) return;
  if (PausedForAbsence(now)) return;
  const std::span<const std::uint64_t> missing =
      std::span<const std::uint64_t>(round_users_).subspan(FirstNotDone());
  if (const char* why = roster_.CloseReason(opened_, policy_, now, missing,
                                            [&](std::uint64_t u) { return Done(u); })) {
    CloseRound(now, why);
  }
}

bool RoundCoordinator::PausedForAbsence(Clock::time_point now) {
  const bool absent = roster_.AllQuiet(now, policy_.stale_after) &&
                      std::none_of(round_users_.begin(), round_users_.end(),
                                   [&](std::uint64_t u) { return Reported(u); });
  if (absent && !paused_ && now >= opened_ + policy_.stale_after) {
    paused_ = true;
    Say("round " + std::to_string(ShownRound()) + " paused: no client has been heard for " +
        std::to_string(policy_.stale_after.count()) +
        " ms and the round has no report; it waits for them instead of closing empty");
  } else if (paused_ && !absent) {
    paused_ = false;
    opened_ = now;  // the round's time starts again
    Say("round " + std::to_string(ShownRound()) + " resumed: a client is back");
  }
  return paused_;
}

std::vector<double> RoundCoordinator::weights() const {
  std::lock_guard lock(mu_);
  return snap_.weights;
}

Result<bool> RoundCoordinator::Resume(
    const std::function<Status(const ServerState::Snapshot&)>& check) {
  FEDLDP_RETURN_IF_ERROR(CheckJoined(state_, users_));
  FEDLDP_RETURN_IF_ERROR(LoadWithdrawn(state_, users_, withdrawn_));
  joined_ = state_.joined_users();
  auto loaded = state_.Load();
  if (!loaded.ok()) return Error{loaded.error()};
  if (!loaded->has_value()) return false;
  if (Status e = check(**loaded); !e.ok()) {
    return Error{"the state file's model does not fit this task: " + e.error()};
  }
  snap_ = std::move(**loaded);
  started_ = true;
  return true;
}

void RoundCoordinator::CloseIfComplete(Clock::time_point now) {
  if (!RoundOpen() || snap_.finished) return;
  if (FirstNotDone() < round_users_.size()) return;
  CloseRound(now, "complete");
}

std::size_t RoundCoordinator::FirstNotDone() {
  const std::size_t n = round_users_.size();
  if (done_prefix_ > n) done_prefix_ = 0;  // a round of other users
  while (done_prefix_ < n && Done(round_users_[done_prefix_])) ++done_prefix_;
  if (done_prefix_ < n) return done_prefix_;
  for (std::size_t i = 0; i < n; ++i) {
    if (!Done(round_users_[i])) return done_prefix_ = i;
  }
  return n;
}

RoundCoordinator::Tally RoundCoordinator::TallyRound(std::size_t got) {
  if (reports_of_.empty() && users_ <= kCountedUsers) reports_of_.assign(users_, 0);
  for (const std::uint64_t u : round_users_) {
    if (!reports_of_.empty() && Reported(u)) ++reports_of_[u];
  }
  Tally t;
  t.users = round_users_.size();
  t.got = got;
  for (const std::uint64_t u : round_users_) {
    t.active += Reported(u) || (!withdrawn_.contains(u) && !Away(u));
  }
  t.needed = static_cast<std::size_t>(std::ceil(policy_.min_participation * t.active));
  t.update = got > 0 && got >= t.needed;
  return t;
}

Status RoundCoordinator::Heard(std::string_view token, std::string_view session,
                               Clock::time_point now) {
  std::lock_guard lock(mu_);
  return roster_.Enter(state_, token, session, now).status;
}

RoundPoll RoundCoordinator::PollCommon(std::string_view token, std::string_view session,
                                       Clock::time_point now) {
  RoundPoll out;
  out.retry_ms = static_cast<std::uint32_t>(policy_.retry.count());
  const Access access = roster_.Enter(state_, token, session, now);
  if (!access.ok()) {
    out.status = access.status;
    return out;
  }
  const ServerState::Client& client = access.client;
  if (snap_.finished) {
    out.state = RoundPoll::State::kFinished;
    out.round = snap_.round;
    told_over_.emplace(token);
    return out;
  }
  if (!started_) return out;
  out.round = snap_.round;
  const auto lo = std::lower_bound(round_users_.begin(), round_users_.end(), client.first);
  const auto hi = std::lower_bound(lo, round_users_.end(), client.first + client.users);
  for (auto it = lo; it != hi; ++it) {
    if (!Done(*it)) out.users.push_back(*it);
  }
  if (out.users.empty()) return out;
  out.state = RoundPoll::State::kRound;
  out.weights = snap_.weights;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(opened_ + policy_.deadline - now);
  out.deadline_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(0, left.count()));
  return out;
}

std::optional<DecodedReport> RoundCoordinator::AdmitUnnamed(ReportGate& gate,
                                                            std::string_view plain,
                                                            std::string* why) {
  auto verdict = gate.Admit("piece-" + std::to_string(piece_names_++),
                            {reinterpret_cast<const std::uint8_t*>(plain.data()), plain.size()});
  if (!verdict.accepted()) {
    *why = std::string(ReasonName(verdict.reason)) + ": " + verdict.detail;
    return std::nullopt;
  }
  return std::move(*verdict.report);
}

std::optional<RoundCoordinator::Opened> RoundCoordinator::OpenDelivered(
    ReportGate& gate, const std::string& sealed, const ServerKeys& keys,
    std::map<std::string, std::size_t>& rejected) {
  auto plain = Unseal(sealed, keys);
  if (!plain.ok()) {
    ++rejected["malformed: " + plain.error()];
    return std::nullopt;
  }
  std::string why;
  auto report = AdmitUnnamed(gate, *plain, &why);
  if (!report) {
    ++rejected[why];
    return std::nullopt;
  }
  return Opened{std::move(plain).value(), std::move(*report)};
}

void RoundCoordinator::SayRejected(std::uint64_t round_shown, const char* what,
                                   const std::map<std::string, std::size_t>& rejected) {
  if (rejected.empty()) return;
  std::size_t total = 0;
  std::string counts;
  for (const auto& [why, n] : rejected) {
    refused_[why.substr(0, why.find(':'))] += n;
    total += n;
    counts += (counts.empty() ? "" : "; ") + std::to_string(n) + " " + why;
  }
  Say("round " + std::to_string(round_shown) + ": rejected " + std::to_string(total) + " " + what +
      ": " + counts);
}

void RoundCoordinator::ResetRound(Clock::time_point now) {
  if (paused_) Say("the paused round closed: a client is back");
  paused_ = false;
  delivered_.clear();
  vouched_.clear();
  piece_records_ = 0;
  opened_ = now;
  done_prefix_ = 0;
  ++changes_;
}

void RoundCoordinator::Commit() {
  FlushQueued();  // the reports of the round before its close
  if (Status s = state_.Commit(snap_); !s.ok()) {
    throw std::runtime_error("cannot save the server state: " + s.error());
  }
}

void RoundCoordinator::EnableGroupCommit() {
  std::lock_guard lock(mu_);
  group_commit_ = true;
}

std::uint64_t RoundCoordinator::Record(
    std::uint64_t round, std::span<const std::pair<std::uint64_t, std::string>> reports) {
  if (reports.empty()) return 0;
  if (!group_commit_) {
    if (Status s = state_.RecordReports(round, reports); !s.ok()) {
      throw std::runtime_error("cannot record reports: " + s.error());
    }
    return 0;
  }
  if (!queued_.empty() && queued_round_ != round) FlushQueued();  // never mixed
  queued_round_ = round;
  queued_.insert(queued_.end(), reports.begin(), reports.end());
  std::uint64_t ticket;
  {
    std::lock_guard lock(wait_mu_);  // the committer sees it or is woken
    ticket = ++queued_ticket_;
  }
  wake_.notify_one();
  return ticket;
}

void RoundCoordinator::FlushQueued() {
  if (queued_.empty()) return;
  if (Status s = state_.RecordReports(queued_round_, queued_); !s.ok()) {
    throw std::runtime_error("cannot record reports: " + s.error());
  }
  queued_.clear();
  {
    std::lock_guard lock(wait_mu_);
    durable_ticket_ = queued_ticket_.load();
  }
  wake_.notify_one();  // its waiters are due
}

void RoundCoordinator::WhenDurable(std::uint64_t ticket, std::function<void(bool)> done) {
  bool durable = true;
  {
    std::lock_guard lock(wait_mu_);
    if (ticket > durable_ticket_.load()) {
      if (!abandoned_) {
        waiters_.emplace_back(ticket, std::move(done));
        return;
      }
      durable = false;
    }
  }
  done(durable);
}

void RoundCoordinator::AbandonWaiters() {
  std::vector<std::pair<std::uint64_t, std::function<void(bool)>>> waiting;
  {
    std::lock_guard lock(wait_mu_);
    abandoned_ = true;
    waiting.swap(waiters_);
  }
  for (auto& [ticket, done] : waiting) done(false);
}

void RoundCoordinator::CommitQueued(std::chrono::milliseconds wait,
                                    std::chrono::microseconds gather) {
  const auto due = [this] {
    if (queued_ticket_.load() > durable_ticket_.load()) return true;
    const std::uint64_t durable = durable_ticket_.load();
    return std::any_of(waiters_.begin(), waiters_.end(),
                       [durable](const auto& w) { return w.first <= durable; });
  };
  {
    std::unique_lock lock(wait_mu_);
    if (!wake_.wait_for(lock, wait, due)) return;
  }
  if (gather.count() > 0) std::this_thread::sleep_for(gather);
  {
    std::lock_guard lock(mu_);
    FlushQueued();
  }
  std::vector<std::function<void(bool)>> ready;
  {
    std::lock_guard lock(wait_mu_);
    const std::uint64_t durable = durable_ticket_.load();
    auto keep = std::partition(waiters_.begin(), waiters_.end(),
                               [durable](const auto& w) { return w.first > durable; });
    for (auto it = keep; it != waiters_.end(); ++it) ready.push_back(std::move(it->second));
    waiters_.erase(keep, waiters_.end());
  }
  for (auto& done : ready) done(true);
}

void RoundCoordinator::Say(const std::string& line) const {
  if (log_) log_(line);
}

std::unique_ptr<Rng> RoundCoordinator::ScheduleRng(std::uint64_t what) const {
  return DeploymentRng(policy_.test_seed, (what << 48) ^ snap_.round);
}

void RoundCoordinator::DrawOrder() {
  const auto rng = ScheduleRng(1);
  snap_.order.resize(users_);
  std::iota(snap_.order.begin(), snap_.order.end(), std::uint64_t{0});
  for (std::size_t i = snap_.order.size(); i > 1; --i) {
    std::swap(snap_.order[i - 1], snap_.order[UniformIndex(*rng, i)]);
  }
}

}  // namespace fedldp
