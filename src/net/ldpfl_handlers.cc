#include "ldpfl_handlers.h"

#include <utility>

namespace fedldp::net_internal {

namespace pb = ::fedldp::v1;

namespace {

bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Outcome NotShuffler() { return {Outcome::Kind::kPermissionDenied, "only the shuffler may ask this"}; }

}  // namespace

Outcome HandleJoin(LdpFlCoordinator& coordinator, const std::string& task,
                   const pb::JoinRequest& request, pb::JoinReply* reply, LdpFlTime now) {
  return HandleJoinWith(coordinator, task, request, reply, now);
}

Outcome HandlePoll(LdpFlCoordinator& coordinator, const pb::PollRequest& request,
                   pb::PollReply* reply, LdpFlTime now) {
  const auto poll = coordinator.PollRound(request.token(), request.session(), now);
  const auto& p = poll.round;
  if (!p.error.empty()) return Refused(p.refusal, p.error, Outcome::Kind::kUnauthenticated);
  SetPollReply(p, reply);
  if (request.has_known_round() && request.known_round() == p.round) return {};
  reply->mutable_weights()->Assign(p.weights.begin(), p.weights.end());
  for (const auto& r : poll.ranges) {
    reply->add_centers(r.center);
    reply->add_radii(r.radius);
  }
  return {};
}

Outcome HandleWithdraw(LdpFlCoordinator& coordinator, const pb::WithdrawRequest& request,
                       pb::WithdrawReply* reply, LdpFlTime now) {
  return HandleWithdrawWith(coordinator, request, reply, now);
}

Outcome AdmitShuffler(std::string_view given, std::string_view shuffler_token) {
  return SameSecret(given, shuffler_token) ? Outcome{} : NotShuffler();
}

Outcome HandleVouch(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                    const pb::VouchRequest& request, pb::VouchReply* reply) {
  if (!SameSecret(request.shuffler_token(), shuffler_token)) return NotShuffler();
  const std::string why =
      coordinator.Vouch(request.token(), request.session(), request.user(), request.round());
  reply->set_ok(why.empty());
  reply->set_reason(why);
  return {};
}

Outcome HandleRoundInfo(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                        const pb::RoundInfoRequest& request, pb::RoundInfoReply* reply,
                        LdpFlTime now) {
  if (!SameSecret(request.shuffler_token(), shuffler_token)) return NotShuffler();
  const auto info = coordinator.RoundInfo(now);
  reply->set_round(info.round);
  reply->set_expected(info.expected);
  reply->mutable_delivered()->Assign(info.delivered.begin(), info.delivered.end());
  reply->set_waiting(info.waiting);
  reply->set_deadline_ms(info.deadline_ms);
  reply->set_open(info.open);
  reply->set_finished(info.finished);
  reply->set_chunks(info.chunks);
  return {};
}

Outcome HandleDeliver(LdpFlCoordinator& coordinator, std::string_view shuffler_token,
                      const pb::DeliverRequest& request, pb::DeliverReply* reply, LdpFlTime now) {
  if (!SameSecret(request.shuffler_token(), shuffler_token)) return NotShuffler();
  LdpFlCoordinator::Delivery batch;
  batch.round = request.round();
  for (const auto& c : request.contributors()) batch.contributors.emplace_back(c.token(), c.user());
  for (const auto& chunk : request.chunks()) {
    batch.pieces.emplace_back(chunk.pieces().begin(), chunk.pieces().end());
  }
  const auto d = coordinator.Deliver(batch, now);
  reply->set_accepted(d.accepted);
  reply->set_reason(d.reason);
  reply->set_pieces_accepted(d.pieces_accepted);
  reply->set_pieces_rejected(d.pieces_rejected);
  return {};
}

}  // namespace fedldp::net_internal
