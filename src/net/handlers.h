// Internal to the net module: what the service handlers of both protocols
// (fedsel_handlers.h, ldpfl_handlers.h) share.
#ifndef FEDLDP_SRC_NET_HANDLERS_H_
#define FEDLDP_SRC_NET_HANDLERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/v1/service.pb.h"

namespace fedldp::net_internal {

// OK, or why the call is refused (the gRPC layer maps the kind to a status).
struct Outcome {
  enum class Kind {
    kOk,
    kPermissionDenied,
    kUnauthenticated,
    kSessionEnded,     // FAILED_PRECONDITION: join again
    kInUse,            // ALREADY_EXISTS: another client holds the token
    kInvalidArgument,
  };
  Kind kind = Kind::kOk;
  std::string message;
  bool ok() const { return kind == Kind::kOk; }
};

// A coordinator's refusal as an outcome; `otherwise` for the kinds that
// have no status of their own.
inline Outcome Refused(Refusal refusal, std::string message, Outcome::Kind otherwise) {
  switch (refusal) {
    case Refusal::kSessionEnded:
      return {Outcome::Kind::kSessionEnded, std::move(message)};
    case Refusal::kInUse:
      return {Outcome::Kind::kInUse, std::move(message)};
    default:
      return {otherwise, std::move(message)};
  }
}

// Join, the same for either protocol's coordinator; `task` is the
// coordinator's task as a serialized fedldp.v1.Task.
template <typename Coordinator>
Outcome HandleJoinWith(Coordinator& coordinator, const std::string& task,
                       const v1::JoinRequest& request, v1::JoinReply* reply,
                       typename Coordinator::Clock::time_point now) {
  const auto joined = coordinator.Join(request.token(), request.users(), now);
  if (!joined.error.empty()) {
    return Refused(joined.refusal, joined.error, Outcome::Kind::kPermissionDenied);
  }
  reply->mutable_task()->ParseFromString(task);
  reply->set_first_user(joined.first);
  reply->set_users(joined.users);
  reply->set_session(joined.session);
  return {};
}

// Withdraw, the same for either protocol's coordinator.
template <typename Coordinator>
Outcome HandleWithdrawWith(Coordinator& coordinator, const v1::WithdrawRequest& request,
                           v1::WithdrawReply* reply, typename Coordinator::Clock::time_point now) {
  const std::vector<std::uint64_t> users(request.users().begin(), request.users().end());
  const auto done = coordinator.Withdraw(request.token(), request.session(), users, now);
  if (!done.ok()) {
    return Refused(done.refusal, done.error,
                   done.refusal == Refusal::kBadRequest ? Outcome::Kind::kInvalidArgument
                                                        : Outcome::Kind::kUnauthenticated);
  }
  reply->set_withdrawn(done.withdrawn);
  return {};
}

// A poll's answer but the model (and LDP-FL's ranges).
void SetPollReply(const FedSelCoordinator::Poll& poll, v1::PollReply* reply);

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_HANDLERS_H_
