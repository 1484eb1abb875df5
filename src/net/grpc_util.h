// Internal to the net module: what every gRPC face of the deployment needs
// (credentials from PEM files, a channel that finds a restarted peer within a
// second, calls retried while the peer is away, and exceptions from the
// plain logic turned into UNAVAILABLE).
#ifndef FEDLDP_SRC_NET_GRPC_UTIL_H_
#define FEDLDP_SRC_NET_GRPC_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "fedldp/base/status.h"
#include "fedldp/net/services.h"
#include "handlers.h"

namespace fedldp::net_internal {

Result<std::string> ReadFile(const std::string& path);

// TLS from tls.certificate / tls.key when given, else plaintext.
Result<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const TlsFiles& tls);
// A channel to `address`, trusting tls.ca when given.
Result<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address, const TlsFiles& tls);

// A handler's outcome as a gRPC status.
inline grpc::Status StatusOf(const Outcome& o) {
  switch (o.kind) {
    case Outcome::Kind::kOk:
      return grpc::Status::OK;
    case Outcome::Kind::kPermissionDenied:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, o.message);
    case Outcome::Kind::kUnauthenticated:
      break;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, o.message);
}

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

// Calls an RPC until it succeeds, fails for a reason retrying cannot fix,
// stop() says so, or the peer stays unreachable for give_up.
class Retrier {
 public:
  using Clock = std::chrono::steady_clock;
  Retrier(std::string peer, std::function<bool()> stop, std::function<void(const std::string&)> log,
          std::chrono::milliseconds give_up)
      : peer_(std::move(peer)), stop_(std::move(stop)), log_(std::move(log)), give_up_(give_up) {}

  template <typename Reply, typename Invoke>
  Result<Reply> Call(Invoke invoke, const char* what) {
    const auto start = Clock::now();
    auto backoff = std::chrono::milliseconds(50);
    bool said = false;
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
      // Retried: a peer away (UNAVAILABLE), slow (DEADLINE_EXCEEDED) or
      // stopping (CANCELLED: a server shutting down cancels the calls it
      // holds; this client cancels none). Anything else is an answer.
      const auto code = status.error_code();
      if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED &&
          code != grpc::StatusCode::CANCELLED) {
        return Error{std::string(what) + " refused: " + status.error_message()};
      }
      if (Clock::now() - start > give_up_) {
        return Error{std::string(what) + ": " + peer_ + " unreachable for " +
                     std::to_string(give_up_.count() / 1000) + " s: " + status.error_message()};
      }
      if (!said)
        Say(std::string(what) + ": " + peer_ + " unavailable (" + status.error_message() +
            "); retrying");
      said = true;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
  }

  void Say(const std::string& line) const {
    if (log_) log_(line);
  }

 private:
  const std::string peer_;
  const std::function<bool()> stop_;
  const std::function<void(const std::string&)> log_;
  const std::chrono::milliseconds give_up_;
};

// A gRPC server with a timer thread (tick every 10 ms) until Shutdown.
struct RunningServer {
  std::unique_ptr<grpc::Server> server;
  std::thread ticker;
  std::function<void()> drain;
  std::atomic<bool> stopping{false};
  void Shutdown();
};
// Builds, listens on `address` (port 0: a free one, written to *port) and
// starts `tick` on its own thread; a tick that throws sets `failed`. On
// Shutdown the timer stops, then `drain` (if any) answers calls the service
// holds, then the server stops.
Result<std::unique_ptr<RunningServer>> StartServer(grpc::Service* service,
                                                   const std::string& address, const TlsFiles& tls,
                                                   int* port, std::function<void()> tick,
                                                   std::shared_ptr<std::atomic<bool>> failed,
                                                   std::function<void()> drain = {});

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_GRPC_UTIL_H_
