// How a participant answers a round from its privacy ledger: one home for
// the rules the FedSel and LDP-FL participants share.
//   - a user not hosted here is refused;
//   - a user charged for this (task, round) before resends the recorded
//     bytes: nothing new is revealed and nothing is spent again;
//   - a user whose budget cannot pay the report is refused and listed as
//     exhausted (for good: a ledger's total never grows);
//   - the other users' reports are drawn, charged in one transaction, and
//     only the charged ones are answered (a refused charge is a refusal).
#ifndef FEDLDP_SRC_NET_LEDGER_ANSWERS_H_
#define FEDLDP_SRC_NET_LEDGER_ANSWERS_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/store/privacy_ledger.h"

namespace fedldp::net_internal {

// What one round asks of the ledger. `cost_name` names the cost in a
// refusal ("eps", or "d eps" for LDP-FL's weights).
struct LedgerRound {
  PrivacyLedger& ledger;
  const std::string& task;
  std::uint64_t round;
  double cost;
  std::string cost_name;
  std::uint64_t first_user;
  std::size_t hosted;                               // users first_user .. + hosted
  std::function<std::string(std::size_t)> account;  // of a local user
};

// Answers `users` into `answer` (an Answer with reports of (user, Report),
// refusals and exhausted). `unpack(bytes)` reads recorded bytes back as a
// Result<Report>; `draw(local)` draws a fresh report's bytes.
template <typename Answer, typename Unpack>
void AnswerFromLedger(const LedgerRound& r, std::span<const std::uint64_t> users,
                      const Unpack& unpack, const std::function<std::string(std::size_t)>& draw,
                      Answer& answer) {
  std::vector<PrivacyLedger::Entry> fresh;
  std::vector<std::uint64_t> fresh_users;
  const auto answer_with = [&](std::uint64_t user, const std::string& bytes, const char* what) {
    auto report = unpack(bytes);
    if (report.ok()) {
      answer.reports.emplace_back(user, std::move(report).value());
    } else {
      answer.refusals.push_back("user " + std::to_string(user) + what + report.error());
    }
  };
  for (const std::uint64_t user : users) {
    if (user < r.first_user || user - r.first_user >= r.hosted) {
      answer.refusals.push_back("the server asked for user " + std::to_string(user) +
                                ", who is not hosted here");
      continue;
    }
    const std::size_t local = user - r.first_user;
    const std::string account = r.account(local);
    if (auto recorded = r.ledger.Find(account, r.task, r.round)) {  // a resend
      answer_with(user, *recorded, ": the ledger's record is damaged: ");
      continue;
    }
    if (r.ledger.remaining(account) < r.cost * (1 - 1e-12)) {
      answer.refusals.push_back("user " + std::to_string(user) + " (" + account +
                                "): refused, a report spends " + r.cost_name + " = " +
                                std::to_string(r.cost) + " but only " +
                                std::to_string(r.ledger.remaining(account)) + " of " +
                                std::to_string(r.ledger.total()) + " is left");
      answer.exhausted.push_back(user);
      continue;
    }
    fresh.push_back({account, r.task, r.round, r.cost, draw(local)});
    fresh_users.push_back(user);
  }
  const std::vector<Status> verdicts = r.ledger.ChargeMany(fresh);
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    if (!verdicts[i].ok()) {
      answer.refusals.push_back("user " + std::to_string(fresh_users[i]) + ": " +
                                verdicts[i].error());
      continue;
    }
    answer_with(fresh_users[i], fresh[i].bytes, ": ");
  }
}

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_LEDGER_ANSWERS_H_
