// Internal to the net module: what the service handlers of both protocols
// (fedsel_handlers.h, ldpfl_handlers.h) share.
#ifndef FEDLDP_SRC_NET_HANDLERS_H_
#define FEDLDP_SRC_NET_HANDLERS_H_

#include <string>

#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/v1/service.pb.h"

namespace fedldp::net_internal {

// OK, or why the call is refused (the gRPC layer maps the kind to a status).
struct Outcome {
  enum class Kind { kOk, kPermissionDenied, kUnauthenticated };
  Kind kind = Kind::kOk;
  std::string message;
  bool ok() const { return kind == Kind::kOk; }
};

// Join, the same for either protocol's coordinator; `task` is the
// coordinator's task as a serialized fedldp.v1.Task.
template <typename Coordinator>
Outcome HandleJoinWith(Coordinator& coordinator, const std::string& task,
                       const v1::JoinRequest& request, v1::JoinReply* reply,
                       typename Coordinator::Clock::time_point now) {
  const auto joined = coordinator.Join(request.token(), request.users(), now);
  if (!joined.error.empty()) return {Outcome::Kind::kPermissionDenied, joined.error};
  reply->mutable_task()->ParseFromString(task);
  reply->set_first_user(joined.first);
  reply->set_users(joined.users);
  return {};
}

// A poll's answer but the model (and LDP-FL's ranges).
void SetPollReply(const FedSelCoordinator::Poll& poll, v1::PollReply* reply);

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_HANDLERS_H_
