#include "fedldp/privacy/privacy_record.h"

#include <sstream>
#include <utility>

namespace fedldp {

PrivacyRecord PrivacyRecordOf(const RunPrivacy& p, std::string mechanism,
                              std::string floating_point) {
  PrivacyRecord r;
  r.mechanism = std::move(mechanism);
  r.local = p.local;
  r.per_round = p.shuffled ? p.subsampled : p.local;
  r.total = p.total;
  // Without the shuffler the claim is the local composition itself.
  r.local_total =
      p.shuffled ? (p.local_basic.epsilon <= p.local_optimal.epsilon * (1 + 1e-4) ? p.local_basic
                                                                                  : p.local_optimal)
                 : p.total;
  r.rule = p.rule;
  r.rounds = p.config.rounds;
  r.reports_per_round = p.shuffled ? p.config.reports_per_round : 0;
  r.sampling_rate = p.config.sampling_rate;
  r.allowance = p.allowance;
  r.warning = MeaninglessWarning(p.total);
  r.arguments = AccountRunArguments(p.config, r.mechanism);
  r.floating_point = std::move(floating_point);
  return r;
}

PrivacyRecord PrivacyRecordOf(const LdpFlPrivacy& p, std::string mechanism,
                              std::string floating_point) {
  PrivacyRecord r;
  r.mechanism = std::move(mechanism);
  r.local = {p.per_round_ldp, 0};
  r.per_round = r.local;
  r.local_total = {p.plain_composition, 0};
  r.total = p.shuffle_applies ? p.shuffled : r.local_total;
  const std::string over = " over the " + std::to_string(p.weights) + " weights and " +
                           std::to_string(p.rounds_joined) + " rounds";
  if (!p.shuffle_applies) {
    r.rule = "plain composition" + over + " (no shuffle bound: " + p.why_not + ")";
  } else if (p.shuffled.delta == 0 && p.shuffled.epsilon == p.plain_composition) {
    r.rule = "plain composition" + over + " (the shuffle bound adds nothing)";
  } else {
    r.rule = p.column_rule + " shuffle bound per parameter column (Feldman-McMillan-Talwar), " +
             p.shuffled_rule + " composition" + over;
  }
  r.rounds = p.rounds_joined;
  r.reports_per_round = p.reports_per_round;
  r.warning = MeaninglessWarning(r.total);
  r.floating_point = std::move(floating_point);
  return r;
}

std::string DescribePrivacyRecord(const PrivacyRecord& r) {
  std::ostringstream s;
  s << r.mechanism << ": eps " << r.local.epsilon;
  if (r.local.delta > 0) s << " (delta " << r.local.delta << ")";
  s << " per report; (" << r.total.epsilon << ", " << r.total.delta << ") per user in total over "
    << r.rounds << " round(s), by " << r.rule;
  if (!r.warning.empty()) s << "\n" << r.warning;
  return s.str();
}

}  // namespace fedldp
