// What an admitted client may send, counted (RoundCoordinator::Allowance).
// Before, nothing limited an admitted token: 40 sequential 60 MB Submits in
// 5 s took a server from 191 to 551 MB, and any number of small calls a
// second were answered. Each call takes one from its token's bucket of
// calls before its body is read; each body is counted, past its first
// kFreeCallBytes, once read. A client past its round's bytes is refused
// before its next body is read, until the next round; one calling faster
// than its pace, until it slows down.
#ifndef FEDLDP_SRC_NET_CALL_ALLOWANCE_H_
#define FEDLDP_SRC_NET_CALL_ALLOWANCE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "fedldp/base/status.h"
#include "fedldp/net/round_coordinator.h"

namespace fedldp::net_internal {

class CallAllowance {
 public:
  using Allowance = RoundCoordinator::Allowance;
  using Clock = std::chrono::steady_clock;
  // `say`: where a client's first refusal in a round is told.
  explicit CallAllowance(std::function<void(const std::string&)> say = {}) : say_(std::move(say)) {}

  // Takes one call from `token`'s bucket: OK while it has sent less than
  // `a.bytes` in round `a.round` and has a call left; else
  // ResourceExhausted, saying which and what it may send. Only for tokens
  // already admitted (the map holds enrolled tokens only).
  Status Admit(const std::string& token, const Allowance& a, Clock::time_point now = Clock::now());
  // Adds a read body's `bytes` past the first kFreeCallBytes to what
  // `token` sent in round `round`.
  void Count(const std::string& token, std::uint64_t round, std::uint64_t bytes);

 private:
  struct Sent {
    std::uint64_t round = 0, bytes = 0;
    bool said = false;
    double calls = 0;                         // left in the bucket
    std::optional<Clock::time_point> filled;  // when `calls` was last refilled
  };
  // Sent as of round `round` (a new round starts its bytes afresh).
  Sent& Of(const std::string& token, std::uint64_t round);
  // A refusal of `token`'s call saying `what`, told once a round.
  Status Refuse(Sent& s, const std::string& token, const std::string& what, std::string* line);

  std::function<void(const std::string&)> say_;
  std::mutex mu_;
  std::unordered_map<std::string, Sent> sent_;  // admitted tokens only
};

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_CALL_ALLOWANCE_H_
