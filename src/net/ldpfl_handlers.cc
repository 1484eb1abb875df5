#include "ldpfl_handlers.h"

#include <utility>

#include "fedldp/model/neural_net.h"

namespace fedldp::net_internal {

namespace pb = ::fedldp::v1;

Status HandleJoin(LdpFlCoordinator& coordinator, const std::string& task,
                  const pb::JoinRequest& request, pb::JoinReply* reply, LdpFlTime now) {
  // A TorchScript model's input is the client's to check (0: any).
  const Architecture* built_in = FindArchitecture(coordinator.spec().config.arch);
  return HandleJoinWith(coordinator, task, {"ldpfl", built_in ? built_in->input : 0, true}, request,
                        reply, now);
}

Status HandlePoll(LdpFlCoordinator& coordinator, const pb::PollRequest& request,
                  pb::PollReply* reply, LdpFlTime now) {
  if (request.heartbeat()) {
    return Refused(coordinator.Heard(request.token(), request.session(), now),
                   ErrorCode::kUnauthenticated);
  }
  const auto poll = coordinator.PollRound(request.token(), request.session(), now);
  const auto& p = poll.round;
  if (!p.ok()) return Refused(p.status, ErrorCode::kUnauthenticated);
  SetPollReply(p, reply);
  if (request.has_known_round() && request.known_round() == p.round) return {};
  reply->mutable_weights()->Assign(p.weights.begin(), p.weights.end());
  for (const auto& r : poll.ranges) {
    reply->add_centers(r.center);
    reply->add_radii(r.radius);
  }
  return {};
}

Status HandleWithdraw(LdpFlCoordinator& coordinator, const pb::WithdrawRequest& request,
                      pb::WithdrawReply* reply, LdpFlTime now) {
  return HandleWithdrawWith(coordinator, request, reply, now);
}

Status HandleVouch(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                   const pb::VouchRequest& request, pb::VouchReply* reply) {
  return HandleVouchWith(coordinator, shuffler_token, request, reply);
}

Status HandleRoundInfo(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                       const pb::RoundInfoRequest& request, pb::RoundInfoReply* reply,
                       LdpFlTime now) {
  return HandleRoundInfoWith(coordinator, shuffler_token, request, reply, now);
}

Status HandleDeliver(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                     const pb::DeliverRequest& request, pb::DeliverReply* reply, LdpFlTime now) {
  return HandleDeliverWith(coordinator, shuffler_token, request, reply, now);
}

}  // namespace fedldp::net_internal
