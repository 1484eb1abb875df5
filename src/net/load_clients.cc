#include "load_clients.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_set>

#include "fedldp/net/fedsel_participant.h"
#include "fedldp/net/services.h"
#include "fedldp/store/privacy_ledger.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "grpc_util.h"

namespace fedldp::net_internal {
namespace {

namespace pb = ::fedldp::v1;

// The server holds a waiting poll (or a submit's next) up to this long (the
// deployed client asks 1 s; 10,000 clients asking that saturate a 2-core
// machine before they have all joined), and a call has this long to come
// back.
constexpr std::uint32_t kWaitMs = 5000;
constexpr auto kCallDeadline = std::chrono::seconds(8);
constexpr auto kJoinGiveUp = std::chrono::seconds(30);
// A failed call is made again after 50 ms, doubling up to 1 s (as Retrier).
constexpr auto kFirstBackoff = std::chrono::milliseconds(50);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);

// How the clients' ends are counted and awaited.
class Ends {
 public:
  Ends(LoadClientsProgress& progress, std::size_t clients) : progress_(progress), left_(clients) {}
  LoadClientsProgress& progress() { return progress_; }

  enum class Outcome { kFinished, kFailed, kStopped, kDropped };
  void End(Outcome outcome, const std::string& why) {
    if (outcome == Outcome::kFinished) ++progress_.finished;
    if (outcome == Outcome::kDropped) ++progress_.dropped;
    if (outcome == Outcome::kFailed) {
      ++progress_.failed;
      std::lock_guard lock(progress_.mu);
      if (progress_.first_error.empty()) progress_.first_error = why;
    }
    std::lock_guard lock(mu_);
    if (--left_ == 0) all_ended_.notify_all();
  }

  // True once every client ended; false after `wait` if some have not.
  bool WaitAll(std::chrono::milliseconds wait) {
    std::unique_lock lock(mu_);
    return all_ended_.wait_for(lock, wait, [this] { return left_ == 0; });
  }

 private:
  LoadClientsProgress& progress_;
  std::mutex mu_;
  std::condition_variable all_ended_;
  std::size_t left_;
};
using Outcome = Ends::Outcome;

// One client: at most one call (or one alarm) in flight at any time, whose
// completion starts the next step. It ends exactly once, from the
// completion of its last call (or before its first), and starts nothing
// after that.
class Client {
 public:
  Client(Ends& ends, const Dataset& data, const LoadClientSpec& spec)
      : ends_(ends), data_(data), spec_(spec) {}

  // Connects, joins and opens the ledger, then sends the first poll; a
  // failure ends the client.
  void Start(const std::string& address, std::stop_token stop) {
    const Status ready = Setup(address, stop);
    if (!ready.ok()) {
      return End(Stopping(stop) ? Outcome::kStopped : Outcome::kFailed, ready.error());
    }
    poll_.set_token(spec_.token);
    poll_.set_session(session_);
    poll_.set_wait_ms(kWaitMs);
    submit_.set_token(spec_.token);
    submit_.set_session(session_);
    submit_.set_wait_ms(kWaitMs);
    Poll();
  }

  // Cancels what is in flight; its completion ends the client.
  void Stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (context_) context_->TryCancel();
    if (alarm_) alarm_->Cancel();
  }

 private:
  // Joins as a deployed client does (ClientSession): a server slow to
  // answer, or a connection that timed out under load, is retried for up
  // to kJoinGiveUp, not taken for a failed client; a stop ends it.
  Status Setup(const std::string& address, std::stop_token stop) {
    auto channel = MakeChannel(address, {});
    if (!channel.ok()) return Error{channel.error()};
    stub_ = pb::Coordinator::NewStub(*channel);
    pb::JoinRequest& join = join_;
    join.set_token(spec_.token);
    join.set_users(spec_.rows.size());
    Retrier retrier(
        "server " + address, [&] { return Stopping(stop); }, {}, kJoinGiveUp);
    ClientSession session(
        retrier,
        [&](grpc::ClientContext* c, const pb::JoinRequest& q, pb::JoinReply* r) {
          return stub_->Join(c, q, r);
        },
        join);
    auto reply = session.Join();
    if (!reply.ok()) return Error{reply.error()};
    const pb::JoinReply& joined = *reply;
    session_ = joined.session();
    auto task = DecodeTask(joined.task().SerializeAsString());
    if (!task.ok()) return Error{task.error()};
    task_ = std::move(task).value();
    auto ledger = spec_.ledger.empty() ? PrivacyLedger::OpenInMemory(task_.config.epsilon)
                                       : PrivacyLedger::Open(spec_.ledger, task_.config.epsilon);
    if (!ledger.ok()) return Error{ledger.error()};
    ledger_ = std::make_unique<PrivacyLedger>(std::move(ledger).value());
    auto participant = FedSelParticipant::Create(task_, data_, spec_.rows, *ledger_);
    if (!participant.ok()) return Error{participant.error()};
    participant_.emplace(std::move(participant).value());
    participant_->SetFirstUser(joined.first_user());
    first_user_ = joined.first_user();
    return Status::Ok();
  }

  // A fresh context for the next call (a Join's carries no session), or
  // none once stopping.
  grpc::ClientContext* NextContext(bool in_session = true) {
    std::lock_guard lock(mu_);
    if (stopping_) return nullptr;
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    if (in_session) {
      SetClientCredentials(context_.get(), spec_.token, session_);
    } else {
      SetClientCredentials(context_.get(), spec_.token);
    }
    return context_.get();
  }

  void Poll() {
    grpc::ClientContext* context = NextContext();
    if (context == nullptr) return End(Outcome::kStopped, "");
    polled_.Clear();
    ++ends_.progress().calls;
    stub_->async()->Poll(context, &poll_, &polled_, [this](grpc::Status status) {
      if (!status.ok()) return Failed("poll", status, &Client::Poll);
      Answered();
      Handle();
    });
  }

  // What `polled_` asks for.
  void Handle() {
    if (polled_.state() == pb::PollReply::FINISHED) return End(Outcome::kFinished, "");
    if (polled_.state() != pb::PollReply::ROUND) return Again(polled_.retry_ms());
    if (polled_.round() != round_) {
      round_ = polled_.round();
      sent_.clear();
    }
    std::vector<std::uint64_t> users;
    for (const std::uint64_t u : polled_.users()) {
      if (!sent_.contains(u)) users.push_back(u);
    }
    if (users.empty()) return Again(polled_.retry_ms());
    // The wire counts rounds from 0; the log and --drop-round from 1.
    const bool dropping = spec_.drop_out && round_ + 1 >= spec_.drop_out->round;
    if (dropping && !spec_.drop_out->in_flight) return End(Outcome::kDropped, "");
    const std::vector<double> weights(polled_.weights().begin(), polled_.weights().end());
    auto answer = participant_->Respond(round_, weights, users);
    if (!answer.refusals.empty()) {
      return End(Outcome::kFailed,
                 "round " + std::to_string(round_) + ": " + answer.refusals.front());
    }
    sent_.insert(users.begin(), users.end());
    submit_.clear_reports();
    for (auto& [user, bytes] : answer.reports) {
      ++ends_.progress().submitted;
      ends_.progress().report_bytes += bytes.size();
      auto* r = submit_.add_reports();
      r->set_user(user);
      r->set_report(std::move(bytes));
    }
    if (dropping) {
      grpc::ClientContext* context = NextContext();
      if (context == nullptr) return End(Outcome::kStopped, "");
      submitted_.Clear();
      ++ends_.progress().calls;
      return SubmitAndVanish(context);
    }
    Submit();
  }

  // Sends submit_; sent again as it is if the call fails for a while (the
  // server answers a resend of what it counted "already counted").
  void Submit() {
    grpc::ClientContext* context = NextContext();
    if (context == nullptr) return End(Outcome::kStopped, "");
    submitted_.Clear();
    ++ends_.progress().calls;
    stub_->async()->Submit(context, &submit_, &submitted_, [this](grpc::Status status) {
      if (!status.ok()) return Failed("submit", status, &Client::Submit);
      Answered();
      for (const auto& v : submitted_.verdicts()) {
        if (!v.accepted()) {
          return End(Outcome::kFailed, "the server refused a report: " + v.reason());
        }
      }
      ends_.progress().accepted += static_cast<std::uint64_t>(submitted_.verdicts_size());
      if (!submitted_.has_next()) return Poll();
      polled_ = std::move(*submitted_.mutable_next());
      Handle();
    });
  }

  // Sends the reports and drops out a millisecond later, cancelling the
  // call: the server may have them or not; the client never asks. It ends
  // once both the call and the alarm came back, whichever is last.
  void SubmitAndVanish(grpc::ClientContext* context) {
    const auto sent = static_cast<std::uint64_t>(submit_.reports_size());
    stub_->async()->Submit(context, &submit_, &submitted_, [this, sent](grpc::Status status) {
      if (status.ok()) {
        for (const auto& v : submitted_.verdicts()) ends_.progress().accepted += v.accepted();
      } else {
        ends_.progress().in_flight += sent;
      }
      if (--vanishing_ == 0) End(Outcome::kDropped, "");
    });
    std::lock_guard lock(mu_);
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(std::chrono::system_clock::now() + std::chrono::milliseconds(1),
                [this, context](bool expired) {
                  if (expired) context->TryCancel();
                  if (--vanishing_ == 0) End(Outcome::kDropped, "");
                });
  }

  // The next poll, after `ms`.
  void Again(std::uint32_t ms) {
    if (ms == 0) return Poll();
    After(std::chrono::milliseconds(ms), &Client::Poll);
  }

  // `step` after `wait`, unless the client stops first.
  void After(std::chrono::milliseconds wait, void (Client::*step)()) {
    std::unique_lock lock(mu_);
    if (stopping_) {
      lock.unlock();
      return End(Outcome::kStopped, "");
    }
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(std::chrono::system_clock::now() + wait, [this, step](bool expired) {
      if (!expired) return End(Outcome::kStopped, "");
      (this->*step)();
    });
  }

  // A call came back answered: the next failure starts a new patience.
  void Answered() {
    failing_since_.reset();
    backoff_ = kFirstBackoff;
    rejoined_ = false;
  }

  // A call that failed is made again (`again`) after a backoff while the
  // server may answer it later (RetryMayMend, as the deployed client's
  // Retrier: away, slow, restarting, busy), for up to kJoinGiveUp; a
  // session the server no longer knows (it restarted) is joined again and
  // the call then repeated. Anything else, or a server away that long,
  // ends the client failed.
  void Failed(const char* what, const grpc::Status& status, void (Client::*again)()) {
    if (Stopping({})) return End(Outcome::kStopped, "");
    const auto now = std::chrono::steady_clock::now();
    if (!failing_since_) failing_since_ = now;
    const grpc::StatusCode code = status.error_code();
    const bool joining = again == &Client::Rejoin;
    // Once per failing call, as ClientSession: refused again after joining
    // again, the session was not what the server missed.
    if (code == grpc::StatusCode::FAILED_PRECONDITION && !joining && !rejoined_) {
      ++ends_.progress().retries;
      repeat_ = again;
      return Rejoin();
    }
    const bool mend = RetryMayMend(code) || (joining && code == grpc::StatusCode::ALREADY_EXISTS);
    if (!mend)
      return End(Outcome::kFailed, std::string(what) + " refused: " + status.error_message());
    if (now - *failing_since_ > kJoinGiveUp) {
      return End(Outcome::kFailed, std::string(what) + ": the server unreachable for " +
                                       std::to_string(kJoinGiveUp.count()) +
                                       " s: " + status.error_message());
    }
    ++ends_.progress().retries;
    const auto wait = backoff_;
    backoff_ = std::min(2 * backoff_, kMaxBackoff);
    After(wait, again);
  }

  // Joins again (the server restarted and forgot the session), then makes
  // the call repeat_ with the new session: the same users, or the client
  // fails.
  void Rejoin() {
    grpc::ClientContext* context = NextContext(/*in_session=*/false);
    if (context == nullptr) return End(Outcome::kStopped, "");
    ++ends_.progress().calls;
    joined_.Clear();
    stub_->async()->Join(context, &join_, &joined_, [this](grpc::Status status) {
      if (!status.ok()) return Failed("join", status, &Client::Rejoin);
      if (joined_.first_user() != first_user_ || joined_.session().empty()) {
        return End(Outcome::kFailed, "the server gave this client other users on joining again");
      }
      session_ = joined_.session();
      poll_.set_session(session_);
      submit_.set_session(session_);
      backoff_ = kFirstBackoff;
      rejoined_ = true;
      (this->*repeat_)();
    });
  }

  bool Stopping(const std::stop_token& stop) {
    std::lock_guard lock(mu_);
    return stopping_ || stop.stop_requested();
  }

  // The last thing a client does: `this` may be gone after it.
  void End(Outcome outcome, const std::string& why) { ends_.End(outcome, why); }

  Ends& ends_;
  const Dataset& data_;
  const LoadClientSpec& spec_;
  std::unique_ptr<pb::Coordinator::Stub> stub_;
  std::string session_;
  FedSelTaskSpec task_;
  std::unique_ptr<PrivacyLedger> ledger_;
  std::optional<FedSelParticipant> participant_;
  pb::JoinRequest join_;
  pb::JoinReply joined_;
  std::uint64_t first_user_ = 0;
  pb::PollRequest poll_;
  pb::PollReply polled_;
  pb::SubmitRequest submit_;
  pb::SubmitReply submitted_;
  std::uint64_t round_ = ~std::uint64_t{0};
  std::unordered_set<std::uint64_t> sent_;  // users of round_ already answered
  std::atomic<int> vanishing_{2};           // SubmitAndVanish's call and alarm
  // Since when the calls have failed (none: the last was answered), how
  // long the next retry waits, the call a join again then repeats, and
  // whether it did.
  std::optional<std::chrono::steady_clock::time_point> failing_since_;
  std::chrono::milliseconds backoff_ = kFirstBackoff;
  void (Client::*repeat_)() = &Client::Poll;
  bool rejoined_ = false;  // joined again since the last call answered
  std::mutex mu_;          // guards the three below
  bool stopping_ = false;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::Alarm> alarm_;
};

}  // namespace

void RunCallbackClients(const std::string& address, const Dataset& data,
                        std::span<const LoadClientSpec> specs, LoadClientsProgress& progress,
                        std::stop_token stop) {
  if (specs.empty()) return;
  Ends ends(progress, specs.size());
  std::vector<std::unique_ptr<Client>> clients;
  clients.reserve(specs.size());
  for (const LoadClientSpec& spec : specs) {
    clients.push_back(std::make_unique<Client>(ends, data, spec));
  }
  // Joining and opening the ledgers are blocking work: a few threads share
  // it, and each client starts its calls as soon as it is ready.
  std::atomic<std::size_t> next{0};
  std::vector<std::jthread> starters;
  const std::size_t threads = std::min<std::size_t>(8, specs.size());
  for (std::size_t t = 0; t < threads; ++t) {
    starters.emplace_back([&] {
      for (std::size_t i = next++; i < clients.size(); i = next++) {
        if (stop.stop_requested()) {
          ends.End(Outcome::kStopped, "");
          continue;
        }
        clients[i]->Start(address, stop);
      }
    });
  }
  starters.clear();  // joined
  while (!ends.WaitAll(std::chrono::milliseconds(50))) {
    if (stop.stop_requested()) {
      for (auto& c : clients) c->Stop();
      ends.WaitAll(std::chrono::hours(1));
      break;
    }
  }
}

}  // namespace fedldp::net_internal
