// The FedSel server's service calls as plain functions: a request message
// in, a reply message and an outcome out, with no gRPC in between. The gRPC
// service (services.cc) and the service fuzzer (fuzz/service_fuzz.cc) both
// call these, so what is fuzzed is what serves.
#ifndef FEDLDP_SRC_NET_FEDSEL_HANDLERS_H_
#define FEDLDP_SRC_NET_FEDSEL_HANDLERS_H_

#include <string>

#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/v1/service.pb.h"
#include "handlers.h"

namespace fedldp::net_internal {

// `task` is the coordinator's task as a serialized fedldp.v1.Task.
Status HandleJoin(FedSelCoordinator& coordinator, const std::string& task,
                  const v1::JoinRequest& request, v1::JoinReply* reply,
                  FedSelCoordinator::Clock::time_point now);
Status HandlePoll(FedSelCoordinator& coordinator, const v1::PollRequest& request,
                  v1::PollReply* reply, FedSelCoordinator::Clock::time_point now);
// What a poll with these credentials answers: HandlePoll's work, also
// for a submit's `next` (SubmitRequest.wait_ms). A heartbeat is not
// answered here (HandlePoll: RoundCoordinator::Heard).
Status AnswerPoll(FedSelCoordinator& coordinator, std::string_view token, std::string_view session,
                  v1::PollReply* reply, FedSelCoordinator::Clock::time_point now);
// *ticket (if given): with group commit, the reply may go only once
// coordinator.WhenDurable(*ticket) calls back.
Status HandleSubmit(FedSelCoordinator& coordinator, const v1::SubmitRequest& request,
                    v1::SubmitReply* reply, FedSelCoordinator::Clock::time_point now,
                    std::uint64_t* ticket = nullptr);
Status HandleWithdraw(FedSelCoordinator& coordinator, const v1::WithdrawRequest& request,
                      v1::WithdrawReply* reply, FedSelCoordinator::Clock::time_point now);
// A shuffled task's (config.shuffle): only the shuffler, holding
// `shuffler_token`, may call these.
Status HandleVouch(FedSelCoordinator& coordinator, std::string_view shuffler_token,
                   const v1::VouchRequest& request, v1::VouchReply* reply);
Status HandleRoundInfo(FedSelCoordinator& coordinator, std::string_view shuffler_token,
                       const v1::RoundInfoRequest& request, v1::RoundInfoReply* reply,
                       FedSelCoordinator::Clock::time_point now);
Status HandleDeliver(FedSelCoordinator& coordinator, std::string_view shuffler_token,
                     const v1::DeliverRequest& request, v1::DeliverReply* reply,
                     FedSelCoordinator::Clock::time_point now);

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_FEDSEL_HANDLERS_H_
