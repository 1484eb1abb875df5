#include "fedldp/net/fedsel_coordinator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "fedldp/base/checked.h"
#include "fedldp/random/secure_rng.h"
#include "fedsel_method.h"

namespace fedldp {

namespace {

Status CheckSchedule(const ServerState::Snapshot& s, const FedSelTaskSpec& spec,
                     const FedSelPlan& plan) {
  const auto epochs = static_cast<std::uint64_t>(spec.config.epochs);
  const std::uint64_t per_epoch = plan.rounds_per_epoch;
  const std::string at = "round " + std::to_string(s.round) + " (epoch " + std::to_string(s.epoch) +
                         ", position " + std::to_string(s.position) + ")";
  if (s.finished) {
    if (s.round == plan.rounds && s.epoch == epochs) return {};
    return Error{"the schedule ends after " + std::to_string(plan.rounds) + " rounds (" +
                 std::to_string(epochs) + " epochs), not at " + at};
  }
  if (s.position >= spec.users || s.epoch >= epochs) {
    return Error{"the schedule (epoch " + std::to_string(s.epoch) + ", position " +
                 std::to_string(s.position) + ") is outside the task's " + std::to_string(epochs) +
                 " epochs of " + std::to_string(spec.users) + " users"};
  }
  const std::uint64_t start = plan.sampled ? 0 : plan.Round(s.round % per_epoch, spec.users).first;
  if (s.round >= plan.rounds || s.epoch != s.round / per_epoch || s.position != start) {
    return Error{at + " is not a place in the task's schedule of " + std::to_string(plan.rounds) +
                 " rounds, " + std::to_string(per_epoch) + " per epoch"};
  }
  const auto most = CheckedMul(s.round, std::uint64_t{spec.users});
  if (!most || s.counted > *most) {
    return Error{std::to_string(s.counted) + " reports counted in " + std::to_string(s.round) +
                 " rounds of " + std::to_string(spec.users) + " users"};
  }
  return {};
}

// A snapshot read back is trusted no further than a report: a damaged or
// edited state file must stop the server, not index past the user order or
// run a schedule the task does not have.
Status CheckSnapshot(const ServerState::Snapshot& s, const FedSelTaskSpec& spec,
                     const FedSelPlan& plan) {
  if (s.weights.size() != spec.dimension) {
    return Error{std::to_string(s.weights.size()) + " weights for dimension " +
                 std::to_string(spec.dimension)};
  }
  if (s.order.size() != spec.users) {
    return Error{"a user order of " + std::to_string(s.order.size()) + " for " +
                 std::to_string(spec.users) + " users"};
  }
  std::vector<bool> seen(spec.users, false);
  for (std::uint64_t u : s.order) {
    if (u >= spec.users || seen[u])
      return Error{"the user order is not a permutation of the users"};
    seen[u] = true;
  }
  for (double w : s.weights) {
    if (!std::isfinite(w)) return Error{"a weight is not finite"};
  }
  return CheckSchedule(s, spec, plan);
}

}  // namespace

std::string LedgerTaskKey(std::string_view id, std::string_view deployment) {
  return std::string(id) + "@" + std::string(deployment);
}

Status CheckAnnouncedDeployment(std::string_view deployment) {
  if (IsDeploymentId(deployment)) return {};
  return Error{
      "the server announced no deployment identity (" + std::to_string(2 * kDeploymentBytes) +
      " hex digits): this client's ledger could not tell its reports from another server's"};
}

Status FedSelCoordinator::Check(const FedSelTaskSpec& spec, const RoundPolicy& policy) {
  if (spec.users == 0 || spec.dimension == 0) return Error{"a task needs users and a dimension"};
  FEDLDP_RETURN_IF_ERROR(CheckRoundPolicy(policy));
  auto plan = PlanFedSel(spec.config, spec.users, spec.dimension);
  if (!plan.ok()) return Error{plan.error()};
  if (spec.config.shuffle) {
    if (spec.public_key.size() != 32) {
      return Error{
          "a shuffled task needs the server's public key (32 bytes): reports are sealed to it"};
    }
    FEDLDP_RETURN_IF_ERROR(CheckDelta(spec.central_delta, "a shuffled task's central delta"));
    if (spec.config.sample_clients) {
      return Error{
          "sampled rounds with the shuffler: the server draws the sample, and amplification "
          "by sampling needs it hidden from the server (serve --shuffle without "
          "--sample-clients)"};
    }
    if (!plan->variant.is_private()) {
      return Error{"variant " + FedSelVariantName(spec.config.variant) +
                   " is not private: nothing to shuffle"};
    }
  }
  FEDLDP_RETURN_IF_ERROR(net_internal::FedSelMethod::Make(*plan, spec.config, spec.dimension));
  return {};
}

Result<std::unique_ptr<FedSelCoordinator>> FedSelCoordinator::Create(const FedSelTaskSpec& spec,
                                                                     const RoundPolicy& policy,
                                                                     ServerState state, Log log,
                                                                     OnEpoch on_epoch,
                                                                     ServerKeys keys) {
  if (Status e = Check(spec, policy); !e.ok()) return Error{e.error()};
  if (spec.config.shuffle && keys.public_key != spec.public_key) {
    return Error{"the task announces another public key than the server's"};
  }
  FedSelTaskSpec bound = spec;
  if (Status e = AdoptDeployment(bound.deployment, state); !e.ok()) return Error{e.error()};
  auto plan = PlanFedSel(spec.config, spec.users, spec.dimension);
  // Check made both: they can be made.
  auto method = net_internal::FedSelMethod::Make(*plan, spec.config, spec.dimension).value();
  std::unique_ptr<FedSelCoordinator> c(new FedSelCoordinator(bound, policy, std::move(state), *plan,
                                                             std::move(method), std::move(log),
                                                             std::move(on_epoch), std::move(keys)));
  std::lock_guard lock(c->mu_);
  auto resumed =
      c->Resume([&](const ServerState::Snapshot& s) { return CheckSnapshot(s, spec, c->plan_); });
  if (!resumed.ok()) return Error{resumed.error(), resumed.code()};
  if (*resumed) {
    c->stats_.round = c->snap_.round;
    c->stats_.epoch = c->snap_.epoch;
    c->stats_.finished = c->snap_.finished;
    if (!c->snap_.finished) {
      c->OpenRound(Clock::now());
      // Admit again what was acknowledged before the restart.
      const auto recorded = c->state_.Reports(c->snap_.round);
      for (const auto& [user, bytes] : recorded) {
        if (spec.config.shuffle) {
          if (user < kPieceKey) {  // a user whose report was delivered
            c->delivered_.insert(user);
            c->received_[user] = "";
            continue;
          }
          ++c->piece_records_;
          std::string why;
          if (auto report = c->AdmitUnnamed(*c->gate_, bytes, &why)) c->Aggregate(*report);
          continue;
        }
        auto verdict =
            c->gate_->Admit(std::to_string(user),
                            {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()});
        if (!verdict.accepted()) continue;  // cannot happen: it passed this gate before
        c->Aggregate(*verdict.report);
        c->received_[user] = bytes;
      }
      c->Say("resumed at round " + std::to_string(c->snap_.round) + " (epoch " +
             std::to_string(c->snap_.epoch + 1) + "), " + std::to_string(c->received_.size()) +
             " reports of it already recorded");
      c->CloseIfComplete(Clock::now());
    }
  }
  return c;
}

FedSelCoordinator::FedSelCoordinator(const FedSelTaskSpec& spec, const RoundPolicy& policy,
                                     ServerState state, FedSelPlan plan,
                                     std::unique_ptr<net_internal::FedSelMethod> method, Log log,
                                     OnEpoch on_epoch, ServerKeys keys)
    : RoundCoordinator(policy, std::move(state), spec.users, std::move(log)),
      spec_(spec),
      plan_(std::move(plan)),
      method_(std::move(method)),
      report_bytes_(method_->Gate(0).max_bytes() + 16),
      on_epoch_(std::move(on_epoch)),
      keys_(std::move(keys)) {}

FedSelCoordinator::~FedSelCoordinator() = default;

void FedSelCoordinator::Aggregate(const DecodedReport& report) { method_->Add(report); }

void FedSelCoordinator::Start(Clock::time_point now) {
  started_ = true;
  snap_ = {};
  snap_.weights.assign(spec_.dimension, 0.0);
  NewOrder();
  Commit();
  Say("all " + std::to_string(spec_.users) +
      " users joined; training starts: " + std::to_string(spec_.config.epochs) + " epochs of " +
      std::to_string(plan_.rounds_per_epoch) + " rounds, " +
      (plan_.sampled       ? std::to_string(plan_.batch) + " users sampled per round"
       : plan_.even_rounds ? "at least " + std::to_string(plan_.smallest_round) + " users per round"
                           : std::to_string(plan_.batch) + " users per round"));
  OpenRound(now);
}

void FedSelCoordinator::NewOrder() {
  // Who takes part is drawn from the secure generator too: the schedule is
  // not noise, but nothing in a deployment is seeded (but a test's:
  // RoundPolicy::test_seed).
  DrawOrder();
  snap_.position = 0;
}

void FedSelCoordinator::DrawSample() {
  // m of the N users, uniformly, from the secure generator: the first m of
  // the order, which stays a permutation of all users.
  const auto rng = ScheduleRng(2);
  std::vector<std::size_t> order(snap_.order.begin(), snap_.order.end());
  SampleClients(order, plan_.batch, *rng);
  snap_.order.assign(order.begin(), order.end());
  snap_.position = 0;
}

void FedSelCoordinator::OpenRound(Clock::time_point now) {
  // Every epoch has the plan's rounds_per_epoch rounds: the open one is
  // round % rounds_per_epoch of its epoch, and starts at snap_.position.
  const std::size_t first = snap_.position;
  const std::size_t size = plan_.Round(snap_.round % plan_.rounds_per_epoch, spec_.users).second;
  const std::size_t last = std::min<std::size_t>(first + size, spec_.users);
  round_users_.assign(snap_.order.begin() + static_cast<std::ptrdiff_t>(first),
                      snap_.order.begin() + static_cast<std::ptrdiff_t>(last));
  std::sort(round_users_.begin(), round_users_.end());
  gate_.emplace(method_->Gate(snap_.round));
  method_->Reset();
  received_.clear();
  ResetRound(now);
}

// The schedule's next place after a round of m users: the round, and a
// new epoch (a new order, or a sampled round's draw) or the end; true if an
// epoch ended.
bool FedSelCoordinator::NextPlace(std::size_t m) {
  ++snap_.round;
  bool epoch_ended = false;
  if (plan_.sampled) {
    // Sampled rounds: an epoch is rounds_per_epoch rounds, and the next
    // round's users are drawn (and committed) before it opens.
    if (snap_.round % plan_.rounds_per_epoch == 0) {
      ++snap_.epoch;
      epoch_ended = true;
    }
    snap_.finished = snap_.epoch >= static_cast<std::uint64_t>(spec_.config.epochs);
    if (!snap_.finished) DrawSample();
  } else {
    snap_.position += m;
    if (snap_.position >= spec_.users) {
      ++snap_.epoch;
      epoch_ended = true;
      if (snap_.epoch >= static_cast<std::uint64_t>(spec_.config.epochs)) {
        snap_.finished = true;
      } else {
        NewOrder();
      }
    }
  }
  return epoch_ended;
}

void FedSelCoordinator::CloseRound(Clock::time_point now, const char* why) {
  const Tally tally = TallyRound(received_.size());
  const std::size_t m = tally.users, got = tally.got, active = tally.active;
  const bool update = tally.update;
  if (update) {
    snap_.counted += got;
    const std::vector<double> mean = method_->Mean();
    const double step = plan_.variant.scaled_accumulation ? 1.0 : spec_.config.learning_rate;
    for (std::size_t j = 0; j < mean.size(); ++j) snap_.weights[j] -= step * mean[j];
  } else {
    ++stats_.rounds_without_update;
  }
  ++stats_.rounds_closed;
  if (got < m) {
    std::ostringstream line;
    line << "round " << snap_.round << " closed (" << why << ") with " << got << " of " << m
         << " reports";
    if (active < m) line << " (" << m - active << " withdrawn or away)";
    line << "; "
         << (update ? "model updated"
                    : "below the minimum of " + std::to_string(tally.needed) + ": no update");
    Say(line.str());
  }
  const bool epoch_ended = NextPlace(m);
  Commit();
  stats_.round = snap_.round;
  stats_.epoch = snap_.epoch;
  stats_.finished = snap_.finished;
  if (epoch_ended) {
    Say("epoch " + std::to_string(snap_.epoch) + " of " + std::to_string(spec_.config.epochs) +
        " done (round " + std::to_string(snap_.round) + ")");
    if (on_epoch_) on_epoch_(snap_.epoch, snap_.weights);
  }
  if (snap_.finished) {
    gate_.reset();
    round_users_.clear();
    Say("training finished after " + std::to_string(snap_.round) + " rounds");
    ++changes_;
    return;
  }
  OpenRound(now);
}

FedSelCoordinator::Poll FedSelCoordinator::PollRound(std::string_view token,
                                                     std::string_view session,
                                                     Clock::time_point now) {
  std::lock_guard lock(mu_);
  return PollCommon(token, session, now);
}

const char* FedSelCoordinator::Misplaced(const ServerState::Client& client, std::uint64_t user,
                                         std::string& reason) const {
  const std::string who = "user " + std::to_string(user);
  if (spec_.config.shuffle) {
    reason = "this task's reports go through the shuffler (client --shuffler), sealed";
    return "not through the shuffler";
  }
  if (user < client.first || user >= client.first + client.users) {
    reason = who + " is not this client's";
    return "users not this client's";
  }
  if (!gate_) {
    reason = snap_.finished ? "the task is finished" : "no round is open";
    return "no round open";
  }
  if (!std::binary_search(round_users_.begin(), round_users_.end(), user)) {
    reason = who + " does not take part in round " + std::to_string(snap_.round);
    return "users not in the round";
  }
  if (withdrawn_.contains(user) && !received_.contains(user)) {
    reason = who + " was withdrawn from the task";
    return "users withdrawn";
  }
  return nullptr;
}

namespace {
// A call carries a report per hosted user at most.
Status CheckReportCount(const ServerState::Client& client, std::size_t reports) {
  if (reports <= client.users) return {};
  return Error{"a call carries at most one report per user of its client (" +
               std::to_string(client.users) + "), not " + std::to_string(reports)};
}
}  // namespace

FedSelCoordinator::Submitted FedSelCoordinator::Submit(
    std::string_view token, std::string_view session,
    std::span<const std::pair<std::uint64_t, std::string>> reports, Clock::time_point now) {
  std::lock_guard lock(mu_);
  Submitted out;
  const Access access = roster_.Enter(state_, token, session, now);
  if (!access.ok()) {
    out.status = access.status;
    return out;
  }
  const auto* client = &access.client;
  if (out.status = CheckReportCount(*client, reports.size()); !out.status.ok()) return out;
  std::vector<Verdict>& verdicts = out.verdicts;
  verdicts.resize(reports.size());
  std::vector<std::pair<std::uint64_t, std::string>> to_record;
  std::vector<DecodedReport> decoded;
  std::map<std::string, std::size_t> rejected;  // said once per call, by kind
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& [user, bytes] = reports[i];
    Verdict& v = verdicts[i];
    if (const char* kind = Misplaced(*client, user, v.reason)) {
      ++stats_.rejected;
      ++rejected[kind];
      continue;
    }
    auto verdict = gate_->Admit(
        std::to_string(user), {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()});
    if (verdict.accepted()) {
      v.accepted = true;
      to_record.emplace_back(user, bytes);
      decoded.push_back(std::move(*verdict.report));
      continue;
    }
    const auto it = received_.find(user);
    if (verdict.reason == RejectReason::kDuplicate && it != received_.end() &&
        it->second == bytes) {
      v.accepted = true;  // a resend of what is counted: nothing to do
      v.reason = "already counted";
      out.ticket = std::max(out.ticket, queued_ticket());  // but it may still be queued
      continue;
    }
    ++stats_.rejected;
    v.reason = std::string(ReasonName(verdict.reason)) + ": " + verdict.detail;
    ++rejected[ReasonName(verdict.reason)];
  }
  SayRejected(snap_.round, "report(s) of a call", rejected);
  if (!to_record.empty()) {
    out.ticket = std::max(out.ticket, Record(snap_.round, to_record));
    for (std::size_t i = 0; i < to_record.size(); ++i) {
      Aggregate(decoded[i]);
      received_[to_record[i].first] = std::move(to_record[i].second);
    }
    stats_.accepted += to_record.size();
    CloseIfComplete(now);
  }
  return out;
}

ShuffleDelivered FedSelCoordinator::Deliver(const ShuffleDelivery& batch, Clock::time_point now) {
  std::lock_guard lock(mu_);
  ShuffleDelivered out;
  auto refuse = [&](std::string why) {
    ++stats_.batches_refused;
    out.reason = std::move(why);
    Say("refused a batch from the shuffler: " + out.reason);
    return out;
  };
  if (!spec_.config.shuffle) return refuse("this task takes reports from clients, not a shuffler");
  if (!gate_) return refuse(snap_.finished ? "the task is finished" : "no round is open");
  std::set<std::uint64_t> users;
  if (Status s = CheckBatch(batch, &users); !s.ok()) {
    return refuse(s.error());
  }
  std::vector<std::pair<std::uint64_t, std::string>> records;
  std::vector<DecodedReport> accepted;
  for (const std::uint64_t user : users) records.emplace_back(user, std::string());
  std::map<std::string, std::size_t> reasons;
  for (const std::string& sealed : batch.pieces[0]) {
    auto opened = OpenDelivered(*gate_, sealed, keys_, reasons);
    if (!opened) {
      ++out.pieces_rejected;
      continue;
    }
    records.emplace_back(kPieceKey + piece_records_ + accepted.size(), std::move(opened->plain));
    accepted.push_back(std::move(opened->report));
  }
  if (Status s = state_.RecordReports(snap_.round, records); !s.ok()) {
    throw std::runtime_error("cannot record reports: " + s.error());
  }
  piece_records_ += accepted.size();
  for (const auto& report : accepted) Aggregate(report);
  for (const std::uint64_t user : users) {
    delivered_.insert(user);
    received_[user] = "";
  }
  out.accepted = true;
  out.pieces_accepted = accepted.size();
  ++stats_.batches;
  stats_.accepted += out.pieces_accepted;
  stats_.rejected += out.pieces_rejected;
  SayRejected(snap_.round, "shuffled report(s)", reasons);
  CloseIfComplete(now);
  return out;
}

FedSelCoordinator::Stats FedSelCoordinator::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.started = started_;
  s.counted = snap_.counted;
  s.withdrawn = withdrawn_.size();
  return s;
}

}  // namespace fedldp
