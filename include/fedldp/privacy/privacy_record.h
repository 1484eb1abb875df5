// One client's privacy over a run in one layout, for every record fedldp
// writes (`train`, `ldpfl`, `serve` and `reproduce` --out records, and the
// Python module's results): sim/records.h writes it as JSON, "privacy".
//
//   mechanism       what each report is (a FedSel variant, an LDP-FL randomizer)
//   local           one report, (eps0, delta0)-LDP
//   per_round       one round: shuffled, the round's central bound (amplified
//                   by sampling where sampled); else the client's report, LDP
//   total           the claim: per client over the run, central (eps, delta)
//   local_total     the client's reports over the run trusting no one (local
//                   composition; the claim itself without the shuffler)
//   rule            how `total` was composed
//   rounds, reports_per_round, sampling_rate: what was composed (reports
//                   per round 0: not shuffled)
//   allowance       what the reports' floating-point deviation adds to delta
//   warning         MeaninglessWarning(total), or empty
//   arguments       `fedldp account run` options that state the same (empty
//                   where that command does not: LDP-FL's per-weight reports)
//   floating_point  whether eps0 holds of the program in floating point
#ifndef FEDLDP_PRIVACY_PRIVACY_RECORD_H_
#define FEDLDP_PRIVACY_PRIVACY_RECORD_H_

#include <cstdint>
#include <string>

#include "fedldp/privacy/composition.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/run_accounting.h"

namespace fedldp {

struct PrivacyRecord {
  std::string mechanism;
  DpGuarantee local;
  DpGuarantee per_round;
  DpGuarantee total;
  DpGuarantee local_total;
  std::string rule;
  std::uint64_t rounds = 0;
  std::uint64_t reports_per_round = 0;
  double sampling_rate = 1;
  double allowance = 0;
  std::string warning;
  std::string arguments;
  std::string floating_point;
};

// The accountant's statement of a run of `mechanism`'s reports.
PrivacyRecord PrivacyRecordOf(const RunPrivacy& p, std::string mechanism,
                              std::string floating_point);

// LDP-FL's per-weight two-point reports: one report is d eps (plain
// composition over its weights), the total the shuffled statement where
// it applies (per parameter column, composed), else R d eps.
PrivacyRecord PrivacyRecordOf(const LdpFlPrivacy& p, std::string mechanism,
                              std::string floating_point);

// The record in one line for people: "privunitg: eps 4 per report; (2.99, 1e-05)
// per user in total by RULE over R rounds", and its warning if it has one.
std::string DescribePrivacyRecord(const PrivacyRecord& r);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_PRIVACY_RECORD_H_
