// libFuzzer target: a fuzzed conversation with the LDP-FL server, through the
// very handlers its gRPC service runs (src/net/ldpfl_handlers.h): the
// clients' Join, Poll and Withdraw, the shuffler's Vouch, VouchMany, RoundInfo and
// Deliver as serialized messages, and time passing (Tick). A call uses one
// of the enrolled tokens or the fuzzed one (with the client's session or the
// fuzzed one), and the shuffler's calls its token or the fuzzed one; a Deliver may carry fuzzed
// bytes or a batch of pieces sealed to the server's key (valid reports for the round's ranges, or
// fuzzed plaintexts), so rounds close and the task finishes. The task's
// first bytes pick weights or updates, and fixed or adaptive ranges. Beyond
// "no crash, no sanitizer report":
// - only the shuffler's token opens its calls, and a refused call changes
//   nothing;
// - an accepted batch has a verdict for every piece, and the server's
//   tallies are the sum of its answers;
// - a poll offers a client only its own users, with the whole model and one
//   range per layer unless it said it has them;
// - the model stays finite, and no user's report counts twice in a round;
// - a client's call is answered, and a user vouched for, only for the
//   token's live session; a Join while it is live is refused;
// - a withdrawn user is never offered a round or vouched for again;
// - a call the handler answers is admitted on its credentials alone (the
//   check the gRPC layer makes before it reads a body).
//
// FEDLDP_FUZZ_WRITE_SEEDS=DIR writes a few conversations into DIR as a
// starting corpus, then exits.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "conversation.h"
#include "fedldp/net/ldpfl_deploy.h"
#include "fedldp/random/counter_rng.h"
#include "ldpfl_handlers.h"

namespace {

using namespace fedldp;
using fuzz::Require;
using Clock = LdpFlCoordinator::Clock;
namespace pb = ::fedldp::v1;

constexpr std::size_t kTaskUsers = 6, kClients = 3;
constexpr int kTaskRounds = 3;
constexpr char kShuffler[] = "fuzz-shufflers-token-0123456789";
const std::vector<std::size_t> kLayers = {5, 3, 4};

const ServerKeys& Keys() {
  static const ServerKeys keys = ServerKeys::Generate();
  return keys;
}

LdpFlTaskSpec Spec(bool updates, bool adaptive) {
  LdpFlTaskSpec spec;
  spec.id = "fuzz";
  spec.config.arch = "cnn";  // not built: the coordinator needs only the layers
  spec.config.rounds = kTaskRounds;
  spec.config.epsilon = 1;
  spec.config.fraction = 0.5;  // 3 of the 6 users per round
  // Batches of 2 or 3 are taken, one user alone is refused: both paths.
  spec.config.shuffle_batch = 2;
  spec.config.adaptive = adaptive && !updates;
  spec.config.perturb_updates = updates;
  spec.config.fixed_range = {0, 0.5};
  spec.users = kTaskUsers;
  spec.chunk = 3;  // pieces: 3 + 2 | 3 | 3 + 1 weights
  spec.public_key = Keys().public_key;
  spec.layer_sizes = kLayers;
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::StartConversationFuzzer(2, 96);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const bool updates = in.ConsumeBool(), adaptive = in.ConsumeBool();
  const LdpFlTaskSpec spec = Spec(updates, adaptive);
  const auto chunks = spec.chunks();
  fuzz::Server server = fuzz::StartServer(kClients);
  const std::vector<std::string>& tokens = server.tokens;
  std::vector<double> initial(spec.weights());
  for (std::size_t j = 0; j < initial.size(); ++j) initial[j] = 0.05 * (static_cast<double>(j) - 5);
  auto created =
      LdpFlCoordinator::Create(spec, server.policy, std::move(server.state), Keys(), initial);
  Require(created.ok(), "the coordinator starts");
  LdpFlCoordinator& c = **created;
  const std::string task = "task bytes";
  CounterRng rng(in.ConsumeIntegral<std::uint32_t>(), 9);
  auto now = Clock::time_point{} + std::chrono::hours(1);
  std::map<std::size_t, std::pair<std::uint64_t, std::uint64_t>> joined;  // client -> users
  std::map<std::uint64_t, std::vector<LayerRange>> ranges;      // round -> announced, from polls
  std::map<std::uint64_t, std::vector<std::uint64_t>> offered;  // round -> users, from polls
  std::uint64_t accepted_by_answers = 0, rejected_by_answers = 0;
  std::set<std::uint64_t> delivered;  // this round's users, from accepted batches
  std::uint64_t round_of_delivered = 0;

  std::map<std::size_t, std::string> sessions;     // client -> its live session
  std::map<std::size_t, Clock::time_point> heard;  // client -> last answered call
  std::set<std::uint64_t> withdrawn;

  while (in.remaining_bytes() > 0) {
    const int op = in.ConsumeIntegralInRange(0, 7);
    const std::size_t who =
        in.ConsumeIntegralInRange<std::size_t>(0, kClients);  // kClients: fuzzed
    const bool shuffler = in.ConsumeBool();
    const bool own_session = in.ConsumeBool();
    const std::string bytes = in.ConsumeRandomLengthString(512);
    const auto token = [&](auto& message) {
      if (who < kClients) message.set_token(tokens[who]);
      if (who < kClients && own_session && sessions.contains(who)) {
        message.set_session(sessions[who]);
      }
    };
    const auto live = [&](const auto& request) {
      return who < kClients && sessions.contains(who) && request.session() == sessions[who];
    };
    const auto shuffler_token = [&](auto& message) {
      if (shuffler) message.set_shuffler_token(kShuffler);
    };
    const auto before = c.stats();
    if (op == 0) {
      pb::JoinRequest request;
      if (!request.ParseFromString(bytes)) continue;  // gRPC refuses what does not parse
      if (who < kClients) request.set_token(tokens[who]);
      if (in.ConsumeBool())
        request.set_users(in.ConsumeIntegralInRange<std::uint64_t>(0, kTaskUsers));
      pb::JoinReply reply;
      const bool admit = net_internal::AdmitClient(c, request.token(), std::nullopt).ok();
      const bool answered = net_internal::HandleJoin(c, task, request, &reply, now).ok();
      Require(admit || !answered, "a call the handler answers is admitted before it is read");
      if (answered) {
        Require(reply.first_user() + reply.users() <= kTaskUsers, "users exist");
        Require(who < kClients, "only an enrolled token joins");
        Require(!heard.contains(who) || now - heard[who] >= server.policy.stale_after,
                "a token's live session is not taken over");
        Require(reply.session().size() == 32 && reply.session() != sessions[who],
                "a join opens a new session");
        sessions[who] = reply.session();
        heard[who] = now;
        joined[who] = {reply.first_user(), reply.users()};
      }
    } else if (op == 1) {
      pb::PollRequest request;
      if (!request.ParseFromString(bytes)) continue;
      token(request);
      pb::PollReply reply;
      const bool admit = net_internal::AdmitClient(c, request.token(), request.session()).ok();
      const auto outcome = net_internal::HandlePoll(c, request, &reply, now);
      Require(admit || !outcome.ok(), "a call the handler answers is admitted before it is read");
      if (outcome.ok()) {
        Require(live(request), "a poll is answered only for the token's live session");
        heard[who] = now;
      }
      if (outcome.ok() && reply.state() == pb::PollReply::ROUND) {
        Require(joined.contains(who), "only a joined client is polled a round");
        const auto [first, users] = joined[who];
        Require(reply.users_size() > 0, "a round names this client's users");
        auto& round_users = offered[reply.round()];
        for (const auto u : reply.users()) {
          Require(u >= first && u < first + users, "a client is offered only its own users");
          Require(!withdrawn.contains(u), "a withdrawn user is not asked again");
          if (std::find(round_users.begin(), round_users.end(), u) == round_users.end()) {
            round_users.push_back(u);
          }
        }
        if (request.has_known_round() && request.known_round() == reply.round()) {
          Require(reply.weights_size() == 0 && reply.centers_size() == 0, "nothing resent");
        } else {
          Require(reply.weights_size() == static_cast<int>(spec.weights()), "the whole model");
          Require(reply.centers_size() == static_cast<int>(kLayers.size()) &&
                      reply.radii_size() == reply.centers_size(),
                  "one range per layer");
          auto& r = ranges[reply.round()];
          r.clear();
          for (int l = 0; l < reply.centers_size(); ++l) {
            Require(reply.radii(l) > 0, "a range has a positive radius");
            r.push_back({reply.centers(l), reply.radii(l)});
          }
        }
      }
    } else if (op == 2) {
      pb::VouchRequest request;
      if (!request.ParseFromString(bytes)) continue;
      token(request);
      shuffler_token(request);
      pb::VouchReply reply;
      const auto outcome = net_internal::HandleVouch(c, kShuffler, request, &reply);
      Require(net_internal::AdmitShuffler(request.shuffler_token(), kShuffler).ok() == outcome.ok(),
              "the shuffler's calls are admitted exactly when answered");
      Require(outcome.ok() == shuffler, "only the shuffler is answered");
      if (shuffler && live(request)) heard[who] = now;
      if (reply.ok()) {
        Require(live(request), "a user is vouched for only for the token's live session");
        Require(!withdrawn.contains(request.user()), "a withdrawn user is not vouched for");
        Require(joined.contains(who), "a vouched user's client has joined");
        const auto [first, users] = joined[who];
        Require(request.user() >= first && request.user() < first + users,
                "the server vouches only for a client's own user");
      }
    } else if (op == 3) {
      pb::RoundInfoRequest request;
      if (!request.ParseFromString(bytes)) continue;
      shuffler_token(request);
      pb::RoundInfoReply reply;
      const auto outcome = net_internal::HandleRoundInfo(c, kShuffler, request, &reply, now);
      Require(outcome.ok() == shuffler, "only the shuffler is answered");
      if (outcome.ok()) {
        Require(reply.chunks() == chunks.size(), "the pieces per report");
        Require(static_cast<std::uint64_t>(reply.delivered_size()) <= reply.expected(),
                "no more delivered than expected");
        Require(!request.without_delivered() || reply.delivered_size() == 0,
                "the delivered users only when asked");
        Require(reply.unheld() <= reply.waiting(), "the unheld are some of those waited for");
        Require(!reply.open() || reply.batch() == c.spec().shuffle_batch(),
                "the batch the statement counts");
        for (const auto u : reply.delivered()) Require(u < kTaskUsers, "delivered users exist");
      }
    } else if (op == 4) {
      pb::DeliverRequest request;
      if (!request.ParseFromString(bytes)) continue;
      shuffler_token(request);
      if (in.ConsumeBool()) {
        // A batch for the open round (or one off) from users the fuzzer
        // picks (often among those the round's polls offered), each named with its joined client's
        // token (or a fuzzed one); each piece valid for the round's ranges, or fuzzed.
        const std::uint64_t round = c.stats().round + in.ConsumeIntegralInRange(-1, 1);
        const auto announced =
            ranges.contains(round)
                ? ranges[round]
                : std::vector<LayerRange>(kLayers.size(), spec.config.fixed_range);
        request.set_round(round);
        request.clear_contributors();
        request.clear_chunks();
        for (std::size_t k = 0; k < chunks.size(); ++k) request.add_chunks();
        for (std::size_t i = in.ConsumeIntegralInRange<std::size_t>(0, 4); i > 0; --i) {
          // A user offered in that round's polls, or any (kTaskUsers: nobody).
          const auto& known = offered[round];
          const std::uint64_t user =
              !known.empty() && in.ConsumeBool()
                  ? known[in.ConsumeIntegralInRange<std::size_t>(0, known.size() - 1)]
                  : in.ConsumeIntegralInRange<std::uint64_t>(0, kTaskUsers);
          auto* contributor = request.add_contributors();
          contributor->set_user(user);
          for (const auto& [client, users] : joined) {
            if (user >= users.first && user < users.first + users.second) {
              contributor->set_token(tokens[client]);
            }
          }
          for (std::size_t k = 0; k < chunks.size(); ++k) {
            std::string plain;
            if (in.ConsumeBool()) {
              const std::size_t n = chunks[k].end - chunks[k].begin;
              const auto r =
                  LdpFlRandomizer::Create(spec.config.epsilon, {n}, {announced[chunks[k].layer]});
              Require(r.ok(), "a chunk's randomizer");
              std::vector<float> w(n);
              for (auto& v : w) v = static_cast<float>(Uniform01(rng) - 0.5);
              plain = EncodeReport(round, r->Randomize(w, rng));
            } else {
              plain = in.ConsumeRandomLengthString(64);
            }
            request.mutable_chunks(static_cast<int>(k))->add_pieces(Seal(plain, Keys().public_key));
          }
        }
      }
      pb::DeliverReply reply;
      const auto outcome = net_internal::HandleDeliver(c, kShuffler, request, &reply, now);
      Require(outcome.ok() == shuffler, "only the shuffler is answered");
      const auto after = c.stats();
      if (!reply.accepted()) {
        Require(after.pieces_accepted == before.pieces_accepted &&
                    after.pieces_rejected == before.pieces_rejected &&
                    after.batches == before.batches,
                "a refused batch counts nothing");
      } else {
        Require(reply.pieces_accepted() + reply.pieces_rejected() ==
                    static_cast<std::uint64_t>(request.contributors_size()) * chunks.size(),
                "a verdict for every piece");
        Require(static_cast<std::uint64_t>(request.contributors_size()) >= c.spec().shuffle_batch(),
                "no batch smaller than the statement's n is taken");
        if (request.round() != round_of_delivered) delivered.clear();
        round_of_delivered = request.round();
        for (const auto& contributor : request.contributors()) {
          Require(delivered.insert(contributor.user()).second, "no user counts twice in a round");
        }
        accepted_by_answers += reply.pieces_accepted();
        rejected_by_answers += reply.pieces_rejected();
      }
    } else if (op == 5) {
      pb::WithdrawRequest request;
      if (!request.ParseFromString(bytes)) continue;
      token(request);
      pb::WithdrawReply reply;
      const bool admit = net_internal::AdmitClient(c, request.token(), request.session()).ok();
      const auto outcome = net_internal::HandleWithdraw(c, request, &reply, now);
      Require(admit || !outcome.ok(), "a call the handler answers is admitted before it is read");
      const auto after = c.stats();
      if (!outcome.ok()) {
        Require(after.withdrawn == before.withdrawn, "a refused withdrawal withdraws nobody");
      } else {
        Require(live(request), "a withdrawal is answered only for the token's live session");
        heard[who] = now;
        withdrawn.insert(request.users().begin(), request.users().end());
        Require(after.withdrawn == withdrawn.size(),
                "the server withdrew exactly what it was told");
      }
    } else if (op == 7) {
      // Many vouches at once: each answer is what Vouch alone answers.
      pb::VouchManyRequest request;
      if (!request.ParseFromString(bytes)) continue;
      for (auto& ask : *request.mutable_asks()) token(ask);
      shuffler_token(request);
      pb::VouchManyReply reply;
      const auto outcome = net_internal::HandleVouchManyWith(c, kShuffler, request, &reply);
      Require(outcome.ok() == (shuffler && request.asks_size() <= net_internal::kMaxVouchAsks),
              "only the shuffler is answered, within the asks a call may carry");
      if (outcome.ok()) {
        Require(reply.answers_size() == request.asks_size(), "an answer per ask");
        for (int i = 0; i < request.asks_size(); ++i) {
          const auto& ask = request.asks(i);
          const Status alone = c.Vouch(ask.token(), ask.session(), ask.user(), ask.round());
          Require(reply.answers(i).ok() == alone.ok() && reply.answers(i).reason() == alone.error(),
                  "each answer is the ask's own");
          Require(!reply.answers(i).ok() || !withdrawn.contains(ask.user()),
                  "a withdrawn user is not vouched for");
        }
        for (const auto& ask : request.asks()) {
          if (live(ask)) heard[who] = now;
        }
      }
    } else {
      now += std::chrono::milliseconds(in.ConsumeIntegralInRange(0, 8000));
      c.Tick(now);
    }
    const auto s = c.stats();
    if (op >= 2 && op <= 4 && !shuffler) {
      Require(s.pieces_accepted == before.pieces_accepted && s.batches == before.batches &&
                  s.batches_refused == before.batches_refused,
              "a stranger's call changes nothing");
    }
    Require(s.pieces_accepted == accepted_by_answers, "the server's tally is its answers'");
    Require(s.pieces_rejected == rejected_by_answers, "rejected pieces are counted");
    Require(s.counted <= kTaskUsers / 2 * static_cast<std::uint64_t>(kTaskRounds),
            "no report counts twice");
    Require(s.round <= static_cast<std::uint64_t>(kTaskRounds), "no round beyond the task");
    for (const double w : c.weights()) Require(std::isfinite(w), "the model stays finite");
  }
  return 0;
}
