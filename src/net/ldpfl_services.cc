// The LDP-FL deployment's gRPC faces: the coordinator's service, the
// shuffler's server and the client's side. They translate messages and call
// the plain logic (ldpfl_deploy.h); nothing here opens or reads a piece.
#include <algorithm>
#include <charconv>
#include <thread>

#include "client_loop.h"
#include "coordinator_gate.h"
#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/services.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "grpc_util.h"
#include "ldpfl_handlers.h"
#include "task_options.h"
#include "vouch_batcher.h"

namespace fedldp {

namespace pb = ::fedldp::v1;
using namespace net_internal;
using Clock = std::chrono::steady_clock;

std::string EncodeLdpFlTask(const LdpFlTaskSpec& t) {
  pb::Task task;
  task.set_id(t.id);
  task.set_deployment(t.deployment);
  for (const std::string& name : t.classes) task.add_classes(name);
  pb::LdpFlTask& f = *task.mutable_ldpfl();
  f.set_input_mean(t.input_mean);
  f.set_input_sd(t.input_sd);
  f.set_users(t.users);
  f.set_chunk(t.chunk);
  f.set_public_key(t.public_key);
  for (const std::size_t n : t.layer_sizes) f.add_layer_sizes(n);
  f.set_model(t.model);
  WriteTaskOptions(LdpFlOptions(), t.config, *f.mutable_options());
  std::string bytes;
  task.SerializeToString(&bytes);
  return bytes;
}

Result<LdpFlTaskSpec> DecodeLdpFlTask(std::string_view bytes) {
  pb::Task task;
  if (!task.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !task.has_ldpfl()) {
    return Error{"the server announced a task this client cannot read as LDP-FL"};
  }
  const pb::LdpFlTask& f = task.ldpfl();
  LdpFlTaskSpec t;
  t.id = task.id();
  t.deployment = task.deployment();
  t.classes.assign(task.classes().begin(), task.classes().end());
  FEDLDP_RETURN_IF_ERROR(ReadTaskOptions(LdpFlOptions(), f.options(), t.config));
  t.input_mean = f.input_mean();
  t.input_sd = f.input_sd();
  t.users = f.users();
  t.chunk = f.chunk();
  t.public_key = f.public_key();
  t.layer_sizes.assign(f.layer_sizes().begin(), f.layer_sizes().end());
  t.model = f.model();
  if (t.model.empty() != !IsTorchScriptFile(t.config.arch)) {
    return Error{"the announced task's network and its model bytes disagree"};
  }
  t.config.clients = t.users;
  if (Status e = t.Check(); !e.ok()) return Error{"the announced task is unusable: " + e.error()};
  return t;
}

std::string TaskProtocol(std::string_view bytes) {
  pb::Task task;
  if (!task.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return "";
  return task.has_fedsel() ? "fedsel" : task.has_ldpfl() ? "ldpfl" : "";
}

namespace {

// A decimal number from metadata.
std::optional<std::uint64_t> Number(const std::string& text) {
  std::uint64_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// A Gate (no call holds a thread); a call is admitted on
// the credentials in its metadata before its body is read.
class LdpFlCoordinatorService final : public CoordinatorGate<LdpFlCoordinator> {
 public:
  LdpFlCoordinatorService(LdpFlCoordinator& coordinator, std::string shuffler_token,
                          std::shared_ptr<std::atomic<bool>> failed)
      : CoordinatorGate(coordinator, std::move(shuffler_token), std::move(failed)),
        task_(EncodeLdpFlTask(coordinator.spec())) {
    Answered<pb::JoinRequest, pb::JoinReply>("Join", false, [this](const auto& q, auto* r) {
      return HandleJoin(coordinator_, task_, q, r, Clock::now());
    });
    Answered<pb::PollRequest, pb::PollReply>("Poll", true, [this](const auto& q, auto* r) {
      return HandlePoll(coordinator_, q, r, Clock::now());
    });
    gate_.Add<pb::SubmitRequest, pb::SubmitReply>(
        CoordinatorMethod("Submit"),
        [](const grpc::ServerContextBase&) {
          return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                              "this server runs LDP-FL: reports go through the shuffler");
        },
        [](grpc::ServerContextBase&, const pb::SubmitRequest&, pb::SubmitReply*,
           Gate::Finish finish) { finish(grpc::Status(grpc::StatusCode::INTERNAL, "")); });
    AddWithdraw();
    AddShufflerMethods();
  }

 private:
  const std::string task_;
};

}  // namespace

Result<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(LdpFlCoordinator& coordinator,
                                                                    const std::string& address,
                                                                    const TlsFiles& tls,
                                                                    std::string shuffler_token,
                                                                    int threads) {
  if (shuffler_token.size() < 16) return Error{"the shuffler's token must have >= 16 characters"};
  return StartWith(
      [&coordinator, &shuffler_token](std::shared_ptr<std::atomic<bool>> failed) {
        return std::make_unique<LdpFlCoordinatorService>(coordinator, shuffler_token,
                                                         std::move(failed));
      },
      address, tls, [&coordinator] { coordinator.Tick(Clock::now()); },
      [&coordinator](const std::string& line) { coordinator.Say(line); }, threads);
}

// ---------------------------------------------------------------- shuffler

namespace {

// The server's view of its round, for the shuffler; nullopt and *why if the
// server cannot be asked.
std::optional<ShuffleInfo> FetchRoundInfo(pb::Coordinator::Stub& server, const std::string& token,
                                          const ShufflerCore& core, std::string* why) {
  pb::RoundInfoRequest ask;
  ask.set_shuffler_token(token);
  ask.set_instance(core.instance());
  const bool listed = core.WantsDelivered();
  ask.set_without_delivered(!listed);
  pb::RoundInfoReply info;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  SetShufflerCredentials(&context, token);
  const auto status = server.RoundInfo(&context, ask, &info);
  if (!status.ok()) {
    *why = status.error_message();
    return std::nullopt;
  }
  ShuffleInfo view;
  view.round = info.round();
  view.expected = info.expected();
  view.delivered.assign(info.delivered().begin(), info.delivered().end());
  view.listed = listed;
  view.waiting = info.waiting();
  view.deadline_ms = info.deadline_ms();
  view.open = info.open();
  view.finished = info.finished();
  view.chunks = info.chunks();
  view.piece_bytes = info.piece_bytes();
  view.batch = std::max<std::uint64_t>(1, info.batch());
  view.unheld = info.unheld();
  return view;
}

// Shuffle is served streamed: the pieces are read only once the server
// vouched for the token, session, user and round in the call's metadata (or
// the same token's pieces for the user are already held or sent on).
class ShufflerService final : public pb::Shuffler::StreamedUnaryService {
 public:
  ShufflerService(ShufflerCore& core, pb::Coordinator::Stub& server, std::string token)
      : core_(core), server_(server), token_(std::move(token)), vouches_(server_, token_) {}

  grpc::Status StreamedShuffle(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<pb::ShuffleRequest, pb::ShuffleReply>* stream) override {
    const std::string token = Metadata(*context, kTokenKey);
    const std::string session = Metadata(*context, kSessionKey);
    const auto user = Number(Metadata(*context, kUserKey));
    const auto round = Number(Metadata(*context, kRoundKey));
    if (!user || !round) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the call's metadata names no user and round");
    }
    if (core_.Behind(*round)) {
      // The client heard of a round this shuffler has not seen open yet.
      std::string why;
      if (auto view = FetchRoundInfo(server_, token_, core_, &why)) core_.Update(*view);
    }
    pb::ShuffleRequest request;
    bool read = false;
    bool same = true;
    const auto read_body = [&]() -> bool {
      read = true;
      if (!stream->Read(&request)) return false;
      same = request.token() == token && request.session() == session && request.user() == *user &&
             request.round() == *round;
      return same;
    };
    const Status received = core_.Receive(
        token, *round, *user,
        [&]() -> std::optional<std::vector<std::string>> {
          if (!read_body()) return std::nullopt;
          return std::vector<std::string>(request.pieces().begin(), request.pieces().end());
        },
        [&] { return vouches_.Ask(token, session, *user, *round); });
    // Refused before the pieces were read: say why, unread (a token past its
    // refusals: slow down).
    if (!read && !received.ok()) {
      if (received.code() == ErrorCode::kResourceExhausted) return StatusOf(received);
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, received.error());
    }
    // Taken unread (a retry of what this token's client sent): answered
    // unread too. Before, every resend (once a second while the pieces
    // waited for a batch) was read whole to answer it.
    if (!read) {
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                          "held or sent on for this client already");
    }
    if (!same) return StatusOf(DifferentCredentials());
    pb::ShuffleReply reply;
    reply.set_accepted(received.ok());
    reply.set_reason(received.error());
    if (!stream->Write(reply)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the reply could not be sent");
    }
    return grpc::Status::OK;
  }

 private:
  ShufflerCore& core_;
  pb::Coordinator::Stub& server_;
  const std::string token_;
  VouchBatcher vouches_;  // the server's word on each report, asked many at a time

 public:
  const VouchBatcher& vouches() const { return vouches_; }
};

}  // namespace

struct ShufflerServer::Impl {
  std::unique_ptr<pb::Coordinator::Stub> stub;
  std::unique_ptr<ShufflerService> service;
  std::unique_ptr<RunningServer> running;
};

namespace {

// Hands a batch the core released to the server (kept, to be sent again,
// if the server cannot take it), and says what became of it.
void DeliverBatch(pb::Coordinator::Stub& stub, const std::string& token, ShufflerCore& core,
                  LdpFlCoordinator::Delivery batch,
                  const std::function<void(const std::string&)>& log) {
  pb::DeliverRequest deliver;
  deliver.set_shuffler_token(token);
  deliver.set_round(batch.round);
  for (const auto& [t, user] : batch.contributors) {
    auto* c = deliver.add_contributors();
    c->set_token(t);
    c->set_user(user);
  }
  for (const auto& pieces : batch.pieces) {
    auto* chunk = deliver.add_chunks();
    for (const auto& p : pieces) chunk->add_pieces(p);
  }
  pb::DeliverReply reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  SetShufflerCredentials(&context, token);
  const auto sent = stub.Deliver(&context, deliver, &reply);
  if (!sent.ok()) {
    if (log) {
      log("could not deliver a batch of " + std::to_string(batch.contributors.size()) + " users (" +
          sent.error_message() + "); it is kept and sent again");
    }
    core.Return(std::move(batch));
    return;
  }
  if (log) {
    log("round " + std::to_string(batch.round + 1) + ": delivered a batch of " +
        std::to_string(batch.contributors.size()) + " users, " +
        std::to_string(reply.pieces_accepted()) + " pieces accepted, " +
        std::to_string(reply.pieces_rejected()) + " rejected" +
        (reply.accepted() ? "" : "; the server refused it: " + reply.reason()));
  }
}

}  // namespace

Result<std::unique_ptr<ShufflerServer>> ShufflerServer::Start(ShufflerCore& core,
                                                              const ShufflerServerOptions& o) {
  auto channel = MakeChannel(o.server, o.server_tls);
  if (!channel.ok()) return Error{channel.error()};
  std::unique_ptr<ShufflerServer> s(new ShufflerServer());
  s->impl_ = std::make_unique<Impl>();
  s->impl_->stub = pb::Coordinator::NewStub(*channel);
  s->impl_->service = std::make_unique<ShufflerService>(core, *s->impl_->stub, o.shuffler_token);
  pb::Coordinator::Stub* stub = s->impl_->stub.get();
  auto finished = s->finished_;
  auto last_pump = std::make_shared<Clock::time_point>();
  auto said_down = std::make_shared<bool>(false);
  auto log = o.log;
  const std::string token = o.shuffler_token;
  const std::string server = o.server;
  // Every 20 ms: the server's view of the round, then any batch it allows.
  auto pump = [=, &core] {
    const auto now = Clock::now();
    if (now - *last_pump < std::chrono::milliseconds(20)) return;
    *last_pump = now;
    std::string why;
    const auto fetched = FetchRoundInfo(*stub, token, core, &why);
    if (!fetched) {
      if (!*said_down && log) log("server " + server + " unavailable (" + why + "); retrying");
      *said_down = true;
      return;
    }
    if (*said_down && log) log("server " + server + " reachable again");
    *said_down = false;
    const ShuffleInfo& view = *fetched;
    core.Update(view);
    if (view.finished) finished->store(true);
    if (auto batch = core.TakeBatch()) DeliverBatch(*stub, token, core, std::move(*batch), log);
  };
  auto failed = std::make_shared<std::atomic<bool>>(false);
  auto running = StartServer(Served{.service = s->impl_->service.get(), .say = o.log}, o.address,
                             o.tls, &s->port_, pump, failed);
  if (!running.ok()) return Error{running.error()};
  s->impl_->running = std::move(running).value();
  return s;
}

void ShufflerServer::Shutdown() {
  if (impl_ && impl_->running) impl_->running->Shutdown();
}

ShufflerServer::~ShufflerServer() { Shutdown(); }

// ---------------------------------------------------------------- client

namespace {

// LDP-FL's side of the client loop: its task, its participant, the round's
// model and ranges.
class LdpFlClient final : public ClientProtocol {
 public:
  LdpFlClient(const FedSelClientOptions& o, const Dataset& data,
              std::vector<std::vector<std::size_t>> shards)
      : o_(o), data_(data), shards_(std::move(shards)) {}

  Participation Brings() const override { return {"ldpfl", data_.dimension, std::nullopt}; }
  Status Accept(const pb::JoinReply& joined) override {
    const std::string task_bytes = joined.task().SerializeAsString();
    if (TaskProtocol(task_bytes) != "ldpfl") {
      return Error{"the server runs a " + TaskProtocol(task_bytes) +
                   " task, not LDP-FL: start the client with --protocol fedsel"};
    }
    FEDLDP_ASSIGN_OR_RETURN(task_, DecodeLdpFlTask(task_bytes));
    if (!task_.model.empty()) {  // the operator's network: run the one announced
      FEDLDP_ASSIGN_OR_RETURN(task_.config.arch, ModelFileOf(task_.model));
    }
    return Status::Ok();
  }
  Result<std::string> Open(const pb::JoinReply& joined) override {
    // Default total: every report a user may send (every round, or one per
    // epoch of disjoint rounds) at the proven cost.
    const double budget =
        o_.budget.value_or(task_.ReportEpsilon() * static_cast<double>(task_.reports_per_user()));
    FEDLDP_ASSIGN_OR_RETURN(PrivacyLedger ledger, PrivacyLedger::Open(o_.ledger, budget));
    ledger_ = std::make_unique<PrivacyLedger>(std::move(ledger));
    FEDLDP_ASSIGN_OR_RETURN(LdpFlParticipant created,
                            LdpFlParticipant::Create(task_, data_, std::move(shards_), *ledger_));
    participant_ = std::make_unique<LdpFlParticipant>(std::move(created));
    participant_->SetFirstUser(joined.first_user());
    return Joined(joined, budget);
  }
  const std::string& task_id() const override { return task_.id; }
  bool shuffled() const override { return true; }
  void Prepare(pb::PollRequest&) const override {}
  bool StartRound(const pb::PollReply& reply, pb::PollRequest& poll) override {
    if (reply.weights_size() == 0) {  // asked for a round it does not know
      poll.clear_known_round();
      return false;
    }
    weights_.assign(reply.weights().begin(), reply.weights().end());
    ranges_.clear();
    for (int l = 0; l < reply.centers_size() && l < reply.radii_size(); ++l) {
      ranges_.push_back({reply.centers(l), reply.radii(l)});
    }
    poll.set_known_round(reply.round());
    return true;
  }
  ClientAnswer Respond(std::uint64_t round, std::span<const std::uint64_t> users) override {
    auto answer = participant_->Respond(round, weights_, ranges_, users);
    return {.reports = std::move(answer.reports),
            .refusals = std::move(answer.refusals),
            .exhausted = !answer.exhausted.empty()};
  }
  std::vector<std::uint64_t> Exhausted() const override { return participant_->Exhausted(); }
  std::uint64_t users() const override { return participant_->users(); }
  std::uint64_t ShownRound(std::uint64_t round) const override { return round + 1; }

 private:
  std::string Joined(const pb::JoinReply& joined, double budget) const {
    return "joined LDP-FL task " + task_.id + " (" + task_.config.arch + ", " +
           participant_->Mechanism() + ", " + std::to_string(task_.config.rounds) +
           " rounds) as users " + std::to_string(joined.first_user()) + ".." +
           std::to_string(joined.first_user() + joined.users() - 1) + "; each report spends " +
           participant_->cost_name() + " = " + std::to_string(participant_->report_epsilon()) +
           " of each user's ledger total " + std::to_string(budget) + "; pieces go to " +
           o_.shuffler;
  }

  const FedSelClientOptions& o_;
  const Dataset& data_;
  std::vector<std::vector<std::size_t>> shards_;
  LdpFlTaskSpec task_;
  std::unique_ptr<PrivacyLedger> ledger_;
  std::unique_ptr<LdpFlParticipant> participant_;
  std::vector<double> weights_;  // the round's model
  std::vector<LayerRange> ranges_;
};

}  // namespace

Result<FedSelClientSummary> RunLdpFlClient(const LdpFlClientOptions& o, const Dataset& data,
                                           std::vector<std::vector<std::size_t>> shards,
                                           std::stop_token stop) {
  FEDLDP_RETURN_IF_ERROR(o.Validate());
  FEDLDP_RETURN_IF_ERROR(NeuralNet::LoadTorch());  // before joining: a round then waits for no one
  const std::uint64_t users = shards.size();
  LdpFlClient protocol(o, data, std::move(shards));
  return RunClientLoop(o, users, protocol, stop);
}

std::uint64_t ShufflerServer::vouches_asked() const { return impl_->service->vouches().asks(); }
std::uint64_t ShufflerServer::vouch_calls() const { return impl_->service->vouches().calls(); }

Result<ShufflerSummary> RunShuffler(const ShufflerServerOptions& options,
                                    const ShufflerPolicy& policy, std::stop_token stop) {
  ShufflerCore core(policy, options.log);
  auto server = ShufflerServer::Start(core, options);
  if (!server.ok()) return Error{server.error(), server.code()};
  if (options.log) {
    options.log("listening on " + BoundAddress(options.address, (*server)->port()) +
                (options.tls.enabled() ? " (TLS)" : "") + "; server " + options.server +
                "; batches of at least " + std::to_string(policy.min_batch) + " users");
  }
  while (!stop.stop_requested() && !(*server)->finished()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  (*server)->Shutdown();
  return ShufflerSummary{(*server)->finished(), core.stats(), (*server)->vouches_asked(),
                         (*server)->vouch_calls()};
}

}  // namespace fedldp
