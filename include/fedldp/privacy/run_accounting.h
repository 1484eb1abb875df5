// A client's privacy over a training run, from the randomizer's local
// guarantee: what `fedldp account run` prints before anything is trained.
//
// Local: each report is (eps0, delta0)-LDP (delta0 = 0 for PrivUnitG,
// FastProjUnit and the scalar mechanisms, > 0 for the Gaussian).
// Rounds: a client reports in R rounds (with disjoint client sets per round,
// e.g. one report per epoch, R = epochs; rounds it is not in cost it nothing:
// parallel composition). Its R reports compose:
//   - without the shuffler, R eps0 exactly (basic, delta = R delta0), or the
//     optimal composition of composition.h at the target delta, whichever
//     is smaller in eps;
//   - with the shuffler, each round's n reports are shuffled together and
//     the round is (eps_r, delta_r)-DP with eps_r the numerical bound of
//     shuffle_numerical.h (proven for pure eps0-LDP randomizers only: a
//     Gaussian's report is refused there; where n e^-eps0 is beyond the
//     exact sum's reach, the closed form of Thm 3.1), and the R rounds
//     compose by the optimal rule.
// Sampled rounds (sampling_rate q < 1, with the shuffler): each round draws
// m = q N of the N clients uniformly without replacement, in secret from the
// server (the shuffler draws them, and the server sees only the shuffled
// reports: a server that picks the clients knows who took part, and sampling
// then amplifies nothing against it), and `rounds` counts
// every round of the run, since a client is in each with probability q. A
// round's shuffle bound (eps_r, delta_r) at n = m reports, stated for
// substitution of one client's data, is amplified by subsampling (Balle,
// Barthe & Gaboardi, NeurIPS 2018, Thm 9, sampling without replacement under
// substitution): (log(1 + q (e^eps_r - 1)), q delta_r); the R rounds then
// compose by the optimal rule. Sampled rounds are composed exactly too: the
// round's privacy-loss distribution amplified as a curve (SampledRoundPld:
// Dong, Roth & Su's C_q, sampling without replacement under substitution),
// convolved over the R rounds; the claim is the smaller total. A client's
// reports are as many as it is sampled (q R in expectation), so the local
// lines give q R rounded up.
// Poisson participation (poisson, with q < 1): each client drawn on its own
// with probability q, the count shown; of N = n / q clients. The round's PLD
// is PoissonRoundPld's (a binomial mixture over the count of rounds sampled
// without replacement), its per-round point read off that PLD at delta /
// (2R); both compose as above.
// Random allocation (allocation, with q = 1 / t < 1): each epoch, the
// shuffler draws the clients' order uniformly in secret and cuts it into the
// epoch's t rounds, so a client reports in exactly one round of every t, the
// server not told which. An epoch is then a post-processing of the clone
// pair of one shuffle of all its t n reports, however each round's
// randomizer depends on the rounds before (every round eps0-LDP; the proof:
// docs/shuffle-accounting.md, "Random allocation"): the run is stated as
// ceil(R / t) shuffled rounds of t n reports (a part epoch counted whole),
// with everything below as for those rounds.
// Delta is budgeted explicitly: with the shuffler, delta / 2 for the rounds
// (delta_r = delta / (2R), or delta / (2 q R) before subsampling) and the
// rest for the composition; the total is at most `delta`.
// Shuffled rounds are also composed exactly: the
// privacy-loss distribution of the clone analysis's dominating pair,
// convolved over the R rounds (shuffle_pld.h, grid 1e-3, pessimistic),
// at the whole `delta`. The claim is the smaller of the two totals; both
// are proven. (One (eps_r, delta_r) point per round throws away the rest of
// each round's privacy curve: at MNIST's 8 rounds of 20,000 reports at
// eps0 4.7 the point-wise optimal composition gives 5.07, the PLD 1.62.)
//
// Floating point. A randomizer whose reports are drawn within total
// variation tau of its ideal law (report_deviation: PrivUnitG's and
// FastProjUnit's proven allowance, VectorRandomizer::deviation()) is, as
// run, what the ideal one is with every delta raised: a coupling of n
// reports with ideal ones fails with probability at most n tau, so an
// (eps, delta) statement of the ideal reports holds of the real ones as
// (eps, delta + (1 + e^eps) n tau). Each report is so (eps0, (1 + e^eps0)
// tau)-LDP, and the local lines (and the unshuffled total) compose that:
// R (1 + e^eps0) tau on top, since every composition here adds per-step
// deltas at most linearly. A shuffled round covers its n reports (eps_r's
// allowance, or the sampled round's), and the per-round points compose it
// R times; the privacy-loss distribution's total, composed from pure
// rounds, takes the coupling of all R n reports at its eps. The allowance
// comes on top of `delta`.
#ifndef FEDLDP_PRIVACY_RUN_ACCOUNTING_H_
#define FEDLDP_PRIVACY_RUN_ACCOUNTING_H_

#include <cstdint>
#include <string>

#include "fedldp/base/status.h"
#include "fedldp/privacy/composition.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp {

struct RunPrivacyConfig {
  double local_epsilon = 0;             // eps0 of one report
  double local_delta = 0;               // delta0 of one report
  std::uint64_t rounds = 1;             // R: rounds one client reports in
  bool shuffle = false;                 // reports of a round shuffled together
  std::uint64_t reports_per_round = 0;  // n, with shuffle
  double delta = 1e-6;                  // the total delta per client
  double sampling_rate = 1;             // q in (0, 1]; < 1 with shuffle only
  // With q < 1: each client is drawn on its own with probability q (Poisson
  // participation; the shuffler shows how many), not m = q N of the N
  // (reports_per_round is then the expected count q N; PoissonRoundPld).
  bool poisson = false;
  // With q = 1 / t < 1: random allocation, each client in exactly one of
  // every t rounds, the epoch's order drawn in secret (see above).
  bool allocation = false;
  double report_deviation = 0;  // tau: a report's total variation from the ideal law
  // Whose pair bounds a shuffled round (shuffle_numerical.h): the tightest
  // proven unless asked (account run --bound fmt).
  ShuffleReduction reduction = kTightestShuffleBound;

  bool sampled() const { return sampling_rate < 1; }
  // t = 1 / q: the rounds of an allocated epoch.
  std::uint64_t rounds_per_epoch() const;
  Status Validate() const;
};

// An allocated run as the shuffled run it is stated as: ceil(R / t) rounds
// (epochs) of t n reports each, every client in every one.
RunPrivacyConfig AllocatedEpochs(const RunPrivacyConfig& config);

struct RunPrivacy {
  RunPrivacyConfig config;
  DpGuarantee local;                // one report
  DpGuarantee local_basic;          // R reports, R eps0 (no shuffler)
  DpGuarantee local_optimal;        // R reports at the target delta (no shuffler)
  std::uint64_t local_reports = 0;  // the reports the local lines count: R, or q R rounded up
  // Allocated: the epochs composed, each one shuffle of epoch_reports
  // reports; `round` and `subsampled` are then an epoch's (AllocatedEpochs).
  std::uint64_t epochs = 0, epoch_reports = 0;
  bool shuffled = false;
  NumericalShuffleBound round;  // one round, shuffled (eps_r in [lower, upper], delta_r)
  bool closed_form = false;     // round from Thm 3.1 (n e^-eps0 beyond the exact sum's reach)
  DpGuarantee subsampled;       // one round amplified by sampling (sampling_rate < 1)
  DpGuarantee total;            // the claim: per client over the run
  DpGuarantee total_advanced;   // the advanced rule on the same per-round figures
  DpGuarantee total_points;     // shuffled: optimal composition of the per-round points
  DpGuarantee total_pld;        // shuffled: the PLD over rounds (eps inf: none)
  std::string rule;             // how `total` was composed
  double allowance = 0;         // what report_deviation adds to total.delta
};

Result<RunPrivacy> AccountRun(const RunPrivacyConfig& config);

// The n a shuffled statement uses for rounds of `round` reports when each
// report is promised to be shuffled among at least `asked` (0: the round):
// never more than the round. A deployment's server refuses a shuffler's
// batch of fewer, which is what makes the statement hold there.
inline std::uint64_t ShuffleBatchOf(std::uint64_t asked, std::uint64_t round) {
  return asked == 0 || asked > round ? round : asked;
}

// The inverse, for a shuffled run: the largest eps0 (within a relative 1e-4,
// in [1e-3, 30]; from min(target / R, 30) up, where basic composition meets
// the target's eps) whose total over `config.rounds` rounds of
// `config.reports_per_round` reports is at most `central_epsilon` at
// `config.delta`, its delta with the floating-point allowance at most
// (1 + kAllowanceShare) `config.delta`. `config.local_epsilon` is ignored.
// An error if even eps0 = 1e-3 exceeds the target, or without the shuffler.
inline constexpr double kAllowanceShare = 1e-3;
Result<double> LocalEpsilonForCentral(RunPrivacyConfig config, double central_epsilon);

// The same for any run, shuffled or not (then in [target / R, target]):
// the largest eps0 whose total is at most `target` at `config.delta`.
Result<double> LocalEpsilonForTotal(RunPrivacyConfig config, double target);

// The `fedldp account run` options that state `config`, with `--mechanism
// NAME` for a run of that mechanism's reports (none if empty).
std::string AccountRunArguments(const RunPrivacyConfig& config, std::string_view mechanism = {});

// Any finite eps0 is accounted (LDP-FL's per-weight reports state 10^5 per
// report); a total above kMeaningfulEpsilon is stated with a warning: it
// bounds a likelihood ratio of e^10 = 22,026 or more, which protects little.
inline constexpr double kMeaningfulEpsilon = 10;
// "warning: ..." if g's eps is above kMeaningfulEpsilon, else empty.
std::string MeaninglessWarning(const DpGuarantee& g);

// Several lines, the claim first (and MeaninglessWarning's, if any), then `floating_point` (whether
// the budget holds in floating point: fl/fedsel.h's FloatingPointStatementFor), if given.
std::string DescribeRunPrivacy(const RunPrivacy& p, std::string_view floating_point = {});

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_RUN_ACCOUNTING_H_
