#include "client_loop.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "fedldp/store/privacy_ledger.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "grpc_util.h"

namespace fedldp::net_internal {
namespace {

namespace pb = ::fedldp::v1;
using Clock = std::chrono::steady_clock;

void WaitToRetry(const pb::PollReply& reply) {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::max<std::uint32_t>(1, reply.retry_ms())));
}

// While it lives, a thread polls the server twice a second, marked as a
// heartbeat (answered at once, without the model), so that a client busy
// with local work (creating its model, which loads Torch; training; handing
// pieces to a slow shuffler) is not taken for one that dropped out.
class Heartbeat {
 public:
  Heartbeat(pb::Coordinator::Stub& server, const std::string& token, const std::string& session)
      : thread_([&server, token, session](std::stop_token stop) {
          Beat(server, token, session, stop);
        }) {}

 private:
  static void Beat(pb::Coordinator::Stub& server, const std::string& token,
                   const std::string& session, std::stop_token stop);
  std::jthread thread_;  // stopped and joined when the heartbeat goes
};

void Heartbeat::Beat(pb::Coordinator::Stub& server, const std::string& token,
                     const std::string& session, std::stop_token stop) {
  pb::PollRequest beat;
  beat.set_token(token);
  beat.set_session(session);
  beat.set_heartbeat(true);
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  while (!wake.wait_for(lock, stop, std::chrono::milliseconds(500), [] { return false; }) &&
         !stop.stop_requested()) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    SetClientCredentials(&context, token, session);
    const std::stop_callback cancel(stop, [&context] { context.TryCancel(); });
    pb::PollReply ignored;
    (void)server.Poll(&context, beat, &ignored);
  }
}

class ClientLoop {
 public:
  ClientLoop(const FedSelClientOptions& o, ClientProtocol& protocol, std::stop_token stop,
             Retrier& connection, ClientSession& session, pb::Coordinator::Stub& server,
             pb::Shuffler::Stub* shuffler)
      : o_(o),
        protocol_(protocol),
        stop_(stop),
        connection_(connection),
        session_(session),
        server_(server),
        shuffler_(shuffler) {
    poll_.set_token(o.token);
    protocol.Prepare(poll_);
  }

  Result<FedSelClientSummary> Run();

 private:
  // An error ends the loop, unless a stop was asked for: then it is why.
  Result<FedSelClientSummary> Failed(const std::string& error) const {
    if (stop_.stop_requested()) return summary_;
    return Error{error};
  }
  Result<pb::PollReply> Poll();
  // The round's users to ask now: new ones, and (once a second) ones handed
  // to the shuffler whose reports have not arrived, which a shuffler that
  // died had held.
  std::vector<std::uint64_t> UsersToAsk(const pb::PollReply& reply) const;
  // Spent for good: tells the server, so that no round waits for them.
  // Every hosted user spent so far, not only this round's, but those whose
  // (last) report this round is still to be delivered. True: all withdrawn.
  Result<bool> Withdraw(const ClientAnswer& answer);
  void HandToShuffler(std::uint64_t round, ClientAnswer& answer);
  Status Submit(std::uint64_t round, ClientAnswer& answer);

  const FedSelClientOptions& o_;
  ClientProtocol& protocol_;
  const std::stop_token stop_;
  Retrier& connection_;
  ClientSession& session_;
  pb::Coordinator::Stub& server_;
  pb::Shuffler::Stub* const shuffler_;  // a shuffled task's

  FedSelClientSummary summary_;
  pb::PollRequest poll_;
  std::uint64_t last_round_ = ~std::uint64_t{0};
  std::set<std::uint64_t> asked_;                    // users not to ask again this round
  std::map<std::uint64_t, Clock::time_point> sent_;  // user -> last hand-over this round
  std::set<std::uint64_t> handed_;                   // users the shuffler took this round
  bool shuffler_down_ = false;
  Clock::time_point last_log_ = Clock::now();
  std::optional<pb::PollReply> next_;  // the poll a submit's reply carried
};

Result<pb::PollReply> ClientLoop::Poll() {
  if (next_) {
    pb::PollReply reply = std::move(*next_);
    next_.reset();
    return reply;
  }
  return session_.Call<pb::PollReply>(
      [&](grpc::ClientContext* c, const std::string& s, pb::PollReply* r) {
        poll_.set_session(s);
        return server_.Poll(c, poll_, r);
      },
      "poll");
}

std::vector<std::uint64_t> ClientLoop::UsersToAsk(const pb::PollReply& reply) const {
  const auto now = Clock::now();
  std::vector<std::uint64_t> users;
  for (const std::uint64_t u : reply.users()) {
    if (asked_.contains(u)) continue;
    const auto it = sent_.find(u);
    if (it == sent_.end() || now - it->second > std::chrono::seconds(1)) users.push_back(u);
  }
  return users;
}

Result<bool> ClientLoop::Withdraw(const ClientAnswer& answer) {
  if (!answer.exhausted) return false;
  std::vector<std::uint64_t> exhausted = protocol_.Exhausted();
  std::erase_if(exhausted, [&](std::uint64_t u) {
    return sent_.contains(u) || std::any_of(answer.reports.begin(), answer.reports.end(),
                                            [u](const auto& r) { return r.first == u; });
  });
  if (exhausted.empty()) return false;
  auto withdrawn = WithdrawSpent(session_, server_, o_.token, exhausted, protocol_.users());
  if (!withdrawn.ok()) return Error{withdrawn.error()};
  return *withdrawn >= protocol_.users();
}

void ClientLoop::HandToShuffler(std::uint64_t round, ClientAnswer& answer) {
  // Retried while the round lasts, not given up.
  for (const auto& [user, pieces] : answer.reports) asked_.erase(user);
  for (auto& [user, pieces] : answer.reports) {
    const HandOver handed = net_internal::HandToShuffler(*shuffler_, o_.token, session_.session(),
                                                         round, user, std::move(pieces));
    sent_[user] = Clock::now();
    if (!NoteHandOver(handed, o_.shuffler, user, protocol_.ShownRound(round), connection_,
                      shuffler_down_)) {
      break;
    }
    if (handed.accepted && handed_.insert(user).second) ++summary_.reports;
  }
}

Status ClientLoop::Submit(std::uint64_t round, ClientAnswer& answer) {
  pb::SubmitRequest submit;
  submit.set_token(o_.token);
  submit.set_wait_ms(poll_.wait_ms());  // the reply brings the next poll's
  for (auto& [user, pieces] : answer.reports) {
    auto* r = submit.add_reports();
    r->set_user(user);
    r->set_report(std::move(pieces.front()));
  }
  auto verdicts = session_.Call<pb::SubmitReply>(
      [&](grpc::ClientContext* c, const std::string& s, pb::SubmitReply* r) {
        submit.set_session(s);
        return server_.Submit(c, submit, r);
      },
      "submit");
  if (!verdicts.ok()) return Error{verdicts.error()};
  const std::string shown = "round " + std::to_string(protocol_.ShownRound(round)) + ": ";
  if (Clock::now() - last_log_ > std::chrono::seconds(5)) {
    connection_.Say(shown + std::to_string(summary_.reports + submit.reports_size()) +
                    " reports sent");
    last_log_ = Clock::now();
  }
  for (int i = 0; i < verdicts->verdicts_size(); ++i) {
    const auto& v = verdicts->verdicts(i);
    if (v.accepted()) {
      ++summary_.reports;
    } else {
      ++summary_.refused;
      connection_.Say(shown + "the server refused user " +
                      std::to_string(submit.reports(i).user()) + "'s report: " + v.reason());
    }
  }
  if (verdicts->has_next()) next_ = std::move(*verdicts.value().mutable_next());
  return Status::Ok();
}

Result<FedSelClientSummary> ClientLoop::Run() {
  while (true) {
    auto reply = Poll();
    if (!reply.ok()) return Failed(reply.error());
    if (reply->state() == pb::PollReply::FINISHED) {
      summary_.finished = true;
      return summary_;
    }
    if (reply->state() != pb::PollReply::ROUND) {
      WaitToRetry(*reply);
      continue;
    }
    const std::uint64_t round = reply->round();
    if (round != last_round_) {
      if (!protocol_.StartRound(*reply, poll_)) continue;
      last_round_ = round;
      asked_.clear();
      sent_.clear();
      handed_.clear();
      ++summary_.rounds;
    }
    const std::vector<std::uint64_t> users = UsersToAsk(*reply);
    if (users.empty()) {  // refused this round, or handed over a moment ago
      WaitToRetry(*reply);
      continue;
    }
    asked_.insert(users.begin(), users.end());
    // Local training takes seconds, a hand-over to a shuffler that went
    // away seconds more: the client beats meanwhile.
    std::optional<Heartbeat> beating(std::in_place, server_, o_.token, session_.session());
    ClientAnswer answer = protocol_.Respond(round, users);
    for (const auto& line : answer.refusals) {
      connection_.Say("round " + std::to_string(protocol_.ShownRound(round)) + ": " + line);
    }
    summary_.refused += answer.refusals.size();
    auto all_withdrawn = Withdraw(answer);
    if (!all_withdrawn.ok()) return Failed(all_withdrawn.error());
    if (*all_withdrawn) {
      summary_.exhausted = true;
      return summary_;
    }
    if (shuffler_ != nullptr) {
      HandToShuffler(round, answer);
      beating.reset();
    } else if (!answer.reports.empty()) {
      beating.reset();
      const Status submitted = Submit(round, answer);
      if (!submitted.ok()) return Failed(submitted.error());
      continue;  // the reply to the submit brought the next poll, or none
    }
    WaitToRetry(*reply);
  }
}

// A client stopped by its operator tells the server once (WithdrawRequest.
// leaving, within 2 s, not retried: the stop is what was asked), so that no
// round waits for its users until it joins again.
void Leave(pb::Coordinator::Stub& server, const std::string& token, const std::string& session,
           Retrier& connection) {
  pb::WithdrawRequest leave;
  leave.set_token(token);
  leave.set_session(session);
  leave.set_leaving(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  SetClientCredentials(&context, token, session);
  pb::WithdrawReply ignored;
  const grpc::Status left = server.Withdraw(&context, leave, &ignored);
  connection.Say(left.ok() ? "stopped; told the server, which no longer waits for this client"
                           : "stopped; could not tell the server (" + left.error_message() +
                                 "): its rounds wait --stale-ms for this client");
}

// What a client's Join says: its token, users, and what it brings.
pb::JoinRequest JoinRequestOf(const FedSelClientOptions& o, std::uint64_t users,
                              const Participation& brings, bool through_shuffler) {
  pb::JoinRequest join;
  join.set_token(o.token);
  join.set_users(users);
  join.set_protocol(brings.protocol);
  join.set_dimension(brings.dimension);
  join.set_through_shuffler(through_shuffler);
  return join;
}

// OK if the client was started with a shuffler exactly when the task's
// reports go through one, else what to change.
Status CheckRoute(const ClientProtocol& protocol, bool has_shuffler) {
  if (protocol.shuffled() && !has_shuffler) {
    return Error{"task " + protocol.task_id() +
                 " takes reports only through the shuffler: start the client with --shuffler "
                 "HOST:PORT"};
  }
  if (!protocol.shuffled() && has_shuffler) {
    return Error{"task " + protocol.task_id() +
                 " takes reports directly, not through a shuffler: start the client without "
                 "--shuffler"};
  }
  return {};
}

}  // namespace

Result<FedSelClientSummary> RunClientLoop(const FedSelClientOptions& o, std::uint64_t users,
                                          ClientProtocol& protocol, std::stop_token stop) {
  auto channel = MakeChannel(o.address, o.tls);
  if (!channel.ok()) return Error{channel.error()};
  std::shared_ptr<grpc::Channel> to_shuffler;
  if (!o.shuffler.empty()) {
    auto made = MakeChannel(o.shuffler, o.shuffler_tls);
    if (!made.ok()) return Error{made.error()};
    to_shuffler = *made;
  }
  // Everything local is checked before the first call: a client that joins
  // counts toward the roster, and one that then fails leaves rounds empty.
  FEDLDP_RETURN_IF_ERROR(PrivacyLedger::CheckPath(o.ledger));
  auto server = pb::Coordinator::NewStub(*channel);
  Retrier connection(
      "server " + o.address, [stop] { return stop.stop_requested(); }, o.log, o.give_up);
  connection.Diagnose([&o] { return ProbeServer(o.address, o.tls, "--tls-ca"); });
  ClientSession session(
      connection,
      [&](grpc::ClientContext* c, const pb::JoinRequest& q, pb::JoinReply* r) {
        return server->Join(c, q, r);
      },
      JoinRequestOf(o, users, protocol.Brings(), to_shuffler != nullptr));
  auto joined = session.Join();
  if (!joined.ok()) {
    if (stop.stop_requested()) return FedSelClientSummary{};  // stopped before joining
    return Error{joined.error()};
  }
  FEDLDP_RETURN_IF_ERROR(protocol.Accept(*joined));
  FEDLDP_RETURN_IF_ERROR(CheckRoute(protocol, to_shuffler != nullptr));
  // Opening creates the model (loading Torch, seconds on a busy machine):
  // the server hears from the client meanwhile.
  auto opened = [&] {
    const Heartbeat beating(*server, o.token, session.session());
    return protocol.Open(*joined);
  }();
  FEDLDP_ASSIGN_OR_RETURN(const std::string line, std::move(opened));
  connection.Say(line);
  std::unique_ptr<pb::Shuffler::Stub> shuffler;
  if (protocol.shuffled()) shuffler = pb::Shuffler::NewStub(to_shuffler);
  auto ran = ClientLoop(o, protocol, stop, connection, session, *server, shuffler.get()).Run();
  if (stop.stop_requested() && ran.ok() && !ran->finished && !ran->exhausted) {
    Leave(*server, o.token, session.session(), connection);
  }
  return ran;
}

}  // namespace fedldp::net_internal
