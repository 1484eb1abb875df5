// Internal to the net module: what every gRPC face of the deployment needs
// (credentials from PEM files, a channel that finds a restarted peer within a
// second, calls retried while the peer is away, and exceptions from the
// plain logic turned into UNAVAILABLE).
#ifndef FEDLDP_SRC_NET_GRPC_UTIL_H_
#define FEDLDP_SRC_NET_GRPC_UTIL_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/net/services.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "handlers.h"
#include "listen_watch.h"

namespace fedldp::net_internal {

Result<std::string> ReadFile(const std::string& path);

// TLS from tls.certificate / tls.key when given, else plaintext.
Result<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const TlsFiles& tls);
// A channel to `address`, trusting tls.ca when given.
Result<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address, const TlsFiles& tls);

// host:port as (host, port), brackets of [v6] removed; ("", "") parts
// where absent.
std::pair<std::string, std::string> SplitAddress(const std::string& address);

// Why a channel to `address` with `tls` can never work, found by one TCP
// connection (src/net/connection_probe.cc): a certificate that is not for
// the name connected to, not trusted by tls.ca (`ca_flag` names the option
// that gave it), expired or not yet valid; TLS on one side only; a peer
// that is no gRPC server. Each is one sentence with the fix. OK when the
// peer looks right or cannot be judged (nothing listens yet, a silent peer):
// the caller keeps retrying then.
Status ProbeServer(const std::string& address, const TlsFiles& tls, const char* ca_flag,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

// A handler's status as a gRPC status.
inline grpc::Status StatusOf(const Status& s) {
  switch (s.code()) {
    case ErrorCode::kOk:
      return grpc::Status::OK;
    case ErrorCode::kPermissionDenied:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, s.error());
    case ErrorCode::kFailedPrecondition:
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, s.error());
    case ErrorCode::kAlreadyExists:
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, s.error());
    case ErrorCode::kInvalidArgument:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, s.error());
    case ErrorCode::kIo:
      return grpc::Status(grpc::StatusCode::INTERNAL, s.error());
    case ErrorCode::kResourceExhausted:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, s.error());
    case ErrorCode::kUnauthenticated:
      break;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, s.error());
}

// ------------------------------------------------ credentials in metadata

// The value of `key` in a call's metadata ("" if absent).
std::string Metadata(const grpc::ServerContextBase& context, std::string_view key);
// A client's token and session (none yet: Join), into the call's metadata.
void SetClientCredentials(grpc::ClientContext* context, std::string_view token,
                          std::string_view session = {});
void SetShufflerCredentials(grpc::ClientContext* context, std::string_view shuffler_token);

// A unary call on gRPC's sync API, registered as streamed so that gRPC does
// not read its body before the handler runs: `admit()` checks the call's
// metadata, and only then is the request read and `serve(request, reply)`
// run. A refused call's body is never read.
template <typename Request, typename Reply, typename Admit, typename Serve>
grpc::Status ServeAdmitted(grpc::ServerUnaryStreamer<Request, Reply>* stream, Admit admit,
                           Serve serve) {
  if (grpc::Status admitted = admit(); !admitted.ok()) return admitted;
  Request request;
  if (!stream->Read(&request)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request could be read");
  }
  Reply reply;
  grpc::Status status = serve(request, &reply);
  if (status.ok() && !stream->Write(reply)) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the reply could not be sent");
  }
  return status;
}

// A service whose every call is admitted on its metadata before its body
// is read, so that a call refused there costs the server its headers,
// whatever the size of its body. A method not added is UNIMPLEMENTED,
// unread. StartServer serves it on gRPC's completion-queue API (GateQueues):
// a call's steps run on one queue's thread, not handed between gRPC's
// pollers and executors, and a held call holds no thread.
class Gate final {
 public:
  Gate() = default;
  Gate(const Gate&) = delete;  // its methods know it
  Gate& operator=(const Gate&) = delete;
  // Set once a call is over; a call still held that is over was cancelled
  // by its client, or outlived its deadline. (gRPC's IsCancelled may not be
  // asked on its completion-queue API before the call is over.)
  using Gone = std::shared_ptr<const std::atomic<bool>>;
  // Answers a call once, at once or later (a held poll), from any thread.
  class Finish {
   public:
    Finish(std::function<void(const grpc::Status&)> answer, Gone gone)
        : answer_(std::move(answer)), gone_(std::move(gone)) {}
    void operator()(const grpc::Status& status) const { answer_(status); }
    bool gone() const { return gone_ != nullptr && gone_->load(); }

   private:
    std::function<void(const grpc::Status&)> answer_;
    Gone gone_;
  };
  struct Method {
    std::function<grpc::Status(const grpc::ServerContextBase&)> admit;
    // The body, and how to answer: with the status and, if OK, the reply.
    std::function<void(grpc::ServerContextBase&, const grpc::ByteBuffer&,
                       std::function<void(const grpc::Status&, const std::string& reply)>, Gone)>
        serve;
  };

  // `name` as on the wire, e.g. "/fedldp.v1.Coordinator/Join". `serve` gets
  // the parsed request and a reply to fill; both live until it calls finish.
  template <typename Request, typename Reply, typename Admit, typename Serve>
  void Add(std::string name, Admit admit, Serve serve) {
    methods_[std::move(name)] = Method{
        std::move(admit),
        [this, serve = std::move(serve)](grpc::ServerContextBase& context,
                                         const grpc::ByteBuffer& body, auto answer, Gone gone) {
          if (on_body_) on_body_(context, body.Length());
          auto call = std::make_shared<std::pair<Request, Reply>>();
          if (!Parse(body, &call->first)) {
            answer(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the request cannot be read"),
                   "");
            return;
          }
          serve(context, call->first, &call->second,
                Finish(
                    [call, answer](const grpc::Status& status) {
                      answer(status,
                             status.ok() ? call->second.SerializeAsString() : std::string());
                    },
                    std::move(gone)));
        }};
  }

  // Told each call's body size once it is read, before it is parsed.
  void OnBody(std::function<void(const grpc::ServerContextBase&, std::size_t bytes)> read) {
    on_body_ = std::move(read);
  }

  // The method called `name` on the wire, or null.
  const Method* Find(const std::string& name) const {
    const auto it = methods_.find(name);
    return it == methods_.end() ? nullptr : &it->second;
  }

 private:
  static bool Parse(const grpc::ByteBuffer& body, google::protobuf::MessageLite* request);
  std::unordered_map<std::string, Method> methods_;
  std::function<void(const grpc::ServerContextBase&, std::size_t)> on_body_;
};

// Serves a Gate on `threads` completion queues, a thread each. Made with
// the server's builder; Start once the server is built; Shutdown after the
// server's own.
class GateQueues {
 public:
  GateQueues(const Gate& gate, grpc::ServerBuilder& builder, int threads);
  ~GateQueues();
  void Start();
  void Shutdown();
  // No call is awaited, held or being answered (once its server is shut
  // down, the queues may go).
  bool Idle() const { return live_.load() == 0; }

 private:
  void Run(grpc::ServerCompletionQueue* queue);
  const Gate& gate_;
  std::atomic<int> live_{0};
  grpc::AsyncGenericService service_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
};

// Runs a service handler; the plain logic throws only when it cannot save
// its state: answer UNAVAILABLE (callers retry) and flag the process to stop.
template <typename F>
grpc::Status Guard(std::atomic<bool>& failed, F f) {
  if (failed.load()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server stopping");
  try {
    return f();
  } catch (const std::exception& e) {
    failed.store(true);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, e.what());
  }
}

// A failed call's peer that may answer later: away (UNAVAILABLE), slow
// (DEADLINE_EXCEEDED) or stopping (CANCELLED: a server shutting down cancels
// the calls it holds; a client cancels only its own when it stops).
inline bool PeerAway(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::CANCELLED;
}
// A failed call worth repeating: its peer away, or it asked the client to
// slow down (RESOURCE_EXHAUSTED: past its pace or its round's bytes).
// Anything else is an answer.
inline bool RetryMayMend(grpc::StatusCode code) {
  return PeerAway(code) || code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

// Calls an RPC until it succeeds, fails for a reason retrying cannot fix,
// stop() says so, or the peer stays unreachable for give_up.
class Retrier {
 public:
  using Clock = std::chrono::steady_clock;
  Retrier(std::string peer, std::function<bool()> stop, std::function<void(const std::string&)> log,
          std::chrono::milliseconds give_up)
      : peer_(std::move(peer)), stop_(std::move(stop)), log_(std::move(log)), give_up_(give_up) {}
  // Asked (at most every 5 s) when the peer cannot be reached: an error
  // ends the call at once (ProbeServer: a mistake retrying cannot mend).
  void Diagnose(std::function<Status()> diagnose) { diagnose_ = std::move(diagnose); }

  // `also_retry`: one more status code to retry like an absent peer (a
  // Join refused while another session holds the token).
  template <typename Reply, typename Invoke>
  Result<Reply> Call(Invoke invoke, const char* what,
                     std::optional<grpc::StatusCode> also_retry = std::nullopt) {
    const auto start = Clock::now();
    auto backoff = std::chrono::milliseconds(50);
    bool said = false;
    last_code_ = grpc::StatusCode::OK;
    while (true) {
      if (stop_ && stop_()) return Error{"stopped"};
      grpc::ClientContext context;
      // Short: a call answers in milliseconds; a peer that went away is
      // found again by retrying, not by waiting on a dead connection.
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
      Reply reply;
      const grpc::Status status = invoke(&context, &reply);
      if (status.ok()) {
        if (said) Say(std::string(what) + ": " + peer_ + " reachable again");
        return reply;
      }
      // Retried: RetryMayMend (this client cancels none of its calls).
      const auto code = status.error_code();
      last_code_ = code;
      const bool away = PeerAway(code);
      if (code == grpc::StatusCode::UNIMPLEMENTED) {
        return Error{std::string(what) + ": " + peer_ + " is a gRPC server without this call (" +
                     status.error_message() +
                     "): is it another fedldp service's port (the shuffler's, say)?"};
      }
      if (!RetryMayMend(code) && code != also_retry) {
        return Error{std::string(what) + " refused: " + status.error_message()};
      }
      if (code == grpc::StatusCode::UNAVAILABLE && diagnose_ &&
          Clock::now() - last_diagnosis_ > std::chrono::seconds(5)) {
        last_diagnosis_ = Clock::now();
        if (Status why = diagnose_(); !why.ok())
          return Error{std::string(what) + ": " + why.error()};
      }
      if (Clock::now() - start > give_up_) {
        return Error{std::string(what) + ": " + peer_ + (away ? " unreachable" : " refused") +
                     " for " + std::to_string(give_up_.count() / 1000) +
                     " s: " + status.error_message()};
      }
      if (!said)
        Say(std::string(what) + ": " + peer_ + (away ? " unavailable (" : " refused (") +
            status.error_message() + "); retrying");
      said = true;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
  }

  void Say(const std::string& line) const {
    if (log_) log_(line);
  }
  // The status of the last failed attempt of the last Call (OK if none).
  grpc::StatusCode last_code() const { return last_code_; }

 private:
  const std::string peer_;
  const std::function<bool()> stop_;
  const std::function<void(const std::string&)> log_;
  const std::chrono::milliseconds give_up_;
  grpc::StatusCode last_code_ = grpc::StatusCode::OK;
  std::function<Status()> diagnose_;
  Clock::time_point last_diagnosis_{};
};

// A client's hold on its token: Join opens a session, and every later call
// carries it. A Join refused because another session on the token is live
// is retried until give_up (it may be this client's own earlier process,
// not yet quiet); a call refused because the session ended (the server
// restarted) joins again, once, and repeats the call.
class ClientSession {
 public:
  using JoinRpc =
      std::function<grpc::Status(grpc::ClientContext*, const v1::JoinRequest&, v1::JoinReply*)>;
  ClientSession(Retrier& retrier, JoinRpc join, v1::JoinRequest request)
      : retrier_(retrier), join_(std::move(join)), request_(std::move(request)) {}

  Result<v1::JoinReply> Join() {
    auto joined = retrier_.Call<v1::JoinReply>(
        [&](grpc::ClientContext* c, v1::JoinReply* r) {
          SetClientCredentials(c, request_.token());
          return join_(c, request_, r);
        },
        "join", grpc::StatusCode::ALREADY_EXISTS);
    if (!joined.ok()) return joined;
    if (first_ &&
        (joined->first_user() != first_->first_user() || joined->users() != first_->users())) {
      return Error{"the server gave this client other users on joining again"};
    }
    if (joined->session().empty()) return Error{"the server opened no session"};
    session_ = joined->session();
    if (!first_) first_ = *joined;
    return joined;
  }

  // invoke(context, session, reply); the context carries the token and
  // session in its metadata.
  template <typename Reply, typename Invoke>
  Result<Reply> Call(Invoke invoke, const char* what) {
    auto call = [&] {
      return retrier_.Call<Reply>(
          [&](grpc::ClientContext* c, Reply* r) {
            SetClientCredentials(c, request_.token(), session_);
            return invoke(c, session_, r);
          },
          what);
    };
    auto reply = call();
    if (reply.ok() || retrier_.last_code() != grpc::StatusCode::FAILED_PRECONDITION) return reply;
    retrier_.Say(std::string(what) + ": the session ended; joining again");
    auto joined = Join();
    if (!joined.ok()) return Error{joined.error()};
    return call();
  }

  const std::string& session() const { return session_; }
  void Say(const std::string& line) const { retrier_.Say(line); }

 private:
  Retrier& retrier_;
  const JoinRpc join_;
  const v1::JoinRequest request_;
  std::string session_;
  std::optional<v1::JoinReply> first_;
};

// Tells the server that `exhausted`, users of this client whose budget is
// spent, withdraw (and says so in the log). Returns how many of the client's
// `hosted` users are withdrawn in all: all of them, and the client is done.
Result<std::uint64_t> WithdrawSpent(ClientSession& session, v1::Coordinator::Stub& stub,
                                    const std::string& token,
                                    std::span<const std::uint64_t> exhausted, std::uint64_t hosted);

// One user's sealed pieces for `round`, handed to the shuffler (both
// protocols' clients). `reached`: the shuffler answered (or refused before
// reading, which is an answer too); then `accepted` or the `reason`.
struct HandOver {
  bool reached = false, accepted = false;
  std::string reason;  // refused: why; not reached: the status message
};
HandOver HandToShuffler(v1::Shuffler::Stub& shuffler, const std::string& token,
                        const std::string& session, std::uint64_t round, std::uint64_t user,
                        std::vector<std::string> pieces);

// Says in `log` what a hand-over means: the shuffler down (once, until it
// is reachable again; `down` keeps that), or its refusal of the user's
// pieces (the round as people count it: `round_shown`). False if the
// shuffler could not be reached: send no more this pass, retry later.
bool NoteHandOver(const HandOver& handed, const std::string& shuffler, std::uint64_t user,
                  std::uint64_t round_shown, const Retrier& log, bool& down);

// What a server serves: a service of the generated API, or a Gate.
struct Served {
  grpc::Service* service = nullptr;
  const Gate* gate = nullptr;
  // The Gate's completion queues, a thread each. One was the fastest on
  // 2 cores shared with 1,000 load clients (docs/deploying.md); the
  // coordinators serialise their state on one mutex in any case.
  int queues = 1;
  // Calls larger than this are refused unread (0: kMaxMessageBytes; never
  // more).
  std::uint64_t largest_call = 0;
  // Where the server says what it does to its connections (may be empty).
  std::function<void(const std::string&)> say;
};

// One built gRPC server, and the queues of its Gate (if it serves one).
struct BuiltServer {
  BuiltServer() = default;
  BuiltServer(BuiltServer&&) = default;
  BuiltServer& operator=(BuiltServer&& other) noexcept {
    if (this != &other) {
      Close();
      queues = std::move(other.queues);
      server = std::move(other.server);
    }
    return *this;
  }
  ~BuiltServer() { Close(); }
  std::unique_ptr<GateQueues> queues;
  std::unique_ptr<grpc::Server> server;
  // Shuts the server down (calls still open are cancelled after `grace`).
  void Stop(std::chrono::milliseconds grace);
  // Stops it at once, then gRPC's order: the server's queues shut down
  // after the server, and go after it.
  void Close();
};

// A gRPC server with a timer thread (tick every 10 ms) until Shutdown. The
// timer also keeps the listener answering (listen_watch.h): it sheds the
// longest-idle connections beyond `cap`, and rebuilds the server on the
// same port when connections wait unaccepted.
struct RunningServer {
  Served served;
  std::string address;  // with the port it was given
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::size_t cap = 0;
  BuiltServer built;
  // Servers rebuilt away from, until their calls are over; and the
  // rebuilding under way (off the timer thread, which answers held calls).
  std::vector<BuiltServer> retired;
  std::future<std::pair<Result<BuiltServer>, BuiltServer>> rebuilding;
  std::optional<ListenWatch> watch;
  std::chrono::steady_clock::time_point next_look{}, said{};
  // Connections shed and listeners rebuilt since it last said so.
  std::size_t shed = 0, rebuilds = 0;
  bool listening = true;  // false from a failed rebuilding to a good one
  std::atomic<bool> rebuild_asked{false};
  std::thread ticker;
  std::function<void()> drain;
  std::atomic<bool> stopping{false};
  // The timer's care of the listener (see above).
  void Watch(std::chrono::steady_clock::time_point now);
  // Rebuilds the server at the next tick, as when its listener stalls.
  void Rebuild() { rebuild_asked.store(true); }
  void Shutdown();

 private:
  void Say(const std::string& line) const;
  // A rebuilding done: its server in place (or not). False: not done yet.
  bool TakeRebuilt();
  // Says what was shed and rebuilt, at most once per 10 s.
  void Report(std::chrono::steady_clock::time_point now);
};
// Builds, listens on `address` (port 0: a free one, written to *port) and
// starts `tick` on its own thread; a tick that throws sets `failed`. On
// Shutdown the timer stops, then `drain` (if any) answers calls the service
// holds, then the server stops. Raises the descriptor limit first.
Result<std::unique_ptr<RunningServer>> StartServer(Served served, const std::string& address,
                                                   const TlsFiles& tls, int* port,
                                                   std::function<void()> tick,
                                                   std::shared_ptr<std::atomic<bool>> failed,
                                                   std::function<void()> drain = {});

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_GRPC_UTIL_H_
