// What LDP-FL's privacy claims amount to, stated as what is proven.
//
// Per weight: each weight is perturbed by an eps-LDP two-point mechanism
// (LDP-FL Lemma 1, checked exactly in our tests). That is all the paper's
// "eps" covers.
//
// Plain composition (no trust in the shuffler): a client's report in one
// round is d weights, each eps-LDP, so it is (d eps)-LDP, and a client that
// joins R rounds spends R d eps in all.
//
// Shuffle model (the shuffler trusted to unlink messages): every parameter's
// column of n messages is shuffled on its own, so one column is n reports of
// an eps-LDP randomizer, shuffled: (eps_c, delta_c)-DP with eps_c the
// numerical bound of Feldman, McMillan & Talwar ("Hiding Among the Clones",
// FOCS 2021, Appendix E; shuffle_numerical.h), which holds for any n. Their
// closed form (Theorem 3.1) is kept for reference: it needs
// n >= 16 ln(2 / delta) e^eps, 434 to 1,066 reports per parameter in the
// paper's MNIST settings, where the numerical bound needs none.
// A client's data reaches d columns per round and R rounds: k = R d shuffled
// mechanisms on the same data, composed by the optimal rule of composition.h
// (advanced composition where k > 10^6), with delta_c = delta_total / (2k)
// per column and the rest for the composition. Where n e^-eps is too large
// for the exact sum (over ~2e5), Theorem 3.1 applies and is used instead.
// The paper's claim that shuffling keeps the whole run at eps is not a
// theorem.
#ifndef FEDLDP_PRIVACY_LDPFL_ACCOUNTING_H_
#define FEDLDP_PRIVACY_LDPFL_ACCOUNTING_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "fedldp/privacy/composition.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp {

struct ShuffleBound {
  bool applies = false;
  double epsilon = 0;  // eps_c, if applies
  double delta = 0;
  // Smallest n for which the theorem applies at this eps0 and delta.
  double min_reports = 0;
};

// Theorem 3.1 of Feldman, McMillan & Talwar (FOCS 2021).
ShuffleBound FeldmanMcMillanTalwar(double eps0, double n, double delta);

// The central (eps, delta) of n shuffled eps0-LDP reports that fedldp claims:
// the numerical bound, or, where n e^-eps0 is beyond the exact sum's reach,
// Theorem 3.1 (then epsilon_lower = epsilon_upper and closed_form is set).
// An error only if neither can be given.
struct ShuffledReports {
  NumericalShuffleBound bound;
  bool closed_form = false;
};
Result<ShuffledReports> ShuffledReportsBound(std::uint64_t n, double eps0, double delta,
                                             ShuffleReduction reduction = kTightestShuffleBound);

struct LdpFlPrivacy {
  double per_weight_epsilon = 0;  // what the paper states
  std::size_t weights = 0;        // d
  std::size_t rounds_joined = 0;  // R: rounds a client takes part in (at most)
  std::size_t reports_per_round = 0;
  double per_round_ldp = 0;      // d eps
  double plain_composition = 0;  // R d eps
  double delta_total = 0;
  ShuffleBound per_column;                     // Theorem 3.1 for one column, for reference
  NumericalShuffleBound per_column_numerical;  // one parameter, one round
  double column_epsilon = 0;                   // eps_c used: numerical, or closed form where
  std::string column_rule;                     // the sum is too large ("numerical", "closed form")
  bool shuffle_applies = false;                // a per-column bound could be given
  std::string why_not;                         // if not
  DpGuarantee shuffled;                        // all parameters, all rounds
  std::string shuffled_rule;                   // "optimal" or "advanced"
};

LdpFlPrivacy AccountLdpFl(double epsilon, std::size_t weights, std::size_t rounds_joined,
                          std::size_t reports_per_round, double delta_total = 1e-5);

// The statement every run prints, several lines.
std::string DescribeLdpFlPrivacy(const LdpFlPrivacy& p);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_LDPFL_ACCOUNTING_H_
