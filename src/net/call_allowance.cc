#include "call_allowance.h"

namespace fedldp::net_internal {

Status CallAllowance::Admit(const std::string& token, const Allowance& a) {
  std::string line;
  Status refused;
  {
    std::lock_guard lock(mu_);
    const auto it = sent_.find(token);
    if (it == sent_.end() || it->second.round != a.round || it->second.bytes < a.bytes) return {};
    const std::string sent = std::to_string(it->second.bytes) + " bytes in round " +
                             std::to_string(a.round + 1) + ", more than its " +
                             std::to_string(a.users) + " user(s) can need (" +
                             std::to_string(a.bytes) + ")";
    refused = Error{"this client sent " + sent + "; its calls are refused until the next round",
                    ErrorCode::kResourceExhausted};
    if (!std::exchange(it->second.said, true)) {
      line = "a client (token " + token.substr(0, 8) + "...) sent " + sent +
             ": refusing its calls unread until the next round";
    }
  }
  if (!line.empty() && say_) say_(line);
  return refused;
}

void CallAllowance::Count(const std::string& token, std::uint64_t round, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Sent& s = sent_[token];
  if (s.round != round) s = Sent{.round = round};
  s.bytes += bytes;
}

}  // namespace fedldp::net_internal
