#include "fedldp/net/services.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "client_loop.h"
#include "coordinator_gate.h"
#include "fedldp/fl/fedsel_options.h"
#include "fedldp/net/fedsel_participant.h"
#include "fedldp/store/privacy_ledger.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "fedldp/wire/sealed_box.h"
#include "fedsel_handlers.h"
#include "grpc_util.h"
#include "task_options.h"

namespace fedldp {

namespace pb = ::fedldp::v1;
using namespace net_internal;
using Clock = std::chrono::steady_clock;

std::string EncodeTask(const FedSelTaskSpec& t) {
  pb::Task task;
  task.set_id(t.id);
  task.set_deployment(t.deployment);
  for (const std::string& name : t.classes) task.add_classes(name);
  pb::FedSelTask& f = *task.mutable_fedsel();
  f.set_variant(FedSelVariantName(t.config.variant));
  f.set_users(t.users);
  f.set_dimension(t.dimension);
  f.set_public_key(t.public_key);
  if (t.config.shuffle) f.set_central_delta(t.central_delta);
  WriteTaskOptions(FedSelOptions(), t.config, *f.mutable_options());
  std::string bytes;
  task.SerializeToString(&bytes);
  return bytes;
}

Result<FedSelTaskSpec> DecodeTask(std::string_view bytes) {
  pb::Task task;
  if (!task.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !task.has_fedsel()) {
    return Error{"the server announced a task this client cannot read"};
  }
  const pb::FedSelTask& f = task.fedsel();
  FedSelTaskSpec t;
  t.id = task.id();
  t.deployment = task.deployment();
  t.classes.assign(task.classes().begin(), task.classes().end());
  if (!t.classes.empty() && t.classes.size() != 2) {
    return Error{"the announced task names " + std::to_string(t.classes.size()) +
                 " classes; FedSel's are two"};
  }
  auto variant = ParseFedSelVariant(f.variant());
  if (!variant.ok()) return Error{"the announced task: " + variant.error()};
  // The rows a deployment does not serve keep FedSelConfig's defaults (no
  // tail average: the deployment serves the last iterate).
  t.config.variant = *variant;
  FEDLDP_RETURN_IF_ERROR(ReadTaskOptions(FedSelOptions(), f.options(), t.config));
  t.users = f.users();
  t.dimension = f.dimension();
  t.public_key = f.public_key();
  if (t.config.shuffle) t.central_delta = f.central_delta();  // else unused: the default
  if (t.config.shuffle && t.public_key.size() != 32) {
    return Error{"the announced task is shuffled but carries no 32-byte public key"};
  }
  if (t.config.shuffle) {
    FEDLDP_RETURN_IF_ERROR(
        CheckDelta(t.central_delta, "the announced shuffled task's central delta"));
  }
  if (t.config.epochs < 1 || t.users == 0 || t.dimension == 0 || t.id.empty()) {
    return Error{"the announced task is incomplete"};
  }
  return t;
}

namespace {

// The FedSel coordinator's service, a Gate: a waiting client's poll is
// held without holding a thread, and answered when a round opens or the
// task ends (Release, from the server's timer), not after the client slept
// and asked again; a call whose token (and session) in metadata the
// coordinator does not admit is refused unread.
class CoordinatorService final : public CoordinatorGate<FedSelCoordinator> {
 public:
  CoordinatorService(FedSelCoordinator& coordinator, std::string shuffler_token,
                     std::shared_ptr<std::atomic<bool>> failed)
      : CoordinatorGate(coordinator, std::move(shuffler_token), std::move(failed)),
        task_(EncodeTask(coordinator.spec())) {
    Answered<pb::JoinRequest, pb::JoinReply>("Join", false, [this](const auto& q, auto* r) {
      return HandleJoin(coordinator_, task_, q, r, Clock::now());
    });
    gate_.Add<pb::PollRequest, pb::PollReply>(
        CoordinatorMethod("Poll"), Admit(true),
        [this](grpc::ServerContextBase& context, const pb::PollRequest& request,
               pb::PollReply* reply,
               Gate::Finish finish) { Poll(context, request, reply, std::move(finish)); });
    // A submit is answered once its reports are on disk: the committer
    // writes what the calls queued, many at a time (group commit). Asked
    // to (wait_ms), the reply then also carries the client's next poll,
    // held like a poll's.
    coordinator_.EnableGroupCommit();
    gate_.Add<pb::SubmitRequest, pb::SubmitReply>(
        CoordinatorMethod("Submit"), Admit(true),
        [this](grpc::ServerContextBase& context, const pb::SubmitRequest& request,
               pb::SubmitReply* reply,
               Gate::Finish finish) { Submit(context, request, reply, std::move(finish)); });
    committer_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested() && !failed_->load()) {
        Guard(*failed_, [&] {
          coordinator_.CommitQueued(std::chrono::milliseconds(2), kGather);
          return grpc::Status::OK;
        });
      }
    });
    AddWithdraw();
    // A task without the shuffler serves no Vouch, RoundInfo or Deliver:
    // gRPC answers those with UNIMPLEMENTED.
    if (shuffler_token_.empty()) return;
    AddShufflerMethods();
  }

  // Answers the held polls whose client may now have something to do (the
  // coordinator changed), whose wait is over, or whose caller went away;
  // every one of them when draining. Called every 10 ms: it looks at the
  // held polls only when one may be due (the coordinator changed, the
  // earliest wait is over, or 100 ms passed, for callers gone), and moves
  // them; copying each held poll every tick took the server's whole CPU
  // once 6,000 clients waited.
  void Release(Clock::time_point now) override {
    const std::uint64_t changes = coordinator_.changes();
    std::vector<Held> due;
    {
      std::lock_guard lock(mu_);
      if (held_.empty()) return;
      if (!draining_ && changes == scanned_changes_ && now < earliest_until_ &&
          now < scanned_ + kGoneScan) {
        return;
      }
      scanned_changes_ = changes;
      scanned_ = now;
      earliest_until_ = Clock::time_point::max();
      std::vector<Held> keep;
      keep.reserve(held_.size());
      for (Held& h : held_) {
        const bool go = draining_ || h.changes != changes || now >= h.until || h.finish.gone();
        if (!go) earliest_until_ = std::min(earliest_until_, h.until);
        (go ? due : keep).push_back(std::move(h));
      }
      held_ = std::move(keep);
    }
    std::vector<Held> again;
    for (Held& h : due) {
      h.reply->Clear();
      const grpc::Status status = Answer(h, now);
      if (status.ok() && h.reply->state() == pb::PollReply::WAITING && now < h.until &&
          !h.finish.gone()) {
        h.changes = changes;  // a round opened without this client's users
        again.push_back(h);
        continue;
      }
      h.reply->set_retry_ms(0);  // poll again at once: the wait was the server's
      Finish(h, status);
    }
    std::lock_guard lock(mu_);
    if (draining_) {
      for (Held& h : again) Finish(h, grpc::Status::OK);
    } else {
      for (Held& h : again) Hold(std::move(h));
    }
  }

  // Before the server shuts down: answer every held poll, hold no more;
  // write the queued reports and answer their submits (if the state cannot
  // be written, answer them UNAVAILABLE: they are resent).
  void Drain() override {
    {
      std::lock_guard lock(mu_);
      draining_ = true;
    }
    Release(Clock::now());
    committer_.request_stop();
    if (committer_.joinable()) committer_.join();
    Guard(*failed_, [&] {
      coordinator_.CommitQueued(std::chrono::milliseconds(0));
      return grpc::Status::OK;
    });
    // Else the calls waiting for a commit would never be answered, and the
    // server's shutdown would wait for them for ever.
    if (failed_->load()) coordinator_.AbandonWaiters();
  }

 private:
  static grpc::Status Unsaved() {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the server could not save the reports: send them again once it restarts");
  }
  // How long a poll may be held: what the client asked (wait_ms; its call's
  // deadline is later), at most half the roster's stale_after (a held
  // client is heard when its poll arrives), between 1 s and 10 s. A client
  // that asks 5 s polls a fifth as often as one that asks 1 s: 10,000
  // clients waiting at 1 s were 10,000 calls a second, which saturated a
  // 2-core machine while the rest joined.
  std::uint32_t MaxHoldMs() const {
    const auto half = coordinator_.policy().stale_after.count() / 2;
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(half, 1000, 10000));
  }
  // How long the committer lets reports gather before it writes them.
  static constexpr std::chrono::microseconds kGather{500};
  // A poll being answered: a Poll call's, or a Submit call's `next`.
  struct Held {
    Gate::Finish finish;
    std::string_view token, session;  // the call's, alive until it is finished
    pb::PollReply* reply;
    pb::SubmitReply* submit = nullptr;  // a submit's, whose `next` is `reply`
    std::uint64_t changes = 0;          // the coordinator's changes() when last answered
    Clock::time_point until{};
  };

  // A submit: answered once its reports are on disk (and, asked to, with
  // the client's next poll).
  void Submit(grpc::ServerContextBase& context, const pb::SubmitRequest& request,
              pb::SubmitReply* reply, Gate::Finish finish) {
    std::uint64_t ticket = 0;
    const grpc::Status status = Guard(*failed_, [&] {
      return Checked(context, request, [&] {
        return HandleSubmit(coordinator_, request, reply, Clock::now(), &ticket);
      });
    });
    if (!status.ok() || (ticket == 0 && request.wait_ms() == 0)) return finish(status);
    std::function<void(bool)> done = [finish](bool durable) {
      finish(durable ? grpc::Status::OK : Unsaved());
    };
    if (request.wait_ms() > 0) {
      done = [this, &request, reply, finish](bool durable) {
        if (!durable) return finish(Unsaved());
        AnswerOrHold({.finish = finish,
                      .token = request.token(),
                      .session = request.session(),
                      .reply = reply->mutable_next(),
                      .submit = reply},
                     request.wait_ms(), Clock::now());
      };
    }
    if (ticket == 0) return done(true);
    coordinator_.WhenDurable(ticket, std::move(done));
    // Came while draining: the committer may have written its last
    // queue before this one's, and the reply would never go (nor the
    // server shut down, which waits for it). Write it now.
    bool draining = false;
    {
      std::lock_guard lock(mu_);
      draining = draining_;
    }
    if (draining) {
      Guard(*failed_, [&] {
        coordinator_.CommitQueued(std::chrono::milliseconds(0));
        return grpc::Status::OK;
      });
      if (failed_->load()) coordinator_.AbandonWaiters();
    }
  }

  void Poll(grpc::ServerContextBase& context, const pb::PollRequest& request, pb::PollReply* reply,
            Gate::Finish finish) {
    const grpc::Status status = Checked(context, request, [] { return Status{}; });
    if (!status.ok()) return finish(status);
    if (request.heartbeat()) {  // heard from, never held, told nothing
      return finish(Guard(*failed_, [&] {
        return StatusOf(HandlePoll(coordinator_, request, reply, Clock::now()));
      }));
    }
    AnswerOrHold({.finish = std::move(finish),
                  .token = request.token(),
                  .session = request.session(),
                  .reply = reply},
                 request.wait_ms(), Clock::now());
  }

  // Answers `h` now or, while its client has nothing to do and it may wait
  // (wait_ms > 0), holds it for Release.
  void AnswerOrHold(Held h, std::uint32_t wait_ms, Clock::time_point now) {
    h.changes = coordinator_.changes();
    const grpc::Status status = Answer(h, now);
    if (status.ok() && h.reply->state() == pb::PollReply::WAITING && wait_ms > 0) {
      h.until = now + std::chrono::milliseconds(std::min(wait_ms, MaxHoldMs()));
      std::lock_guard lock(mu_);
      if (!draining_) {
        Hold(std::move(h));
        return;
      }
    }
    Finish(h, status);
  }

  // A submit's reports are counted whatever became of its `next`: a
  // failed one is left out (the client polls, and learns why).
  static void Finish(Held& h, const grpc::Status& status) {
    if (h.submit == nullptr) return h.finish(status);
    if (!status.ok()) h.submit->clear_next();
    h.finish(grpc::Status::OK);
  }

  grpc::Status Answer(const Held& h, Clock::time_point now) {
    return Guard(*failed_, [&] {
      return StatusOf(AnswerPoll(coordinator_, h.token, h.session, h.reply, now));
    });
  }

  // Under mu_.
  void Hold(Held h) {
    earliest_until_ = std::min(earliest_until_, h.until);
    held_.push_back(std::move(h));
  }

  static constexpr std::chrono::milliseconds kGoneScan{100};
  const std::string task_;
  std::mutex mu_;
  std::vector<Held> held_;
  // When Release last looked at held_, the coordinator's changes() then,
  // and the earliest `until` held since.
  Clock::time_point scanned_{}, earliest_until_ = Clock::time_point::max();
  std::uint64_t scanned_changes_ = 0;
  bool draining_ = false;
  std::jthread committer_;  // last: stopped before the rest goes
};

}  // namespace

struct CoordinatorServer::Impl {
  std::unique_ptr<GatedService> service;
  std::unique_ptr<RunningServer> running;
};

Result<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(FedSelCoordinator& coordinator,
                                                                    const std::string& address,
                                                                    const TlsFiles& tls,
                                                                    std::string shuffler_token,
                                                                    int threads) {
  if (coordinator.spec().config.shuffle && shuffler_token.size() < 16) {
    return Error{"a shuffled task needs the shuffler's token (>= 16 characters)"};
  }
  if (!coordinator.spec().config.shuffle) shuffler_token.clear();
  return StartWith(
      [&coordinator, &shuffler_token](std::shared_ptr<std::atomic<bool>> failed) {
        return std::make_unique<CoordinatorService>(coordinator, std::move(shuffler_token),
                                                    std::move(failed));
      },
      address, tls, [&coordinator] { coordinator.Tick(Clock::now()); },
      [&coordinator](const std::string& line) { coordinator.Say(line); }, threads);
}

Result<std::unique_ptr<CoordinatorServer>> CoordinatorServer::StartWith(
    const MakeService& make, const std::string& address, const TlsFiles& tls,
    std::function<void()> tick, std::function<void(const std::string&)> say, int threads) {
  if (threads < 1) return Error{"a server answers calls on at least one thread"};
  std::unique_ptr<CoordinatorServer> s(new CoordinatorServer());
  s->impl_ = std::make_unique<Impl>();
  s->impl_->service = make(s->failed_);
  GatedService* raw = s->impl_->service.get();
  auto running = StartServer(
      Served{.gate = raw->gate(),
             .queues = threads,
             .largest_call = raw->LargestCall(),
             .say = std::move(say)},
      address, tls, &s->port_,
      [raw, tick = std::move(tick)] {
        tick();
        raw->Release(Clock::now());
      },
      s->failed_, [raw] { raw->Drain(); });
  if (!running.ok()) return Error{running.error()};
  s->impl_->running = std::move(running).value();
  return s;
}

void CoordinatorServer::Shutdown() {
  if (impl_ && impl_->running) impl_->running->Shutdown();
}

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

// ---------------------------------------------------------------- client

Status FedSelClientOptions::Validate() const {
  const auto invalid = [](const char* why) { return Error{why, ErrorCode::kInvalidArgument}; };
  if (address.empty()) return invalid("the client needs the server's address host:port");
  if (token.empty()) return invalid("the client needs a token from fedldp enrol");
  if (ledger.empty()) return invalid("the client needs a privacy ledger file");
  if (budget && !(*budget > 0 && std::isfinite(*budget))) {
    return invalid("a ledger's budget is a positive number");
  }
  if (give_up <= std::chrono::milliseconds(0)) return invalid("give_up must be positive");
  return Status::Ok();
}

namespace {

// FedSel's side of the client loop: its task, its participant.
class FedSelClient final : public ClientProtocol {
 public:
  FedSelClient(const FedSelClientOptions& o, const Dataset& data, std::vector<std::size_t> rows)
      : o_(o), data_(data), rows_(std::move(rows)) {}

  Participation Brings() const override { return {"fedsel", data_.dimension, std::nullopt}; }
  Status Accept(const pb::JoinReply& joined) override {
    const std::string task_bytes = joined.task().SerializeAsString();
    if (TaskProtocol(task_bytes) == "ldpfl") {
      return Error{"the server runs an LDP-FL task: start the client with --protocol ldpfl"};
    }
    FEDLDP_ASSIGN_OR_RETURN(task_, DecodeTask(task_bytes));
    return Status::Ok();
  }
  Result<std::string> Open(const pb::JoinReply& joined) override {
    const double budget = o_.budget.value_or(task_.config.epsilon);
    FEDLDP_ASSIGN_OR_RETURN(PrivacyLedger ledger, PrivacyLedger::Open(o_.ledger, budget));
    ledger_ = std::make_unique<PrivacyLedger>(std::move(ledger));
    FEDLDP_ASSIGN_OR_RETURN(FedSelParticipant created,
                            FedSelParticipant::Create(task_, data_, std::move(rows_), *ledger_));
    participant_ = std::make_unique<FedSelParticipant>(std::move(created));
    participant_->SetFirstUser(joined.first_user());
    const FedSelConfig& c = task_.config;
    return "joined task " + task_.id + " (" + FedSelVariantName(c.variant) + ", eps " +
           std::to_string(c.epsilon) + " over " + std::to_string(c.epochs) + " epochs) as users " +
           std::to_string(joined.first_user()) + ".." +
           std::to_string(joined.first_user() + joined.users() - 1) + "; each report spends eps " +
           std::to_string(participant_->report_epsilon()) + " of each user's ledger total " +
           std::to_string(budget) +
           (shuffled() ? "; reports go, sealed, to the shuffler " + o_.shuffler : "");
  }
  const std::string& task_id() const override { return task_.id; }
  bool shuffled() const override { return task_.config.shuffle; }
  // The server answers a waiting poll when a round opens.
  void Prepare(pb::PollRequest& poll) const override { poll.set_wait_ms(1000); }
  bool StartRound(const pb::PollReply& reply, pb::PollRequest&) override {
    weights_.assign(reply.weights().begin(), reply.weights().end());
    return true;
  }
  ClientAnswer Respond(std::uint64_t round, std::span<const std::uint64_t> users) override {
    auto answer = participant_->Respond(round, weights_, users);
    ClientAnswer out{.reports = {},
                     .refusals = std::move(answer.refusals),
                     .exhausted = !answer.exhausted.empty()};
    for (auto& [user, bytes] : answer.reports) {
      out.reports.push_back(
          {user, {shuffled() ? Seal(bytes, task_.public_key) : std::move(bytes)}});
    }
    return out;
  }
  std::vector<std::uint64_t> Exhausted() const override { return participant_->Exhausted(); }
  std::uint64_t users() const override { return participant_->users(); }
  std::uint64_t ShownRound(std::uint64_t round) const override { return round; }

 private:
  const FedSelClientOptions& o_;
  const Dataset& data_;
  std::vector<std::size_t> rows_;
  FedSelTaskSpec task_;
  std::unique_ptr<PrivacyLedger> ledger_;
  std::unique_ptr<FedSelParticipant> participant_;
  std::vector<double> weights_;  // the round's model
};

}  // namespace

Result<FedSelClientSummary> RunFedSelClient(const FedSelClientOptions& o, const Dataset& data,
                                            std::vector<std::size_t> rows, std::stop_token stop) {
  FEDLDP_RETURN_IF_ERROR(o.Validate());
  const std::uint64_t users = rows.size();
  FedSelClient protocol(o, data, std::move(rows));
  return RunClientLoop(o, users, protocol, stop);
}

}  // namespace fedldp
