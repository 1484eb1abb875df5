#include <algorithm>
#include <cstdio>

#include "fedldp/net/ldpfl_deploy.h"

namespace fedldp {

namespace {
std::string DrawInstance() {
  SecureRng rng;
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return text;
}
}  // namespace

ShufflerCore::ShufflerCore(ShufflerPolicy policy, Log log)
    : policy_(policy), log_(std::move(log)), instance_(DrawInstance()) {}

bool ShufflerCore::WantsDelivered() const {
  std::lock_guard lock(mu_);
  return !known_ || listed_round_ != info_.round;
}

std::uint64_t ShufflerCore::SmallestBatch() const {
  return std::max<std::uint64_t>(policy_.min_batch, info_.batch);
}

void ShufflerCore::Say(const std::string& line) const {
  if (log_) log_(line);
}

void ShufflerCore::Update(const LdpFlCoordinator::Info& info) {
  std::lock_guard lock(mu_);
  // Rounds only grow: a view fetched before a newer one is stale.
  if (known_ && info.round < info_.round) return;
  if (known_ && info.round != info_.round) {
    // The round closed: what is still held can no longer count. It is
    // dropped, never sent on in a batch smaller than the minimum.
    if (!pending_.empty()) {
      Say("round " + std::to_string(info_.round + 1) + " closed with " +
          std::to_string(pending_.size()) + " users' pieces still held (fewer than the batch of " +
          std::to_string(SmallestBatch()) + " or too late): dropped");
      stats_.dropped += pending_.size();
    }
    if (returned_) {
      Say("round " + std::to_string(info_.round + 1) +
          " closed before the server took a batch of " +
          std::to_string(returned_->contributors.size()) + " users: dropped");
      stats_.dropped += returned_->contributors.size();
    }
    pending_.clear();
    forwarded_.clear();
    refusals_.clear();
    returned_.reset();
    warned_small_ = false;
  }
  info_ = info;
  known_ = true;
  // Users the server already has (a batch delivered before a restart of
  // this process) are not sent again. The list comes once a round.
  if (info_.listed) listed_round_ = info_.round;
  for (const std::uint64_t u : info_.delivered) {
    pending_.erase(u);
    forwarded_.emplace(u, "");
  }
  if (info_.open && info_.expected < SmallestBatch() && !warned_small_) {
    warned_small_ = true;
    Say("round " + std::to_string(info_.round + 1) + " draws " + std::to_string(info_.expected) +
        " users, fewer than the minimum batch of " + std::to_string(SmallestBatch()) +
        ": nothing of it can be forwarded");
  }
}

Status ShufflerCore::Shuffle(const std::string& token, std::uint64_t round, std::uint64_t user,
                             std::vector<std::string> pieces,
                             const std::function<Status()>& vouch) {
  return Receive(
      token, round, user, [&] { return std::optional(std::move(pieces)); }, vouch);
}

std::optional<Status> ShufflerCore::AnswerUnasked(const std::string& token, std::uint64_t round,
                                                  std::uint64_t user) {
  std::lock_guard lock(mu_);
  std::string why;
  if (!known_ || !info_.open) {
    why = "no round is open";
  } else if (round != info_.round) {
    why =
        "round " + std::to_string(round) + " is not the open round " + std::to_string(info_.round);
  }
  if (!why.empty()) {
    ++stats_.refused;
    return Error{why};
  }
  if (const auto it = refusals_.find(token); it != refusals_.end() && it->second >= kMaxRefusals) {
    ++stats_.refused;
    return Error{"this client was refused " + std::to_string(it->second) + " times in round " +
                     std::to_string(round + 1) +
                     " (pieces that were no report counted once per report's worth of bytes); "
                     "its calls are refused until the next round",
                 ErrorCode::kResourceExhausted};
  }
  const auto held = pending_.find(user);
  if (held != pending_.end()) {
    if (held->second.token == token) return Status::Ok();
    return Error{"held for another client"};
  }
  const auto sent = forwarded_.find(user);
  if (sent != forwarded_.end()) {  // a retry of what was sent on
    if (sent->second == token) return Status::Ok();
    return Error{sent->second.empty() ? "already delivered to the server"
                                      : "sent on for another client"};
  }
  ++receiving_;
  return std::nullopt;
}

Status ShufflerCore::Receive(const std::string& token, std::uint64_t round, std::uint64_t user,
                             const ReadPieces& read, const std::function<Status()>& vouch) {
  // A refusal counted against the token (in the round it named).
  const auto refuse = [&](std::string why) -> Status {
    std::lock_guard lock(mu_);
    ++stats_.refused;  // held against the token only in the round it named
    if (known_ && round == info_.round) CountRefusal(token);
    return Error{std::move(why)};
  };
  if (auto answer = AnswerUnasked(token, round, user)) return *answer;
  // From the vouch until the pieces are held (or refused), the server counts
  // this user as held here: TakeBatch must not take that for "all in".
  const struct Received {
    ShufflerCore& core;
    ~Received() {
      std::lock_guard lock(core.mu_);
      --core.receiving_;
    }
  } received{*this};
  if (Status vouched = vouch(); !vouched.ok()) {  // asked unlocked: the server is another process
    return refuse("the server does not vouch for it: " + vouched.error());
  }
  auto pieces = read();
  if (!pieces) return refuse("the pieces could not be read");
  std::lock_guard lock(mu_);
  if (!info_.open || round != info_.round) return Error{"the round closed meanwhile"};
  if (std::string why = Misshapen(*pieces); !why.empty()) {
    ++stats_.refused;
    CountRefusal(token, ReportsWorth(*pieces));
    return Error{std::move(why)};
  }
  if (pending_.contains(user) || forwarded_.contains(user)) return {};
  pending_[user] = Held{token, std::move(*pieces)};
  ++stats_.held;
  return {};
}

std::string ShufflerCore::Misshapen(const std::vector<std::string>& pieces) const {
  if (pieces.size() != info_.chunks) {
    return "a report of " + std::to_string(pieces.size()) + " pieces; the model has " +
           std::to_string(info_.chunks) + " chunks";
  }
  // A piece larger than the server takes would only be held, then dropped
  // there: the memory a token's calls take stays what its users' reports need.
  for (const std::string& piece : pieces) {
    if (info_.piece_bytes > 0 && piece.size() > info_.piece_bytes) {
      return "a piece of " + std::to_string(piece.size()) + " bytes; the server takes " +
             std::to_string(info_.piece_bytes) + " at most";
    }
  }
  return "";
}

std::uint64_t ShufflerCore::ReportsWorth(const std::vector<std::string>& pieces) const {
  std::uint64_t bytes = 0;
  for (const std::string& piece : pieces) bytes += piece.size();
  const std::uint64_t report = info_.chunks * info_.piece_bytes;
  return report == 0 ? 1 : 1 + bytes / report;
}

void ShufflerCore::CountRefusal(const std::string& token, std::uint64_t weight) {
  if (refusals_.size() < kMaxTokensCounted || refusals_.contains(token)) {
    auto& count = refusals_[token];
    count = std::min(kMaxRefusals, count + std::min(weight, kMaxRefusals));
  }
}

bool ShufflerCore::Behind(std::uint64_t round) const {
  std::lock_guard lock(mu_);
  return !known_ || round > info_.round || (round == info_.round && !info_.open);
}

std::optional<LdpFlCoordinator::Delivery> ShufflerCore::TakeBatch() {
  std::lock_guard lock(mu_);
  if (returned_) {
    auto batch = std::move(*returned_);
    returned_.reset();
    return batch;
  }
  if (!known_ || !info_.open || pending_.size() < SmallestBatch()) return std::nullopt;
  // Forward when everyone the server still waits for is here, or held by
  // another shuffler (none unheld), or when the deadline nears; never fewer
  // than the smallest batch.
  // Never while pieces are being read: the server counts their user as
  // held from its vouch (unheld), and may count it waiting while users held
  // here are of clients gone quiet (waiting), yet it is not in pending_.
  const bool all_in = receiving_ == 0 && (pending_.size() >= info_.waiting || info_.unheld == 0);
  const bool late = info_.deadline_ms <= policy_.flush_before.count();
  if (!all_in && !late) return std::nullopt;
  LdpFlCoordinator::Delivery batch;
  batch.round = info_.round;
  batch.pieces.assign(info_.chunks, {});
  std::vector<std::pair<std::string, std::uint64_t>> contributors;
  for (auto& [user, held] : pending_) {
    batch.contributors.emplace_back(held.token, user);
    for (std::size_t c = 0; c < info_.chunks; ++c) {
      batch.pieces[c].push_back(std::move(held.pieces[c]));
    }
    forwarded_.emplace(user, held.token);
  }
  std::sort(batch.contributors.begin(), batch.contributors.end());
  // Each chunk's pieces in an order of its own: no piece can be linked to a
  // contributor, nor to the other pieces of the same report.
  for (auto& pieces : batch.pieces) {
    for (std::size_t k = pieces.size(); k > 1; --k) {
      std::swap(pieces[k - 1], pieces[UniformIndex(rng_, k)]);
    }
  }
  pending_.clear();
  ++stats_.batches;
  stats_.forwarded += batch.contributors.size();
  return batch;
}

void ShufflerCore::Return(LdpFlCoordinator::Delivery batch) {
  std::lock_guard lock(mu_);
  if (known_ && batch.round == info_.round) returned_ = std::move(batch);
}

ShufflerCore::Stats ShufflerCore::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace fedldp
