// A coordinator's gRPC face, for both protocols: a Gate, whose client calls are admitted on the
// token (and but for Join, the session) in their metadata and whose shuffler calls on the
// shuffler's token, before their bodies are read; no call holds a thread.
#ifndef FEDLDP_SRC_NET_COORDINATOR_GATE_H_
#define FEDLDP_SRC_NET_COORDINATOR_GATE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "call_allowance.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "fedsel_handlers.h"
#include "grpc_util.h"
#include "ldpfl_handlers.h"

namespace fedldp::net_internal {

// The name of a Coordinator method on the wire.
inline std::string CoordinatorMethod(const char* name) {
  return std::string("/") + v1::Coordinator::service_full_name() + "/" + name;
}

// What CoordinatorServer runs: the gate, and what its timer and its
// shutdown call.
class GatedService {
 public:
  virtual ~GatedService() = default;
  Gate* gate() { return &gate_; }
  // On the server's timer, after the coordinator's Tick.
  virtual void Release(std::chrono::steady_clock::time_point) {}
  // Before the server shuts down: answer every call it holds.
  virtual void Drain() {}
  // The largest call it takes (0: kMaxMessageBytes).
  virtual std::uint64_t LargestCall() const { return 0; }

 protected:
  Gate gate_;
};

template <typename Coordinator>
class CoordinatorGate : public GatedService {
 protected:
  CoordinatorGate(Coordinator& coordinator, std::string shuffler_token,
                  std::shared_ptr<std::atomic<bool>> failed)
      : coordinator_(coordinator),
        shuffler_token_(std::move(shuffler_token)),
        failed_(std::move(failed)),
        allowance_([&coordinator](const std::string& line) { coordinator.Say(line); }) {
    gate_.OnBody([this](const grpc::ServerContextBase& context, std::size_t bytes) {
      const std::string token = Metadata(context, kTokenKey);
      if (token.empty()) return;  // the shuffler's calls
      allowance_.Count(token, coordinator_.AllowanceOf(token).round, bytes);
    });
  }

  std::uint64_t LargestCall() const override { return coordinator_.LargestCall(); }

  // A client's method answered at once by `handle(request, reply)`.
  template <typename Request, typename Reply, typename Handle>
  void Answered(const char* name, bool with_session, Handle handle) {
    gate_.Add<Request, Reply>(
        CoordinatorMethod(name), Admit(with_session),
        [this, handle](grpc::ServerContextBase& context, const Request& request, Reply* reply,
                       Gate::Finish finish) {
          finish(Guard(*failed_, [&] {
            return Checked(context, request, [&] { return handle(request, reply); });
          }));
        });
  }

  // A method of the shuffler's, admitted on its token in metadata (the
  // handler checks the body's), answered at once.
  template <typename Request, typename Reply, typename Handle>
  void ForShuffler(const char* name, Handle handle) {
    gate_.Add<Request, Reply>(
        CoordinatorMethod(name),
        [this](const grpc::ServerContextBase& context) {
          if (failed_->load()) {
            return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server stopping");
          }
          return StatusOf(AdmitShuffler(Metadata(context, kShufflerTokenKey), shuffler_token_));
        },
        [this, handle](grpc::ServerContextBase&, const Request& request, Reply* reply,
                       Gate::Finish finish) {
          finish(Guard(*failed_, [&] { return StatusOf(handle(request, reply)); }));
        });
  }

  // Withdraw, for clients; Vouch, RoundInfo and Deliver, for the shuffler.
  void AddWithdraw() {
    Answered<v1::WithdrawRequest, v1::WithdrawReply>(
        "Withdraw", true, [this](const auto& q, auto* r) {
          return HandleWithdraw(coordinator_, q, r, std::chrono::steady_clock::now());
        });
  }
  void AddShufflerMethods() {
    ForShuffler<v1::VouchRequest, v1::VouchReply>("Vouch", [this](const auto& q, auto* r) {
      return HandleVouch(coordinator_, shuffler_token_, q, r);
    });
    ForShuffler<v1::VouchManyRequest, v1::VouchManyReply>(
        "VouchMany", [this](const auto& q, auto* r) {
          return HandleVouchManyWith(coordinator_, shuffler_token_, q, r);
        });
    ForShuffler<v1::RoundInfoRequest, v1::RoundInfoReply>("RoundInfo", [this](const auto& q,
                                                                              auto* r) {
      return HandleRoundInfo(coordinator_, shuffler_token_, q, r, std::chrono::steady_clock::now());
    });
    ForShuffler<v1::DeliverRequest, v1::DeliverReply>("Deliver", [this](const auto& q, auto* r) {
      return HandleDeliver(coordinator_, shuffler_token_, q, r, std::chrono::steady_clock::now());
    });
  }

  // A client's call, admitted on the token (and but for Join, the session)
  // in its metadata.
  std::function<grpc::Status(const grpc::ServerContextBase&)> Admit(bool with_session) {
    return [this, with_session](const grpc::ServerContextBase& context) {
      if (failed_->load()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server stopping");
      const std::string token = Metadata(context, kTokenKey);
      const std::string session = Metadata(context, kSessionKey);
      Status admitted =
          AdmitClient(coordinator_, token,
                      with_session ? std::optional<std::string_view>(session) : std::nullopt);
      if (admitted.ok()) admitted = allowance_.Admit(token, coordinator_.AllowanceOf(token));
      return StatusOf(admitted);
    };
  }

  // `handle()`, once the body's token and session are those admitted.
  template <typename Request, typename Handle>
  static grpc::Status Checked(const grpc::ServerContextBase& context, const Request& request,
                              Handle handle) {
    Status same = SameCredentials(Metadata(context, kTokenKey), request.token());
    if constexpr (requires { request.session(); }) {
      if (same.ok()) same = SameCredentials(Metadata(context, kSessionKey), request.session());
    }
    return StatusOf(same.ok() ? handle() : same);
  }

  Coordinator& coordinator_;
  const std::string shuffler_token_;
  std::shared_ptr<std::atomic<bool>> failed_;
  CallAllowance allowance_;
};

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_COORDINATOR_GATE_H_
