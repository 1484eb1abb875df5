// What a run actually spent, recorded as it goes, and one client's total at
// any moment: the composition `fedldp account run` uses (run_accounting.h),
// extended to runs whose steps differ.
//
// A step is what one client's data went through: `times` reports sent
// directly, each (eps0, delta0)-LDP; or `times` shuffled rounds of n pure
// eps0-LDP reports each (sampled at rate q: then every round of the run
// counts, as in run_accounting.h; `poisson`: each client drawn with
// probability q, the count shown). An epoch of random allocation (each
// client in one secret round of it) is one shuffled round of all the
// epoch's reports (run_accounting.h): record it so. Steps with equal
// parameters form a group and are counted together.
//
// One group: its total is AccountRun's for that configuration, exactly (the
// statement `fedldp account run` prints, with its rule and lines).
// Several groups: the smaller of two proven totals at the same delta.
//  - Basic composition of the groups' own totals (each AccountRun at
//    delta / G): the eps add, and so do the deltas.
//  - The privacy-loss distributions of every step, convolved (Zhu, Dong &
//    Wang, AISTATS 2022, Thm 10: the product of dominating pairs dominates
//    the adaptive composition), at the whole delta: an (eps0, delta0)-LDP
//    report by Kairouz, Oh & Viswanath's canonical pair (loss +inf with
//    probability delta0, else +-eps0 as randomized response), a shuffled
//    round by its clone pair, a sampled one by that pair's C_q
//    (shuffle_pld.h). Offered only where every group has one (a round
//    beyond the exact sum's reach is stated by a point) and the
//    composed support stays small (grid 1e-3; each step rounds its losses
//    up by at most that, so the eps is pessimistic by at most steps x 1e-3).
// Floating point: a group's report_deviation tau adds, as in
// run_accounting.h, (1 + e^eps) tau for every report the statement covers
// (by coupling); the basic total takes each group's, the convolved total
// (1 + e^eps) sum(reports x tau) at its eps. The allowance comes on top of
// delta.
#ifndef FEDLDP_PRIVACY_ACCOUNTANT_H_
#define FEDLDP_PRIVACY_ACCOUNTANT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/privacy/composition.h"
#include "fedldp/privacy/run_accounting.h"

namespace fedldp {

struct AccountedStep {
  double local_epsilon = 0;             // eps0 of one report
  double local_delta = 0;               // delta0 of one report (unshuffled only)
  std::uint64_t reports_per_round = 0;  // 0: reports sent directly; n: shuffled rounds of n
  double sampling_rate = 1;             // q, shuffled rounds only
  bool poisson = false;                 // with q < 1: Poisson participation
  double report_deviation = 0;          // tau (run_accounting.h)

  bool shuffled() const { return reports_per_round > 0; }
  // AccountRun's configuration for `times` of this step at total `delta`.
  RunPrivacyConfig Run(std::uint64_t times, double delta) const;
  friend bool operator==(const AccountedStep&, const AccountedStep&) = default;
};

struct AccountedGroup {
  AccountedStep step;
  std::uint64_t times = 0;  // reports, or rounds
};

struct AccountedTotal {
  DpGuarantee total;     // per client, over everything recorded
  std::string rule;      // how it was composed
  double allowance = 0;  // what report deviations add to total.delta
  // One group: AccountRun's whole statement. Several: none.
  std::optional<RunPrivacy> run;
  DpGuarantee basic;                   // several groups: the basic total
  std::optional<DpGuarantee> pld;      // several groups: the convolved total, where offered
  std::vector<DpGuarantee> per_group;  // several groups: each group's total at delta / G
};

class Accountant {
 public:
  // `times` more of `step` (checked as AccountRun checks a configuration).
  Status Record(const AccountedStep& step, std::uint64_t times = 1);
  // The claim at total `delta` over everything recorded so far; (0, 0) with
  // nothing recorded.
  Result<AccountedTotal> Total(double delta) const;
  const std::vector<AccountedGroup>& groups() const { return groups_; }
  // Reports sent (directly) plus rounds (shuffled) recorded.
  std::uint64_t steps() const;

 private:
  std::vector<AccountedGroup> groups_;  // in the order first recorded
};

// Several lines: the claim first, then each group and how it composed.
std::string DescribeAccountedTotal(const Accountant& accountant, const AccountedTotal& total);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_ACCOUNTANT_H_
