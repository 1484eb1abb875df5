#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "fedldp/net/ldpfl_deploy.h"
#include "ldpfl_method.h"

namespace fedldp {
namespace {

// A piece record (from kPieceKey on, roster.h) holds 8 bytes of chunk
// index, then the opened report.
std::string ChunkPrefix(std::size_t chunk) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((chunk >> (8 * i)) & 0xff);
  return s;
}

std::size_t ChunkOfPrefix(std::string_view s) {
  std::size_t c = 0;
  for (int i = 0; i < 8; ++i)
    c |= static_cast<std::size_t>(static_cast<unsigned char>(s[i])) << (8 * i);
  return c;
}

}  // namespace

std::size_t LdpFlTaskSpec::weights() const {
  return std::accumulate(layer_sizes.begin(), layer_sizes.end(), std::size_t{0});
}

std::uint64_t LdpFlTaskSpec::per_round() const {
  return std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::llround(config.fraction * static_cast<double>(users))));
}

std::uint64_t LdpFlTaskSpec::shuffle_batch() const {
  return ShuffleBatchOf(config.shuffle_batch, per_round());
}

std::uint64_t LdpFlTaskSpec::rounds_per_epoch() const {
  if (!config.disjoint_rounds) return 1;
  return std::max<std::uint64_t>(1, users / per_round());
}

std::uint64_t LdpFlTaskSpec::reports_per_user() const {
  LdpFlConfig c = config;
  c.clients = users;
  return LdpFlReportsPerClient(c);
}

std::vector<ReportChunk> LdpFlTaskSpec::chunks() const {
  auto method = net_internal::LdpFlMethod::Make(*this);
  return method.ok() ? (*method)->chunks() : ChunkModel(layer_sizes, chunk);
}

double LdpFlTaskSpec::ReportEpsilon() const {
  auto method = net_internal::LdpFlMethod::Make(*this);
  return method.ok() ? (*method)->report_epsilon() : std::nan("");
}

Status LdpFlTaskSpec::Check() const {
  if (id.empty()) return Error{"the task needs an id"};
  if (users == 0) return Error{"the task needs users"};
  if (layer_sizes.empty() || weights() == 0) return Error{"the task needs a model"};
  if (chunk == 0) return Error{"the chunk size must be >= 1"};
  if (public_key.size() != 32) return Error{"the server's public key must be 32 bytes"};
  // The simulator's rules for the run, with the task's users as its clients.
  LdpFlConfig run = config;
  run.clients = users;
  FEDLDP_RETURN_IF_ERROR(run.Validate());
  if (!(input_sd > 0)) return Error{"the input standard deviation must be > 0"};
  auto method = net_internal::LdpFlMethod::Make(*this);
  if (!method.ok()) return Error{method.error()};
  return {};
}

namespace {

// A snapshot read back is trusted no further than a report (see FedSel's).
Status CheckSnapshot(const ServerState::Snapshot& s, const LdpFlTaskSpec& spec) {
  if (s.weights.size() != spec.weights()) {
    return Error{std::to_string(s.weights.size()) + " weights for a model of " +
                 std::to_string(spec.weights())};
  }
  for (double w : s.weights) {
    if (!std::isfinite(w)) return Error{"a weight is not finite"};
  }
  const auto rounds = static_cast<std::uint64_t>(spec.config.rounds);
  if (s.finished && s.round != rounds) {
    return Error{"the task finishes after round " + std::to_string(rounds) + ", not " +
                 std::to_string(s.round)};
  }
  if (s.finished) return {};
  if (s.round >= rounds) {
    return Error{"round " + std::to_string(s.round + 1) + " is past the task's " +
                 std::to_string(spec.config.rounds)};
  }
  if (spec.config.disjoint_rounds) {
    std::vector<bool> seen(spec.users, false);
    bool permutation = s.order.size() == spec.users;
    for (std::size_t i = 0; permutation && i < s.order.size(); ++i) {
      permutation = s.order[i] < spec.users && !seen[s.order[i]];
      if (permutation) seen[s.order[i]] = true;
    }
    if (!permutation) return Error{"the epoch's order is not a permutation of the task's users"};
    if (s.position != (s.round % spec.rounds_per_epoch()) * spec.per_round()) {
      return Error{"position " + std::to_string(s.position) + " is not round " +
                   std::to_string(s.round + 1) + "'s place in its epoch"};
    }
    return {};
  }
  if (s.order.size() != spec.per_round() || !std::is_sorted(s.order.begin(), s.order.end()) ||
      std::adjacent_find(s.order.begin(), s.order.end()) != s.order.end() ||
      (!s.order.empty() && s.order.back() >= spec.users)) {
    return Error{"the round's users are not " + std::to_string(spec.per_round()) +
                 " distinct users of the task"};
  }
  return {};
}

}  // namespace

Status LdpFlCoordinator::Check(const LdpFlTaskSpec& spec, const RoundPolicy& policy) {
  FEDLDP_RETURN_IF_ERROR(spec.Check());
  return CheckRoundPolicy(policy);
}

Result<std::unique_ptr<LdpFlCoordinator>> LdpFlCoordinator::Create(
    const LdpFlTaskSpec& spec, const RoundPolicy& policy, ServerState state, ServerKeys keys,
    std::vector<double> initial, Log log, OnRound on_round) {
  if (Status e = Check(spec, policy); !e.ok()) return Error{e.error()};
  if (keys.public_key != spec.public_key) return Error{"the task announces another public key"};
  if (initial.size() != spec.weights()) return Error{"the initial model does not fit the task"};
  LdpFlTaskSpec bound = spec;
  if (Status e = AdoptDeployment(bound.deployment, state); !e.ok()) return Error{e.error()};
  std::unique_ptr<LdpFlCoordinator> c(new LdpFlCoordinator(
      bound, policy, std::move(state), std::move(keys), std::move(log), std::move(on_round)));
  std::lock_guard lock(c->mu_);
  auto resumed = c->Resume([&](const ServerState::Snapshot& s) { return CheckSnapshot(s, spec); });
  if (!resumed.ok()) return Error{resumed.error(), resumed.code()};
  if (*resumed) {
    if (Status e = c->learner_.Restore(c->snap_.server); !e.ok()) {
      return Error{"server state: " + e.error()};
    }
    c->learner_.Release<double>(c->snap_.weights, c->released_);
    c->stats_.round = c->snap_.round;
    c->stats_.finished = c->snap_.finished;
    if (!c->snap_.finished) {
      c->SetRoundUsers();
      if (Status e = c->OpenRound(Clock::now()); !e.ok()) return Error{e.error()};
      // Take again what was acknowledged before the restart.
      std::size_t pieces = 0;
      for (const auto& [key, bytes] : c->state_.Reports(c->snap_.round)) {
        if (key < kPieceKey) {
          c->delivered_.insert(key);
          continue;
        }
        ++c->piece_records_;
        std::string why;
        if (bytes.size() < 8) continue;
        const std::size_t chunk = ChunkOfPrefix(bytes);
        if (chunk >= c->chunks_.size()) continue;
        auto piece =
            c->AdmitUnnamed(c->method_->Gate(chunk), std::string_view(bytes).substr(8), &why);
        if (piece) c->method_->Add(chunk, *piece), ++pieces;
      }
      c->Say("resumed at round " + std::to_string(c->snap_.round + 1) + ", " +
             std::to_string(c->delivered_.size()) + " users' pieces (" + std::to_string(pieces) +
             ") of it already recorded");
      c->CloseIfComplete(Clock::now());
    }
  } else {
    c->snap_.weights = std::move(initial);
    c->released_ = c->snap_.weights;
  }
  return c;
}

LdpFlCoordinator::LdpFlCoordinator(const LdpFlTaskSpec& spec, const RoundPolicy& policy,
                                   ServerState state, ServerKeys keys, Log log, OnRound on_round)
    : RoundCoordinator(policy, std::move(state), spec.users, std::move(log)),
      spec_(spec),
      keys_(std::move(keys)),
      on_round_(std::move(on_round)),
      chunks_(spec.chunks()),
      method_(net_internal::LdpFlMethod::Make(spec).value()),
      learner_(spec.config.server, spec.config.averaging, spec.config.rounds, spec.weights()),
      released_(spec.weights()) {}

LdpFlCoordinator::~LdpFlCoordinator() = default;

void LdpFlCoordinator::Start(Clock::time_point now) {
  started_ = true;
  snap_.round = 0;
  DrawUsers();
  Commit();
  Say("all " + std::to_string(spec_.users) +
      " users joined; training starts: " + std::to_string(spec_.config.rounds) + " rounds of " +
      std::to_string(spec_.per_round()) + " users" +
      (spec_.config.disjoint_rounds ? " (disjoint: each user at most once per epoch of " +
                                          std::to_string(spec_.rounds_per_epoch()) + " rounds)"
                                    : "") +
      (chunks_.size() == 1
           ? ", each report one sealed piece"
           : ", each report cut into " + std::to_string(chunks_.size()) + " sealed pieces"));
  if (Status e = OpenRound(now); !e.ok()) throw std::runtime_error(e.error());
}

void LdpFlCoordinator::DrawUsers() {
  const std::size_t m = spec_.per_round();
  if (spec_.config.disjoint_rounds) {
    // The next part of the epoch's order; a new order of all users, from
    // the secure generator, as an epoch begins.
    const std::uint64_t b = snap_.round % spec_.rounds_per_epoch();
    if (b == 0 || snap_.order.size() != spec_.users) DrawOrder();
    snap_.position = b * m;
    SetRoundUsers();
    return;
  }
  // A uniform subset, from the secure generator (nothing in a deployment is
  // seeded); kept sorted.
  const auto rng = ScheduleRng(2);
  std::vector<std::uint64_t> all(spec_.users);
  std::iota(all.begin(), all.end(), std::uint64_t{0});
  for (std::size_t i = 0; i < m; ++i) {
    std::swap(all[i], all[i + UniformIndex(*rng, all.size() - i)]);
  }
  all.resize(m);
  std::sort(all.begin(), all.end());
  snap_.order = std::move(all);
  snap_.position = 0;
  SetRoundUsers();
}

void LdpFlCoordinator::SetRoundUsers() {
  if (!spec_.config.disjoint_rounds) {
    round_users_ = snap_.order;
    return;
  }
  const std::size_t first = std::min<std::size_t>(snap_.position, snap_.order.size());
  const std::size_t last = std::min<std::size_t>(first + spec_.per_round(), snap_.order.size());
  round_users_.assign(snap_.order.begin() + static_cast<std::ptrdiff_t>(first),
                      snap_.order.begin() + static_cast<std::ptrdiff_t>(last));
  std::sort(round_users_.begin(), round_users_.end());
}

Status LdpFlCoordinator::OpenRound(Clock::time_point now) {
  std::vector<LayerRange> ranges;
  if (spec_.config.adaptive) {
    const std::vector<float> w(snap_.weights.begin(), snap_.weights.end());
    auto adaptive = LayerRangesOf(w, spec_.layer_sizes, spec_.config.adaptive_margin);
    if (!adaptive.ok()) {
      return Error{"round " + std::to_string(snap_.round + 1) + ": " + adaptive.error()};
    }
    ranges = std::move(adaptive).value();
  } else {
    ranges.assign(spec_.layer_sizes.size(), spec_.config.fixed_range);
  }
  if (Status e = method_->Open(snap_.round, ranges); !e.ok()) {
    return Error{"round " + std::to_string(snap_.round + 1) + ": " + e.error()};
  }
  ranges_ = std::move(ranges);
  piece_bytes_ = 0;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    piece_bytes_ = std::max<std::uint64_t>(piece_bytes_, method_->Gate(c).max_bytes());
  }
  piece_bytes_ += kSealedBoxOverhead;
  ResetRound(now);
  return {};
}

std::vector<double> LdpFlCoordinator::Estimate() const {
  const std::vector<double> mean = method_->Mean();
  const bool updates = method_->updates();
  std::vector<double> estimate = snap_.weights;
  for (std::size_t j = 0; j < mean.size(); ++j) {
    if (std::isnan(mean[j])) continue;  // no piece of this chunk got through
    estimate[j] = updates ? estimate[j] + mean[j] : mean[j];
  }
  return estimate;
}

void LdpFlCoordinator::CloseRound(Clock::time_point now, const char* why) {
  const Tally tally = TallyRound(delivered_.size());
  const std::size_t m = tally.users, got = tally.got, active = tally.active;
  const bool update = tally.update;
  const std::vector<double> estimate = update ? Estimate() : std::vector<double>();
  if (update) {
    snap_.counted += got;
  } else {
    ++stats_.rounds_without_update;
  }
  // Without an estimate the model stays; the average counts the round.
  learner_.Step<double>(static_cast<int>(snap_.round + 1), snap_.weights, estimate);
  learner_.Release<double>(snap_.weights, released_);
  snap_.server = learner_.State();
  ++stats_.rounds_closed;
  std::ostringstream line;
  line << "round " << snap_.round + 1 << " of " << spec_.config.rounds << " closed (" << why
       << ") with " << got << " of " << m << " users' reports"
       << (active < m ? " (" + std::to_string(m - active) + " withdrawn or away)" : std::string())
       << "; "
       << (update ? "model updated"
                  : "below the minimum of " + std::to_string(tally.needed) + ": no update");
  Say(line.str());
  ++snap_.round;
  if (snap_.round >= static_cast<std::uint64_t>(spec_.config.rounds)) {
    snap_.finished = true;
  } else {
    DrawUsers();
  }
  Commit();
  stats_.round = snap_.round;
  stats_.finished = snap_.finished;
  if (on_round_) on_round_(snap_.round, released_);
  if (snap_.finished) {
    snap_.order.clear();
    round_users_.clear();
    Say("training finished after " + std::to_string(snap_.round) + " rounds");
    return;
  }
  if (Status e = OpenRound(now); !e.ok()) throw std::runtime_error(e.error());
}

LdpFlCoordinator::Poll LdpFlCoordinator::PollRound(std::string_view token, std::string_view session,
                                                   Clock::time_point now) {
  std::lock_guard lock(mu_);
  Poll out;
  out.round = PollCommon(token, session, now);
  if (out.round.state == RoundPoll::State::kRound) out.ranges = ranges_;
  return out;
}

LdpFlCoordinator::Delivered LdpFlCoordinator::Deliver(const Delivery& batch,
                                                      Clock::time_point now) {
  std::lock_guard lock(mu_);
  Delivered out;
  auto refuse = [&](std::string why) {
    ++stats_.batches_refused;
    out.reason = std::move(why);
    Say("refused a batch from the shuffler: " + out.reason);
    return out;
  };
  if (ranges_.empty() || snap_.finished)
    return refuse(snap_.finished ? "the task is finished" : "no round is open");
  std::set<std::uint64_t> users;
  if (Status s = CheckBatch(batch, &users); !s.ok()) {
    return refuse(s.error());
  }
  std::vector<std::pair<std::uint64_t, std::string>> records;
  std::vector<std::pair<std::size_t, DecodedReport>> accepted;
  for (const std::uint64_t user : users) records.emplace_back(user, std::string());
  std::map<std::string, std::size_t> reasons;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    for (const std::string& sealed : batch.pieces[c]) {
      auto opened = OpenDelivered(method_->Gate(c), sealed, keys_, reasons);
      if (!opened) {
        ++out.pieces_rejected;
        continue;
      }
      records.emplace_back(kPieceKey + piece_records_ + accepted.size(),
                           ChunkPrefix(c) + opened->plain);
      accepted.emplace_back(c, std::move(opened->report));
    }
  }
  if (Status s = state_.RecordReports(snap_.round, records); !s.ok()) {
    throw std::runtime_error("cannot record pieces: " + s.error());
  }
  piece_records_ += accepted.size();
  for (const auto& [c, piece] : accepted) method_->Add(c, piece);
  delivered_.insert(users.begin(), users.end());
  out.accepted = true;
  out.pieces_accepted = accepted.size();
  ++stats_.batches;
  stats_.pieces_accepted += out.pieces_accepted;
  stats_.pieces_rejected += out.pieces_rejected;
  SayRejected(snap_.round + 1, "piece(s)", reasons);
  CloseIfComplete(now);
  return out;
}

std::vector<double> LdpFlCoordinator::released() const {
  std::lock_guard lock(mu_);
  return released_;
}

LdpFlCoordinator::Stats LdpFlCoordinator::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.started = started_;
  s.counted = snap_.counted;
  s.withdrawn = withdrawn_.size();
  return s;
}

}  // namespace fedldp
