#include "grpc_util.h"

#include <absl/synchronization/mutex.h>
#include <grpc/support/log.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

namespace fedldp::net_internal {

namespace {

// Once per process, before gRPC is used: abseil's mutex deadlock detector
// off (Debian builds it on; gRPC's locks fed its graph, ~4 % of a load
// test's CPU), and gRPC's own log lines off unless GRPC_VERBOSITY asks for
// them: every failure reaches the user as fedldp's one line ("cannot listen
// on ..."), not after a multi-line dump of gRPC's internals.
void PrepareGrpc() {
  static std::once_flag once;
  std::call_once(once, [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    const char* verbosity = std::getenv("GRPC_VERBOSITY");
    if (verbosity == nullptr || *verbosity == '\0') gpr_set_log_function([](gpr_log_func_args*) {});
  });
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read " + path};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const TlsFiles& tls) {
  if (tls.certificate.empty()) return grpc::InsecureServerCredentials();
  FEDLDP_RETURN_IF_ERROR(CheckTlsFiles(tls));
  auto cert = ReadFile(tls.certificate);
  auto key = ReadFile(tls.key);
  if (!cert.ok()) return Error{cert.error()};
  if (!key.ok()) return Error{key.error()};
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace fedldp::net_internal

namespace fedldp {

std::string BoundAddress(const std::string& address, int port) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || address.compare(colon + 1, std::string::npos, "0") != 0) {
    return address;
  }
  return address.substr(0, colon + 1) + std::to_string(port);
}

bool IsLoopbackAddress(const std::string& address) {
  std::string host = address;
  if (host.rfind("ipv4:", 0) == 0) host = host.substr(5);
  if (host.rfind("ipv6:", 0) == 0) host = host.substr(5);
  if (!host.empty() && host.front() == '[') {  // [v6]:port
    const auto close = host.find(']');
    host = close == std::string::npos ? host : host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    host = host.substr(0, host.find(':'));  // host:port
  }
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8 as an IPv4 literal only: "127.evil.example" is a name
  // anyone can point anywhere.
  if (host.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char ch : host) {
    if (ch == '.') {
      ++dots;
    } else if (ch < '0' || ch > '9') {
      return false;
    }
  }
  return dots == 3 && host.size() <= 15;
}

Status CheckTransport(const std::string& address, const TlsFiles& tls, const char* flag) {
  if (tls.enabled() || tls.insecure || IsLoopbackAddress(address)) return {};
  return Error{std::string("refusing plaintext on ") + address +
               ": tokens and reports would cross the network in clear; give " + flag +
               " for TLS, or --insecure to allow it knowingly"};
}

Status CheckListenable(const std::string& address) {
  if (address.rfind(':') == std::string::npos) return {};  // gRPC's own bind names the problem
  const auto [host, port] = net_internal::SplitAddress(address);
  if (port == "0") return {};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0) {
    return {};
  }
  bool in_use = false, free = false;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;  // a closed server's TIME_WAIT sockets do not count
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0) {
      free = true;
    } else if (errno == EADDRINUSE) {
      in_use = true;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (in_use && !free) return Error{"cannot listen on " + address + " (in use)"};
  return {};
}

}  // namespace fedldp

namespace fedldp::net_internal {

std::pair<std::string, std::string> SplitAddress(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return {address, ""};
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, address.substr(colon + 1)};
}

Result<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                   const TlsFiles& tls) {
  PrepareGrpc();
  if (Status why = CheckTransport(address, tls, "a CA certificate"); !why.ok()) {
    return Error{why.error()};
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!tls.ca.empty()) {
    FEDLDP_RETURN_IF_ERROR(CheckTlsFiles(tls));
    auto ca = ReadFile(tls.ca);
    if (!ca.ok()) return Error{ca.error()};
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ca;
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect to a restarted peer within a second (gRPC's default backoff
  // grows to two minutes).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A connection of its own: gRPC shares one among a process's channels to
  // the same address, so that the many clients of a test or a load test
  // would be one client's calls on one connection to the server.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, credentials, args);
}

namespace {

// Builds and starts a server for `served` on `address` (port 0: a free one,
// written to *port).
Result<BuiltServer> BuildServer(const Served& served, const std::string& address,
                                const std::shared_ptr<grpc::ServerCredentials>& credentials,
                                int* port) {
  BuiltServer b;
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default on Linux, so a second server on the
  // same port started and took half of the clients: bind exclusively.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A connection that has not said hello (HTTP/2 and TLS) in 10 s, or has
  // had no call for a minute, is closed (gRPC's defaults: 2 minutes, never);
  // one whose peer is gone is found by a ping every minute. A client
  // reconnects on its next call.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddListeningPort(address, credentials, port);
  const auto largest = static_cast<std::uint64_t>(kMaxMessageBytes);
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      served.largest_call == 0 ? largest : std::min(served.largest_call, largest)));
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  if (served.service != nullptr) builder.RegisterService(served.service);
  if (served.gate != nullptr) {
    b.queues = std::make_unique<GateQueues>(*served.gate, builder, served.queues);
  }
  b.server = builder.BuildAndStart();
  if (!b.server || *port == 0) {
    return Error{"cannot listen on " + address + " (in use, or not a host:port)"};
  }
  if (b.queues) b.queues->Start();
  return b;
}

}  // namespace

void BuiltServer::Stop(std::chrono::milliseconds grace) {
  if (!server) return;
  server->Shutdown(std::chrono::system_clock::now() + grace);
  server->Wait();
}

void BuiltServer::Close() {
  Stop(std::chrono::milliseconds(0));
  if (queues) queues->Shutdown();
  server.reset();
  queues.reset();
}

void RunningServer::Say(const std::string& line) const {
  if (served.say) served.say(line);
}

bool RunningServer::TakeRebuilt() {
  if (rebuilding.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  auto [fresh, old] = rebuilding.get();
  retired.push_back(std::move(old));
  if (fresh.ok()) {
    built = std::move(fresh).value();
    watch.emplace(watch->port());
    if (!std::exchange(listening, true)) Say("listening on " + address + " again");
  } else if (std::exchange(listening, false)) {
    Say("cannot listen on " + address + " again yet (" + fresh.error() + "); trying every second");
  }
  return true;
}

void RunningServer::Report(std::chrono::steady_clock::time_point now) {
  if ((shed == 0 && rebuilds == 0) || now - said < std::chrono::seconds(10)) return;
  std::string line = "under a flood of connections?";
  if (shed > 0) {
    line += " closed " + std::to_string(shed) + " idle connection(s) beyond the cap of " +
            std::to_string(cap) + ";";
  }
  if (rebuilds > 0) {
    line += " rebuilt the listener " + std::to_string(rebuilds) + " time(s): connections waited " +
            std::to_string(ListenWatch::kStall.count()) +
            " s unaccepted (descriptors exhausted, gRPC's acceptor stopped);";
  }
  line.back() = ' ';
  Say(line + "(at most one such line per 10 s)");
  shed = rebuilds = 0;
  said = now;
}

void RunningServer::Watch(std::chrono::steady_clock::time_point now) {
  if (rebuilding.valid() && !TakeRebuilt()) return;
  std::erase_if(retired, [](const BuiltServer& b) { return !b.queues || b.queues->Idle(); });
  const bool look = now >= next_look;
  if (look) next_look = now + std::chrono::seconds(1);
  if (built.server && look) shed += watch->Shed(cap);
  const bool rebuild = built.server ? watch->Stalled(now) || rebuild_asked.exchange(false) : look;
  rebuilds += built.server && rebuild;
  Report(now);
  if (!rebuild) return;
  rebuilding = std::async(std::launch::async, [this, old = std::move(built)]() mutable {
    old.Stop(std::chrono::milliseconds(500));
    int port = watch->port();
    auto fresh = BuildServer(served, address, credentials, &port);
    return std::make_pair(std::move(fresh), std::move(old));
  });
}

void RunningServer::Shutdown() {
  if (stopping.exchange(true)) return;
  if (ticker.joinable()) ticker.join();
  if (rebuilding.valid()) {
    auto [fresh, old] = rebuilding.get();
    retired.push_back(std::move(old));
    if (fresh.ok()) built = std::move(fresh).value();
  }
  if (drain) drain();
  built.Stop(std::chrono::seconds(2));
  built.Close();
  retired.clear();
}

Result<std::unique_ptr<RunningServer>> StartServer(Served served, const std::string& address,
                                                   const TlsFiles& tls, int* port,
                                                   std::function<void()> tick,
                                                   std::shared_ptr<std::atomic<bool>> failed,
                                                   std::function<void()> drain) {
  PrepareGrpc();
  if (Status why = CheckTransport(address, tls, "--tls-cert and --tls-key"); !why.ok()) {
    return Error{why.error()};
  }
  auto credentials = ServerCredentials(tls);
  if (!credentials.ok()) return Error{credentials.error()};
  auto s = std::make_unique<RunningServer>();
  s->cap = ConnectionCap(RaiseDescriptorLimit());
  auto built = BuildServer(served, address, *credentials, port);
  if (!built.ok()) return Error{built.error()};
  s->built = std::move(built).value();
  s->served = std::move(served);
  s->address = BoundAddress(address, *port);
  s->credentials = *credentials;
  s->watch.emplace(*port);
  s->drain = std::move(drain);
  RunningServer* raw = s.get();
  s->ticker = std::thread([raw, tick = std::move(tick), failed] {
    while (!raw->stopping.load()) {
      try {
        tick();
      } catch (const std::exception&) {
        failed->store(true);
      }
      raw->Watch(std::chrono::steady_clock::now());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  return s;
}

std::string Metadata(const grpc::ServerContextBase& context, std::string_view key) {
  const auto& all = context.client_metadata();
  const auto it = all.find(grpc::string_ref(key.data(), key.size()));
  return it == all.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

void SetClientCredentials(grpc::ClientContext* context, std::string_view token,
                          std::string_view session) {
  context->AddMetadata(kTokenKey, std::string(token));
  if (!session.empty()) context->AddMetadata(kSessionKey, std::string(session));
}

void SetShufflerCredentials(grpc::ClientContext* context, std::string_view shuffler_token) {
  context->AddMetadata(kShufflerTokenKey, std::string(shuffler_token));
}

namespace {

// One call through a Gate, on a completion queue: accepted, admitted (or
// refused unread), its body read and served, then answered from whichever
// thread finishes it. It has two tags on its queue: its steps', one at a
// time, and the notice that the call is over (Gate::Gone); it goes once
// both have come back.
class QueuedCall {
 public:
  struct Tag {
    QueuedCall* call;
    bool done_notice;
  };

  QueuedCall(const Gate& gate, grpc::AsyncGenericService& service,
             grpc::ServerCompletionQueue* queue, std::atomic<int>& live)
      : gate_(gate), service_(service), queue_(queue), live_(live) {
    live_.fetch_add(1);
    context_.AsyncNotifyWhenDone(&done_tag_);
    service.RequestCall(&context_, &stream_, queue, queue, &step_tag_);
  }

  ~QueuedCall() { live_.fetch_sub(1); }
  QueuedCall(const QueuedCall&) = delete;
  QueuedCall& operator=(const QueuedCall&) = delete;

  // The queue's thread, on one of the call's tags coming back. False: the
  // call is over, and may be deleted.
  bool Proceed(bool done_notice, bool ok) {
    if (done_notice) {
      noticed_ = true;
      gone_->store(true);
      return step_ != Step::kOver;
    }
    switch (step_.load()) {
      case Step::kAccepted: {
        // Not accepted: the server is shutting down, and no notice comes.
        if (!ok) return false;
        new QueuedCall(gate_, service_, queue_, live_);  // the next call on this queue
        method_ = gate_.Find(context_.method());
        grpc::Status admitted = method_ == nullptr ? grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                                                  "no method " + context_.method())
                                                   : method_->admit(context_);
        if (!admitted.ok()) {
          Answer(admitted, {});
          return true;
        }
        step_ = Step::kRead;
        stream_.Read(&body_, &step_tag_);
        return true;
      }
      case Step::kRead:
        if (!ok) {
          Answer(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request could be read"), {});
          return true;
        }
        step_ = Step::kServing;
        method_->serve(
            context_, body_,
            [this](const grpc::Status& status, const std::string& reply) { Answer(status, reply); },
            gone_);
        return true;
      case Step::kServing:  // not a queue step: Answer moves on to kAnswered
      case Step::kAnswered:
      case Step::kOver:
        step_ = Step::kOver;
        return !noticed_;
    }
    return false;
  }

 private:
  enum class Step { kAccepted, kRead, kServing, kAnswered, kOver };

  void Answer(const grpc::Status& status, const std::string& reply) {
    step_ = Step::kAnswered;
    if (!status.ok()) {
      stream_.Finish(status, &step_tag_);
      return;
    }
    grpc::Slice slice(reply);
    reply_ = grpc::ByteBuffer(&slice, 1);
    stream_.WriteAndFinish(reply_, grpc::WriteOptions(), status, &step_tag_);
  }

  const Gate& gate_;
  grpc::AsyncGenericService& service_;
  grpc::ServerCompletionQueue* queue_;
  std::atomic<int>& live_;  // the queues' count of calls
  Tag step_tag_{this, false}, done_tag_{this, true};
  grpc::GenericServerContext context_;
  grpc::GenericServerAsyncReaderWriter stream_{&context_};
  const Gate::Method* method_ = nullptr;
  std::atomic<Step> step_{Step::kAccepted};  // Answer may set it on another thread
  bool noticed_ = false;
  // Shared: a held answer may ask after the call is over.
  std::shared_ptr<std::atomic<bool>> gone_ = std::make_shared<std::atomic<bool>>(false);
  grpc::ByteBuffer body_, reply_;
};

// Calls each queue has asked for ahead of their arrival.
constexpr int kCallsAwaited = 64;

}  // namespace

GateQueues::GateQueues(const Gate& gate, grpc::ServerBuilder& builder, int threads) : gate_(gate) {
  builder.RegisterAsyncGenericService(&service_);
  for (int i = 0; i < std::max(threads, 1); ++i) queues_.push_back(builder.AddCompletionQueue());
}

GateQueues::~GateQueues() { Shutdown(); }

void GateQueues::Start() {
  for (auto& queue : queues_) {
    for (int i = 0; i < kCallsAwaited; ++i) new QueuedCall(gate_, service_, queue.get(), live_);
    threads_.emplace_back([this, q = queue.get()] { Run(q); });
  }
}

void GateQueues::Run(grpc::ServerCompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) {
    const auto* t = static_cast<const QueuedCall::Tag*>(tag);
    if (!t->call->Proceed(t->done_notice, ok)) delete t->call;
  }
}

void GateQueues::Shutdown() {
  if (queues_.empty()) return;
  for (auto& queue : queues_) queue->Shutdown();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  // Drained before they go (a queue never started has nothing in it).
  for (auto& queue : queues_) {
    void* tag = nullptr;
    bool ok = false;
    while (queue->Next(&tag, &ok)) {
      const auto* t = static_cast<const QueuedCall::Tag*>(tag);
      if (!t->call->Proceed(t->done_notice, ok)) delete t->call;
    }
  }
  queues_.clear();
}

bool Gate::Parse(const grpc::ByteBuffer& body, google::protobuf::MessageLite* request) {
  std::vector<grpc::Slice> slices;
  if (!body.Dump(&slices).ok()) return false;
  std::string bytes;
  bytes.reserve(body.Length());
  for (const auto& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return request->ParseFromString(bytes);
}

Result<std::uint64_t> WithdrawSpent(ClientSession& session, v1::Coordinator::Stub& stub,
                                    const std::string& token,
                                    std::span<const std::uint64_t> exhausted,
                                    std::uint64_t hosted) {
  v1::WithdrawRequest request;
  request.set_token(token);
  request.mutable_users()->Assign(exhausted.begin(), exhausted.end());
  auto done = session.Call<v1::WithdrawReply>(
      [&](grpc::ClientContext* c, const std::string& s, v1::WithdrawReply* r) {
        request.set_session(s);
        return stub.Withdraw(c, request, r);
      },
      "withdraw");
  if (!done.ok()) return Error{done.error()};
  session.Say("withdrew " + std::to_string(exhausted.size()) + " user(s) whose budget is spent; " +
              std::to_string(done->withdrawn()) + " of " + std::to_string(hosted) + " withdrawn");
  if (done->withdrawn() >= hosted) {
    session.Say("every user's budget is spent: nothing more to report");
  }
  return done->withdrawn();
}

HandOver HandToShuffler(v1::Shuffler::Stub& shuffler, const std::string& token,
                        const std::string& session, std::uint64_t round, std::uint64_t user,
                        std::vector<std::string> pieces) {
  v1::ShuffleRequest request;
  request.set_token(token);
  request.set_session(session);
  request.set_round(round);
  request.set_user(user);
  for (auto& p : pieces) request.add_pieces(std::move(p));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  SetClientCredentials(&context, token, session);
  context.AddMetadata(kUserKey, std::to_string(user));
  context.AddMetadata(kRoundKey, std::to_string(round));
  v1::ShuffleReply verdict;
  const grpc::Status status = shuffler.Shuffle(&context, request, &verdict);
  HandOver out;
  if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
    // Held or sent on already, answered without reading the pieces again.
    out.reached = true;
    out.accepted = true;
  } else if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    // Refused before the pieces were read: an answer, as `verdict` is.
    out.reached = true;
    out.reason = status.error_message();
  } else if (!status.ok()) {
    out.reason = status.error_message();
  } else {
    out.reached = true;
    out.accepted = verdict.accepted();
    out.reason = verdict.reason();
  }
  return out;
}

bool NoteHandOver(const HandOver& handed, const std::string& shuffler, std::uint64_t user,
                  std::uint64_t round_shown, const Retrier& log, bool& down) {
  if (!handed.reached) {
    if (!down) {
      log.Say("shuffler " + shuffler + " unavailable (" + handed.reason +
              "); retrying while the round lasts");
    }
    down = true;
    return false;
  }
  if (down) log.Say("shuffler " + shuffler + " reachable again");
  down = false;
  if (!handed.accepted) {
    log.Say("round " + std::to_string(round_shown) + ": the shuffler refused user " +
            std::to_string(user) + "'s pieces: " + handed.reason);
  }
  return true;
}

}  // namespace fedldp::net_internal
