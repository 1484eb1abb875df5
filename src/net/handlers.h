// Internal to the net module: what the service handlers of both protocols
// (fedsel_handlers.h, ldpfl_handlers.h) share.
#ifndef FEDLDP_SRC_NET_HANDLERS_H_
#define FEDLDP_SRC_NET_HANDLERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/v1/service.pb.h"

namespace fedldp::net_internal {

// Every handler answers with a Status: OK, or why the call is refused, its
// ErrorCode mapped to the call's gRPC status (grpc_util.h, StatusOf).

// A coordinator's refusal (roster.h) as the call's status: a session that
// ended (kFailedPrecondition: join again) and a token in use
// (kAlreadyExists) keep their codes; every other refusal takes `otherwise`.
inline Status Refused(const Status& refusal, ErrorCode otherwise) {
  switch (refusal.code()) {
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kAlreadyExists:
      return refusal;
    default:
      return Error{refusal.error(), otherwise};
  }
}

// Every call carries its credentials in metadata as well as in its body, so
// that a server checks them before it reads the body (gRPC reads a unary
// body whole, up to kMaxMessageBytes, before any handler runs): the token
// and session of a client, or the shuffler's token.
inline constexpr char kTokenKey[] = "fedldp-token";
inline constexpr char kSessionKey[] = "fedldp-session";
inline constexpr char kShufflerTokenKey[] = "fedldp-shuffler-token";
// Shuffle: which of the client's users, for which round.
inline constexpr char kUserKey[] = "fedldp-user";
inline constexpr char kRoundKey[] = "fedldp-round";

// A client's call, before its body is read (Join: no session).
template <typename Coordinator>
Status AdmitClient(const Coordinator& coordinator, std::string_view token,
                   std::optional<std::string_view> session) {
  const Access access = coordinator.Admit(token, session);
  if (access.ok()) return {};
  return Refused(access.status,
                 session ? ErrorCode::kUnauthenticated : ErrorCode::kPermissionDenied);
}

// A body that names other credentials than its call was admitted with.
inline Status DifferentCredentials() {
  return Error{"the request's body and metadata carry different credentials",
               ErrorCode::kUnauthenticated};
}
inline Status SameCredentials(std::string_view admitted, std::string_view body) {
  return admitted == body ? Status{} : DifferentCredentials();
}

// Join, the same for either protocol's coordinator; `task` is the
// coordinator's task as a serialized fedldp.v1.Task.
template <typename Coordinator>
Status HandleJoinWith(Coordinator& coordinator, const std::string& task,
                      const Participation& needed, const v1::JoinRequest& request,
                      v1::JoinReply* reply, typename Coordinator::Clock::time_point now) {
  Participation brought{request.protocol(), request.dimension(), std::nullopt};
  if (request.has_through_shuffler()) brought.shuffled = request.through_shuffler();
  if (Status s = CheckParticipation(coordinator.spec().id, needed, brought); !s.ok()) {
    return Refused(s, ErrorCode::kInvalidArgument);
  }
  const auto joined = coordinator.Join(request.token(), request.users(), now);
  if (!joined.ok()) return Refused(joined.status, ErrorCode::kPermissionDenied);
  reply->mutable_task()->ParseFromString(task);
  reply->set_first_user(joined.first);
  reply->set_users(joined.users);
  reply->set_session(joined.session);
  return {};
}

// Withdraw, the same for either protocol's coordinator.
template <typename Coordinator>
Status HandleWithdrawWith(Coordinator& coordinator, const v1::WithdrawRequest& request,
                          v1::WithdrawReply* reply, typename Coordinator::Clock::time_point now) {
  if (request.leaving()) {
    const Status left = coordinator.Leave(request.token(), request.session(), now);
    return left.ok() ? left : Refused(left, ErrorCode::kUnauthenticated);
  }
  const std::vector<std::uint64_t> users(request.users().begin(), request.users().end());
  const auto done = coordinator.Withdraw(request.token(), request.session(), users, now);
  if (!done.ok()) {
    return Refused(done.status, done.status.code() == ErrorCode::kInvalidArgument
                                    ? ErrorCode::kInvalidArgument
                                    : ErrorCode::kUnauthenticated);
  }
  reply->set_withdrawn(done.withdrawn);
  return {};
}

// The shuffler's calls, the same for either protocol's coordinator: they
// answer only the holder of `shuffler_token` (compared in constant time).
inline bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}
inline Status NotShuffler() {
  return Error{"only the shuffler may ask this", ErrorCode::kPermissionDenied};
}
// Before the body of a shuffler's call is read: `given` (from its metadata)
// must be `shuffler_token`.
inline Status AdmitShuffler(std::string_view given, std::string_view shuffler_token) {
  return SameSecret(given, shuffler_token) ? Status{} : NotShuffler();
}

template <typename Coordinator>
Status HandleVouchWith(Coordinator& coordinator, std::string_view shuffler_token,
                       const v1::VouchRequest& request, v1::VouchReply* reply) {
  if (!SameSecret(request.shuffler_token(), shuffler_token)) return NotShuffler();
  const Status vouched =
      coordinator.Vouch(request.token(), request.session(), request.user(), request.round());
  reply->set_ok(vouched.ok());
  reply->set_reason(vouched.error());
  return {};
}

// At most this many asks in one VouchMany call.
inline constexpr int kMaxVouchAsks = 4096;

template <typename Coordinator>
Status HandleVouchManyWith(Coordinator& coordinator, std::string_view shuffler_token,
                           const v1::VouchManyRequest& request, v1::VouchManyReply* reply) {
  if (!SameSecret(request.shuffler_token(), shuffler_token)) return NotShuffler();
  if (request.asks_size() > kMaxVouchAsks) {
    return Error{"at most " + std::to_string(kMaxVouchAsks) + " asks a call",
                 ErrorCode::kInvalidArgument};
  }
  for (const v1::VouchRequest& ask : request.asks()) {
    const Status vouched = coordinator.Vouch(ask.token(), ask.session(), ask.user(), ask.round());
    v1::VouchReply* answer = reply->add_answers();
    answer->set_ok(vouched.ok());
    answer->set_reason(vouched.error());
  }
  return {};
}

template <typename Coordinator>
Status HandleRoundInfoWith(Coordinator& coordinator, std::string_view shuffler_token,
                           const v1::RoundInfoRequest& request, v1::RoundInfoReply* reply,
                           typename Coordinator::Clock::time_point now) {
  if (!SameSecret(request.shuffler_token(), shuffler_token)) return NotShuffler();
  const ShuffleInfo info =
      coordinator.RoundInfo(now, request.instance(), !request.without_delivered());
  reply->set_round(info.round);
  reply->set_expected(info.expected);
  reply->mutable_delivered()->Assign(info.delivered.begin(), info.delivered.end());
  reply->set_waiting(info.waiting);
  reply->set_deadline_ms(info.deadline_ms);
  reply->set_open(info.open);
  reply->set_finished(info.finished);
  reply->set_chunks(info.chunks);
  reply->set_piece_bytes(info.piece_bytes);
  reply->set_batch(info.batch);
  reply->set_unheld(info.unheld);
  return {};
}

template <typename Coordinator>
Status HandleDeliverWith(Coordinator& coordinator, std::string_view shuffler_token,
                         const v1::DeliverRequest& request, v1::DeliverReply* reply,
                         typename Coordinator::Clock::time_point now) {
  if (!SameSecret(request.shuffler_token(), shuffler_token)) return NotShuffler();
  ShuffleDelivery batch;
  batch.round = request.round();
  for (const auto& c : request.contributors()) batch.contributors.emplace_back(c.token(), c.user());
  for (const auto& chunk : request.chunks()) {
    batch.pieces.emplace_back(chunk.pieces().begin(), chunk.pieces().end());
  }
  const ShuffleDelivered d = coordinator.Deliver(batch, now);
  reply->set_accepted(d.accepted);
  reply->set_reason(d.reason);
  reply->set_pieces_accepted(d.pieces_accepted);
  reply->set_pieces_rejected(d.pieces_rejected);
  return {};
}

// A poll's answer but the model (and LDP-FL's ranges).
void SetPollReply(const FedSelCoordinator::Poll& poll, v1::PollReply* reply);

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_HANDLERS_H_
