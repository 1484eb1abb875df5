#include "fedsel_handlers.h"

#include <utility>
#include <vector>

namespace fedldp::net_internal {

namespace pb = ::fedldp::v1;

void SetPollReply(const FedSelCoordinator::Poll& poll, pb::PollReply* reply) {
  using S = FedSelCoordinator::Poll::State;
  reply->set_state(poll.state == S::kRound      ? pb::PollReply::ROUND
                   : poll.state == S::kFinished ? pb::PollReply::FINISHED
                                                : pb::PollReply::WAITING);
  reply->set_round(poll.round);
  reply->mutable_users()->Assign(poll.users.begin(), poll.users.end());
  reply->set_deadline_ms(poll.deadline_ms);
  reply->set_retry_ms(poll.retry_ms);
}

Status HandleJoin(FedSelCoordinator& coordinator, const std::string& task,
                  const pb::JoinRequest& request, pb::JoinReply* reply,
                  FedSelCoordinator::Clock::time_point now) {
  const FedSelTaskSpec& spec = coordinator.spec();
  return HandleJoinWith(coordinator, task, {"fedsel", spec.dimension, spec.config.shuffle}, request,
                        reply, now);
}

Status HandlePoll(FedSelCoordinator& coordinator, const pb::PollRequest& request,
                  pb::PollReply* reply, FedSelCoordinator::Clock::time_point now) {
  if (request.heartbeat()) {
    return Refused(coordinator.Heard(request.token(), request.session(), now),
                   ErrorCode::kUnauthenticated);
  }
  return AnswerPoll(coordinator, request.token(), request.session(), reply, now);
}

Status AnswerPoll(FedSelCoordinator& coordinator, std::string_view token, std::string_view session,
                  pb::PollReply* reply, FedSelCoordinator::Clock::time_point now) {
  auto poll = coordinator.PollRound(token, session, now);
  if (!poll.ok()) return Refused(poll.status, ErrorCode::kUnauthenticated);
  SetPollReply(poll, reply);
  reply->mutable_weights()->Assign(poll.weights.begin(), poll.weights.end());
  return {};
}

Status HandleSubmit(FedSelCoordinator& coordinator, const pb::SubmitRequest& request,
                    pb::SubmitReply* reply, FedSelCoordinator::Clock::time_point now,
                    std::uint64_t* ticket) {
  std::vector<std::pair<std::uint64_t, std::string>> reports;
  reports.reserve(static_cast<std::size_t>(request.reports_size()));
  for (const auto& r : request.reports()) reports.emplace_back(r.user(), r.report());
  const auto result = coordinator.Submit(request.token(), request.session(), reports, now);
  if (!result.ok()) return Refused(result.status, ErrorCode::kUnauthenticated);
  if (ticket != nullptr) *ticket = result.ticket;
  for (const auto& v : result.verdicts) {
    auto* out = reply->add_verdicts();
    out->set_accepted(v.accepted);
    out->set_reason(v.reason);
  }
  return {};
}

Status HandleWithdraw(FedSelCoordinator& coordinator, const pb::WithdrawRequest& request,
                      pb::WithdrawReply* reply, FedSelCoordinator::Clock::time_point now) {
  return HandleWithdrawWith(coordinator, request, reply, now);
}

Status HandleVouch(FedSelCoordinator& coordinator, std::string_view shuffler_token,
                   const pb::VouchRequest& request, pb::VouchReply* reply) {
  return HandleVouchWith(coordinator, shuffler_token, request, reply);
}

Status HandleRoundInfo(FedSelCoordinator& coordinator, std::string_view shuffler_token,
                       const pb::RoundInfoRequest& request, pb::RoundInfoReply* reply,
                       FedSelCoordinator::Clock::time_point now) {
  return HandleRoundInfoWith(coordinator, shuffler_token, request, reply, now);
}

Status HandleDeliver(FedSelCoordinator& coordinator, std::string_view shuffler_token,
                     const pb::DeliverRequest& request, pb::DeliverReply* reply,
                     FedSelCoordinator::Clock::time_point now) {
  return HandleDeliverWith(coordinator, shuffler_token, request, reply, now);
}

}  // namespace fedldp::net_internal
