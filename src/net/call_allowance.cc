#include "call_allowance.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fedldp::net_internal {

CallAllowance::Sent& CallAllowance::Of(const std::string& token, std::uint64_t round) {
  Sent& s = sent_[token];
  if (s.round != round) {
    s.round = round;
    s.bytes = 0;
    s.said = false;
  }
  return s;
}

Status CallAllowance::Refuse(Sent& s, const std::string& token, const std::string& what,
                             std::string* line) {
  if (!std::exchange(s.said, true)) {
    *line = "a client (token " + token.substr(0, 8) + "...) " + what;
  }
  return Error{"this client " + what, ErrorCode::kResourceExhausted};
}

Status CallAllowance::Admit(const std::string& token, const Allowance& a, Clock::time_point now) {
  std::string line;
  Status refused;
  {
    std::lock_guard lock(mu_);
    Sent& s = Of(token, a.round);
    if (s.bytes >= a.bytes) {
      refused = Refuse(
          s, token,
          "sent " + std::to_string(s.bytes) + " bytes in round " + std::to_string(a.round + 1) +
              ", more than its " + std::to_string(a.users) + " user(s) can need (" +
              std::to_string(a.bytes) + "); its calls are refused until the next round",
          &line);
    } else {
      const double since = s.filled ? std::chrono::duration<double>(now - *s.filled).count() : 0;
      s.calls = s.filled ? std::min(a.burst, s.calls + a.calls_per_second * since) : a.burst;
      s.filled = now;
      if (s.calls >= 1) {
        s.calls -= 1;
        return {};
      }
      refused = Refuse(s, token,
                       "calls faster than " + std::to_string(std::lround(a.calls_per_second)) +
                           " times a second, four times the pace the server asks for; its " +
                           "calls are refused unread until it slows down",
                       &line);
    }
  }
  if (!line.empty() && say_) say_(line);
  return refused;
}

void CallAllowance::Count(const std::string& token, std::uint64_t round, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Of(token, round).bytes += bytes - std::min(bytes, RoundCoordinator::kFreeCallBytes);
}

}  // namespace fedldp::net_internal
