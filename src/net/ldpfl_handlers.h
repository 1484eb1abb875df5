// The LDP-FL server's service calls as plain functions: a request message in,
// a reply message and an outcome out, with no gRPC in between. The gRPC
// service (ldpfl_services.cc) and the service fuzzer
// (fuzz/ldpfl_service_fuzz.cc) both call these, so what is fuzzed is what
// serves. Vouch, RoundInfo and Deliver answer only the shuffler (its token
// compared in constant time).
#ifndef FEDLDP_SRC_NET_LDPFL_HANDLERS_H_
#define FEDLDP_SRC_NET_LDPFL_HANDLERS_H_

#include <string>
#include <string_view>

#include "fedldp/net/ldpfl_deploy.h"
#include "fedldp/v1/service.pb.h"
#include "handlers.h"

namespace fedldp::net_internal {

using LdpFlTime = LdpFlCoordinator::Clock::time_point;

// `task` is the coordinator's task as a serialized fedldp.v1.Task.
Status HandleJoin(LdpFlCoordinator& coordinator, const std::string& task,
                  const v1::JoinRequest& request, v1::JoinReply* reply, LdpFlTime now);
// The model and ranges are left out when the client says it has this
// round's (known_round).
Status HandlePoll(LdpFlCoordinator& coordinator, const v1::PollRequest& request,
                  v1::PollReply* reply, LdpFlTime now);
Status HandleWithdraw(LdpFlCoordinator& coordinator, const v1::WithdrawRequest& request,
                      v1::WithdrawReply* reply, LdpFlTime now);
Status HandleVouch(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                   const v1::VouchRequest& request, v1::VouchReply* reply);
Status HandleRoundInfo(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                       const v1::RoundInfoRequest& request, v1::RoundInfoReply* reply,
                       LdpFlTime now);
Status HandleDeliver(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                     const v1::DeliverRequest& request, v1::DeliverReply* reply, LdpFlTime now);

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_LDPFL_HANDLERS_H_
