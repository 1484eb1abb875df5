// The participant's side of a deployment, one loop for every protocol: join,
// poll, answer the round's users, hand their sealed reports to the shuffler
// or submit them, tell the server of users whose budget is spent, until the
// task is over. A protocol (FedSel, LDP-FL) brings its task and participant
// through ClientProtocol; the loop never asks which one it runs.
#ifndef FEDLDP_NET_CLIENT_LOOP_H_
#define FEDLDP_NET_CLIENT_LOOP_H_

#include <cstdint>
#include <span>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/net/round_coordinator.h"
#include "fedldp/net/services.h"
#include "fedldp/v1/service.pb.h"

namespace fedldp::net_internal {

// What a protocol's participant answers for some of a round's users.
struct ClientAnswer {
  // (user, what goes out): a shuffled task's sealed pieces, or else the one
  // report the server takes.
  std::vector<std::pair<std::uint64_t, std::vector<std::string>>> reports;
  std::vector<std::string> refusals;  // one line each
  bool exhausted = false;             // some user's budget ran out this time
};

class ClientProtocol {
 public:
  virtual ~ClientProtocol() = default;
  // The task the server gave on joining: checks that it is this protocol's.
  // What the client brings (its protocol, its data's features per row), for
  // the server to check at Join, before the client counts as joined.
  virtual Participation Brings() const = 0;
  virtual Status Accept(const v1::JoinReply& joined) = 0;
  // Then (the options fit the task) opens the ledger and creates the
  // participant. Returns the line that says what the client joined.
  virtual Result<std::string> Open(const v1::JoinReply& joined) = 0;
  virtual const std::string& task_id() const = 0;
  // Reports go, sealed, to the shuffler; else they are submitted.
  virtual bool shuffled() const = 0;
  // How the poll asks (set once, before the first).
  virtual void Prepare(v1::PollRequest& poll) const = 0;
  // A new round: keeps what the reply carries of it (the model). False if
  // the reply lacks it: the poll (updated here) asks again.
  virtual bool StartRound(const v1::PollReply& reply, v1::PollRequest& poll) = 0;
  virtual ClientAnswer Respond(std::uint64_t round, std::span<const std::uint64_t> users) = 0;
  // Every hosted user whose budget is spent, and how many users it hosts.
  virtual std::vector<std::uint64_t> Exhausted() const = 0;
  virtual std::uint64_t users() const = 0;
  // The round as the log names it.
  virtual std::uint64_t ShownRound(std::uint64_t round) const = 0;
};

// Joins `options.address` for `users` local users and answers rounds
// through `protocol` until the task finishes or `stop` (then the summary is
// not finished). A user whose report the server has not received is handed
// over again (the recorded bytes, at no new cost) while the round lasts.
Result<FedSelClientSummary> RunClientLoop(const FedSelClientOptions& options, std::uint64_t users,
                                          ClientProtocol& protocol, std::stop_token stop);

}  // namespace fedldp::net_internal

#endif  // FEDLDP_NET_CLIENT_LOOP_H_
