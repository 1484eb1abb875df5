// libFuzzer target: a fuzzed conversation with the FedSel server, through
// the very handlers its gRPC service runs (src/net/fedsel_handlers.h): Join,
// Poll, Submit and Withdraw as serialized messages, and time passing (Tick).
// A call uses one of the enrolled tokens or the fuzzed one, with that
// client's session or the fuzzed one; a Submit may carry
// fuzzed report bytes or valid reports for the open round, so rounds close,
// epochs end and the task finishes. Beyond "no crash, no sanitizer report":
// - a Submit answers one verdict per report, and the reports the server
//   says it counted are exactly its own tally;
// - a poll offers a client only its own users, with the whole model;
// - the model stays finite, and no report counts twice;
// - a call is answered only for the token's live session, and a Join while
//   that session is live is refused (one client per token);
// - a withdrawn user is never offered a round again;
// - a call the handler answers is admitted on its credentials alone (the
//   check the gRPC layer makes before it reads a body).
//
// FEDLDP_FUZZ_WRITE_SEEDS=DIR writes a few conversations into DIR as a
// starting corpus, then exits.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "conversation.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/random/counter_rng.h"
#include "fedsel_handlers.h"

namespace {

using namespace fedldp;
using fuzz::Require;
using Clock = FedSelCoordinator::Clock;
namespace pb = ::fedldp::v1;

constexpr std::size_t kTaskUsers = 6, kTaskDimension = 5, kClients = 3;

FedSelTaskSpec Spec() {
  FedSelTaskSpec spec;
  spec.id = "fuzz";
  spec.config.variant = ParseFedSelVariant("ps-pm").value();
  spec.config.epsilon = 4;
  spec.config.epochs = 2;
  spec.config.batch_fraction = 0.5;  // 3 users per round, 2 rounds per epoch
  spec.users = kTaskUsers;
  spec.dimension = kTaskDimension;
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::StartConversationFuzzer(1, 64);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  fuzz::Server server = fuzz::StartServer(kClients);
  const std::vector<std::string>& tokens = server.tokens;
  auto created = FedSelCoordinator::Create(Spec(), server.policy, std::move(server.state));
  Require(created.ok(), "the coordinator starts");
  FedSelCoordinator& c = **created;
  const FedSelRandomizer randomizer = MakeFedSelRandomizer(c.plan(), kTaskDimension).value();
  const std::string task = "task bytes";
  CounterRng rng(in.ConsumeIntegral<std::uint32_t>(), 7);
  auto now = Clock::time_point{} + std::chrono::hours(1);
  std::uint64_t counted_by_verdicts = 0;
  std::map<std::size_t, std::string> sessions;     // client -> its live session
  std::map<std::size_t, Clock::time_point> heard;  // client -> last answered call
  std::set<std::uint64_t> withdrawn;

  while (in.remaining_bytes() > 0) {
    const int op = in.ConsumeIntegralInRange(0, 4);
    const std::size_t who =
        in.ConsumeIntegralInRange<std::size_t>(0, kClients);  // kClients: fuzzed
    const bool own_session = in.ConsumeBool();
    const std::string bytes = in.ConsumeRandomLengthString(512);
    const auto token = [&](auto& message) {
      if (who < kClients) message.set_token(tokens[who]);
      if (who < kClients && own_session && sessions.contains(who)) {
        message.set_session(sessions[who]);
      }
    };
    // Whether the gRPC layer admits the call on its metadata (the body's
    // credentials) before reading its body; checked against the handler.
    const auto admitted = [&](const auto& request) {
      if constexpr (requires { request.session(); }) {
        return net_internal::AdmitClient(c, request.token(), request.session()).ok();
      } else {
        return net_internal::AdmitClient(c, request.token(), std::nullopt).ok();
      }
    };
    const auto unread_only_if_refused = [&](bool admit, const Status& outcome) {
      Require(admit || !outcome.ok(), "a call the handler answers is admitted before it is read");
    };
    // An answered call: only for the token's live session.
    const auto answered = [&](const auto& request) {
      Require(who < kClients && sessions.contains(who) && request.session() == sessions[who],
              "a call is answered only for the token's live session");
      heard[who] = now;
    };
    if (op == 0) {
      pb::JoinRequest request;
      if (!request.ParseFromString(bytes)) continue;  // gRPC refuses what does not parse
      if (who < kClients) request.set_token(tokens[who]);
      if (in.ConsumeBool())
        request.set_users(in.ConsumeIntegralInRange<std::uint64_t>(0, kTaskUsers));
      pb::JoinReply reply;
      const bool admit = admitted(request);
      const auto outcome = net_internal::HandleJoin(c, task, request, &reply, now);
      unread_only_if_refused(admit, outcome);
      if (outcome.ok()) {
        // A rejoining client keeps the users it was given first.
        Require(reply.first_user() + reply.users() <= kTaskUsers, "users exist");
        Require(who < kClients, "only an enrolled token joins");
        Require(!heard.contains(who) || now - heard[who] >= server.policy.stale_after,
                "a token's live session is not taken over");
        Require(reply.session().size() == 32 && reply.session() != sessions[who],
                "a join opens a new session");
        sessions[who] = reply.session();
        heard[who] = now;
      }
    } else if (op == 1) {
      pb::PollRequest request;
      if (!request.ParseFromString(bytes)) continue;
      token(request);
      pb::PollReply reply;
      const bool admit = admitted(request);
      const auto outcome = net_internal::HandlePoll(c, request, &reply, now);
      unread_only_if_refused(admit, outcome);
      if (outcome.ok()) answered(request);
      if (outcome.ok() && reply.state() == pb::PollReply::ROUND) {
        Require(reply.weights_size() == static_cast<int>(kTaskDimension),
                "the whole model is sent");
        Require(reply.users_size() > 0, "a round names this client's users");
        for (const auto u : reply.users()) {
          Require(u < kTaskUsers, "polled users exist");
          Require(!withdrawn.contains(u), "a withdrawn user is not asked again");
        }
      }
    } else if (op == 2) {
      pb::SubmitRequest request;
      if (!request.ParseFromString(bytes)) continue;
      token(request);
      if (in.ConsumeBool()) {
        // Valid reports for the open round (or one off), for users the
        // fuzzer picks (kTaskUsers is no user).
        const auto round = c.stats().round + in.ConsumeIntegralInRange(-1, 1);
        std::vector<double> r(kTaskDimension), previous(kTaskDimension, 0.0);
        request.clear_reports();
        for (std::size_t i = in.ConsumeIntegralInRange<std::size_t>(0, kTaskUsers); i > 0; --i) {
          for (auto& v : r) v = Uniform01(rng) * 2 - 1;
          auto* report = request.add_reports();
          report->set_user(in.ConsumeIntegralInRange<std::uint64_t>(0, kTaskUsers));
          report->set_report(EncodeReport(round, randomizer.Randomize(r, previous, 0.5, rng)));
        }
      }
      pb::SubmitReply reply;
      const auto before = c.stats();
      const bool admit = admitted(request);
      const auto outcome = net_internal::HandleSubmit(c, request, &reply, now);
      unread_only_if_refused(admit, outcome);
      const auto after = c.stats();
      if (!outcome.ok()) {
        Require(after.accepted == before.accepted && after.rejected == before.rejected,
                "a refused call counts nothing");
        continue;
      }
      answered(request);
      Require(reply.verdicts_size() == request.reports_size(), "one verdict per report");
      std::uint64_t accepted = 0, refused = 0;
      for (const auto& v : reply.verdicts()) {
        Require(v.accepted() || !v.reason().empty(), "a refusal says why");
        if (v.accepted() && v.reason() != "already counted") ++accepted;
        if (!v.accepted()) ++refused;
      }
      Require(after.accepted - before.accepted == accepted, "accepted reports are counted once");
      Require(after.rejected - before.rejected == refused, "refused reports are counted");
      counted_by_verdicts += accepted;
    } else if (op == 3) {
      pb::WithdrawRequest request;
      if (!request.ParseFromString(bytes)) continue;
      token(request);
      pb::WithdrawReply reply;
      const auto before = c.stats();
      const bool admit = admitted(request);
      const auto outcome = net_internal::HandleWithdraw(c, request, &reply, now);
      unread_only_if_refused(admit, outcome);
      const auto after = c.stats();
      if (!outcome.ok()) {
        Require(after.withdrawn == before.withdrawn, "a refused withdrawal withdraws nobody");
        continue;
      }
      answered(request);
      withdrawn.insert(request.users().begin(), request.users().end());
      Require(after.withdrawn == withdrawn.size(), "the server withdrew exactly what it was told");
      Require(reply.withdrawn() <= kTaskUsers, "a client's withdrawn users exist");
    } else {
      now += std::chrono::milliseconds(in.ConsumeIntegralInRange(0, 8000));
      c.Tick(now);
    }
    const auto s = c.stats();
    Require(s.accepted == counted_by_verdicts, "the server's tally is its verdicts'");
    Require(s.counted <= s.accepted, "only accepted reports reach the model");
    Require(s.counted <= kTaskUsers * 2, "no user counts twice in an epoch");
    for (const double w : c.weights()) Require(std::isfinite(w), "the model stays finite");
  }
  return 0;
}
