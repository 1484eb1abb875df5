#include "fedldp/net/services.h"

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "fedldp/net/fedsel_participant.h"
#include "fedldp/store/privacy_ledger.h"
#include "fedldp/v1/service.grpc.pb.h"

namespace fedldp {

namespace pb = ::fedldp::v1;
using Clock = std::chrono::steady_clock;

std::string EncodeTask(const FedSelTaskSpec& t) {
  pb::Task task;
  task.set_id(t.id);
  pb::FedSelTask& f = *task.mutable_fedsel();
  const FedSelConfig& c = t.config;
  f.set_variant(c.variant);
  f.set_loss(c.loss == Loss::kLogistic ? "logistic" : "svm");
  f.set_epsilon(c.epsilon);
  f.set_epochs(c.epochs);
  f.set_batch_fraction(c.batch_fraction);
  f.set_auto_mu(!c.mu.has_value());
  f.set_mu(c.mu.value_or(0));
  f.set_theta(c.theta);
  f.set_k_fraction(c.k_fraction);
  f.set_learning_rate(c.learning_rate);
  f.set_momentum(c.momentum);
  f.set_lambda(c.lambda);
  f.set_gradient_scaling(c.gradient_scaling == GradientScaling::kClip ? "clip" : "normalize");
  f.set_users(t.users);
  f.set_dimension(t.dimension);
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
  auto loss = ParseLoss(f.loss());
  if (!loss.ok()) return Error{loss.error()};
  auto scaling = ParseGradientScaling(f.gradient_scaling());
  if (!scaling.ok()) return Error{scaling.error()};
  FedSelConfig& c = t.config;
  c.variant = f.variant();
  c.loss = *loss;
  c.epsilon = f.epsilon();
  c.epochs = f.epochs();
  c.batch_fraction = f.batch_fraction();
  c.mu = f.auto_mu() ? std::nullopt : std::optional<double>(f.mu());
  c.theta = f.theta();
  c.k_fraction = f.k_fraction();
  c.learning_rate = f.learning_rate();
  c.momentum = f.momentum();
  c.lambda = f.lambda();
  c.gradient_scaling = *scaling;
  t.users = f.users();
  t.dimension = f.dimension();
  if (c.epochs < 1 || t.users == 0 || t.dimension == 0 || t.id.empty()) {
    return Error{"the announced task is incomplete"};
  }
  return t;
}

namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read " + path};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CoordinatorService final : public pb::Coordinator::Service {
 public:
  CoordinatorService(FedSelCoordinator& coordinator, std::shared_ptr<std::atomic<bool>> failed)
      : coordinator_(coordinator), failed_(std::move(failed)), task_(EncodeTask(coordinator.spec())) {}

  grpc::Status Join(grpc::ServerContext*, const pb::JoinRequest* request,
                    pb::JoinReply* reply) override {
    return Guard([&] {
      const auto joined = coordinator_.Join(request->token(), request->users(), Clock::now());
      if (!joined.error.empty()) return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, joined.error);
      reply->mutable_task()->ParseFromString(task_);
      reply->set_first_user(joined.first);
      reply->set_users(joined.users);
      return grpc::Status::OK;
    });
  }

  grpc::Status Poll(grpc::ServerContext*, const pb::PollRequest* request,
                    pb::PollReply* reply) override {
    return Guard([&] {
      auto poll = coordinator_.PollRound(request->token(), Clock::now());
      if (!poll.error.empty()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, poll.error);
      using S = FedSelCoordinator::Poll::State;
      reply->set_state(poll.state == S::kRound      ? pb::PollReply::ROUND
                       : poll.state == S::kFinished ? pb::PollReply::FINISHED
                                                    : pb::PollReply::WAITING);
      reply->set_round(poll.round);
      reply->mutable_weights()->Assign(poll.weights.begin(), poll.weights.end());
      reply->mutable_users()->Assign(poll.users.begin(), poll.users.end());
      reply->set_deadline_ms(poll.deadline_ms);
      reply->set_retry_ms(poll.retry_ms);
      return grpc::Status::OK;
    });
  }

  grpc::Status Submit(grpc::ServerContext*, const pb::SubmitRequest* request,
                      pb::SubmitReply* reply) override {
    return Guard([&] {
      std::vector<std::pair<std::uint64_t, std::string>> reports;
      reports.reserve(static_cast<std::size_t>(request->reports_size()));
      for (const auto& r : request->reports()) reports.emplace_back(r.user(), r.report());
      auto result = coordinator_.Submit(request->token(), reports, Clock::now());
      if (!result.ok()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, result.error());
      const std::vector<FedSelCoordinator::Verdict> verdicts = std::move(result).value();
      for (const auto& v : verdicts) {
        auto* out = reply->add_verdicts();
        out->set_accepted(v.accepted);
        out->set_reason(v.reason);
      }
      return grpc::Status::OK;
    });
  }

 private:
  // The coordinator throws only when it cannot save its state: answer
  // UNAVAILABLE (clients retry) and flag the server to stop.
  template <typename F>
  grpc::Status Guard(F f) {
    if (failed_->load()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server stopping");
    try {
      return f();
    } catch (const std::exception& e) {
      failed_->store(true);
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, e.what());
    }
  }

  FedSelCoordinator& coordinator_;
  std::shared_ptr<std::atomic<bool>> failed_;
  const std::string task_;
};

}  // namespace

struct CoordinatorServer::Impl {
  std::unique_ptr<CoordinatorService> service;
  std::unique_ptr<grpc::Server> server;
  std::thread ticker;
  std::atomic<bool> stopping{false};
};

Result<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    FedSelCoordinator& coordinator, const std::string& address, const TlsFiles& tls) {
  std::unique_ptr<CoordinatorServer> s(new CoordinatorServer());
  s->impl_ = std::make_unique<Impl>();
  s->impl_->service = std::make_unique<CoordinatorService>(coordinator, s->failed_);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls.enabled()) {
    auto cert = ReadFile(tls.certificate);
    auto key = ReadFile(tls.key);
    if (!cert.ok()) return Error{cert.error()};
    if (!key.ok()) return Error{key.error()};
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, credentials, &s->port_);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.RegisterService(s->impl_->service.get());
  s->impl_->server = builder.BuildAndStart();
  if (!s->impl_->server || s->port_ == 0) {
    return Error{"cannot listen on " + address + " (in use, or not a host:port)"};
  }
  Impl* impl = s->impl_.get();
  auto failed = s->failed_;
  s->impl_->ticker = std::thread([impl, &coordinator, failed] {
    while (!impl->stopping.load()) {
      try {
        coordinator.Tick(Clock::now());
      } catch (const std::exception&) {
        failed->store(true);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  return s;
}

void CoordinatorServer::Shutdown() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  impl_->server->Wait();
  if (impl_->ticker.joinable()) impl_->ticker.join();
}

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

// ---------------------------------------------------------------- client

namespace {

class Connection {
 public:
  Connection(const FedSelClientOptions& o, std::shared_ptr<grpc::Channel> channel)
      : options_(o), stub_(pb::Coordinator::NewStub(std::move(channel))) {}

  // Calls `rpc` until it succeeds, fails for a reason retrying cannot fix,
  // stop() says so, or the server stays unreachable for give_up.
  template <typename Request, typename Reply, typename Rpc>
  Result<Reply> Call(const Request& request, Rpc rpc, const char* what) {
    const auto start = Clock::now();
    auto backoff = std::chrono::milliseconds(50);
    bool said = false;
    while (true) {
      if (options_.stop && options_.stop()) return Error{"stopped"};
      grpc::ClientContext context;
      // Short: a call answers in milliseconds; a server that went away is
      // found again by retrying, not by waiting on a dead connection.
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
      Reply reply;
      const grpc::Status status = (stub_.get()->*rpc)(&context, request, &reply);
      if (status.ok()) {
        if (said) Say(std::string(what) + ": server reachable again");
        return reply;
      }
      const auto code = status.error_code();
      if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED) {
        return Error{std::string(what) + " refused: " + status.error_message()};
      }
      if (Clock::now() - start > options_.give_up) {
        return Error{std::string(what) + ": server unreachable at " + options_.address +
                     " for " + std::to_string(options_.give_up.count() / 1000) +
                     " s: " + status.error_message()};
      }
      if (!said) Say(std::string(what) + ": server unavailable (" + status.error_message() +
                     "); retrying");
      said = true;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
  }

  void Say(const std::string& line) const {
    if (options_.log) options_.log(line);
  }

  pb::Coordinator::Stub& stub() { return *stub_; }

 private:
  const FedSelClientOptions& options_;
  std::unique_ptr<pb::Coordinator::Stub> stub_;
};

}  // namespace

Result<FedSelClientSummary> RunFedSelClient(const FedSelClientOptions& o, const Dataset& data,
                                            std::vector<std::size_t> rows) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (o.tls.enabled()) {
    auto ca = ReadFile(o.tls.ca);
    if (!ca.ok()) return Error{ca.error()};
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ca;
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect to a restarted server within a second (gRPC's default backoff
  // grows to two minutes).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  Connection connection(o, grpc::CreateCustomChannel(o.address, credentials, args));

  pb::JoinRequest join;
  join.set_token(o.token);
  join.set_users(rows.size());
  auto joined = connection.Call<pb::JoinRequest, pb::JoinReply>(
      join, &pb::Coordinator::Stub::Join, "join");
  if (!joined.ok()) return Error{joined.error()};
  auto task = DecodeTask(joined->task().SerializeAsString());
  if (!task.ok()) return Error{task.error()};
  const double budget = o.budget.value_or(task->config.epsilon);
  auto opened = PrivacyLedger::Open(o.ledger, budget);
  if (!opened.ok()) return Error{opened.error()};
  PrivacyLedger ledger = std::move(opened).value();
  auto created = FedSelParticipant::Create(*task, data, std::move(rows), ledger);
  if (!created.ok()) return Error{created.error()};
  auto participant = std::make_unique<FedSelParticipant>(std::move(created).value());
  participant->SetFirstUser(joined->first_user());
  connection.Say("joined task " + task->id + " (" + task->config.variant + ", eps " +
                 std::to_string(task->config.epsilon) + " over " +
                 std::to_string(task->config.epochs) + " epochs) as users " +
                 std::to_string(joined->first_user()) + ".." +
                 std::to_string(joined->first_user() + joined->users() - 1) +
                 "; each report spends eps " + std::to_string(participant->report_epsilon()) +
                 " of each user's ledger total " + std::to_string(budget));

  FedSelClientSummary summary;
  pb::PollRequest poll;
  poll.set_token(o.token);
  std::uint64_t last_round = ~std::uint64_t{0};
  std::unordered_set<std::uint64_t> given_up;
  auto last_log = Clock::now();  // users of last_round not to answer again
  while (true) {
    auto reply = connection.Call<pb::PollRequest, pb::PollReply>(
        poll, &pb::Coordinator::Stub::Poll, "poll");
    if (!reply.ok()) {
      if (o.stop && o.stop()) return summary;
      return Error{reply.error()};
    }
    if (reply->state() == pb::PollReply::FINISHED) {
      summary.finished = true;
      return summary;
    }
    if (reply->state() != pb::PollReply::ROUND) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::uint32_t>(
          1, reply->retry_ms())));
      continue;
    }
    const std::vector<double> weights(reply->weights().begin(), reply->weights().end());
    if (reply->round() != last_round) {
      last_round = reply->round();
      given_up.clear();
      ++summary.rounds;
    }
    std::vector<std::uint64_t> users;
    for (const std::uint64_t u : reply->users()) {
      if (!given_up.contains(u)) users.push_back(u);
    }
    // Users the ledger or the server refused this round are not asked again.
    if (users.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::uint32_t>(
          1, reply->retry_ms())));
      continue;
    }
    for (const std::uint64_t u : users) given_up.insert(u);
    auto answer = participant->Respond(reply->round(), weights, users);
    for (const auto& line : answer.refusals) connection.Say("round " + std::to_string(reply->round()) + ": " + line);
    summary.refused += answer.refusals.size();
    if (answer.reports.empty()) {
      // Nothing this client may send in this round: wait for the next one.
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max<std::uint32_t>(
          1, reply->retry_ms())));
      continue;
    }
    pb::SubmitRequest submit;
    submit.set_token(o.token);
    for (auto& [user, bytes] : answer.reports) {
      auto* r = submit.add_reports();
      r->set_user(user);
      r->set_report(std::move(bytes));
    }
    auto verdicts = connection.Call<pb::SubmitRequest, pb::SubmitReply>(
        submit, &pb::Coordinator::Stub::Submit, "submit");
    if (!verdicts.ok()) {
      if (o.stop && o.stop()) return summary;
      return Error{verdicts.error()};
    }
    if (Clock::now() - last_log > std::chrono::seconds(5)) {
      connection.Say("round " + std::to_string(reply->round()) + ": " +
                     std::to_string(summary.reports + submit.reports_size()) + " reports sent");
      last_log = Clock::now();
    }
    for (int i = 0; i < verdicts->verdicts_size(); ++i) {
      const auto& v = verdicts->verdicts(i);
      if (v.accepted()) {
        ++summary.reports;
      } else {
        ++summary.refused;
        connection.Say("round " + std::to_string(reply->round()) + ": the server refused user " +
                       std::to_string(submit.reports(i).user()) + "'s report: " + v.reason());
      }
    }
  }
}

}  // namespace fedldp
