// How clients take part in shuffled rounds, checked against exact
// probabilities (issue 45): each participation rule's privacy-loss
// distribution (shuffle_pld.h) must hold for every eps0-LDP randomizer, so
// for binary randomized response, whose shuffled output (a round's count of
// 1s) has an exact law under each rule. User 1 holds 1 or 0; `ones` of the
// other users hold 1; each function returns the largest delta(eps) over
// every `ones` and both orders.
//   - Sampled: m of the N users drawn without replacement (user 1 in with
//     probability m / N, the others hypergeometric), over `rounds` (1 or 2)
//     independent rounds.
//   - Poisson: each of the N users drawn on its own with probability q; the
//     shuffler shows the count of reports and of 1s.
//   - Allocated: the N users in rounds of public sizes by a uniform secret
//     order (each in exactly one round); round j reports by randomized
//     response whose eps (eps0, or eps0 / 2) and whether it reports the bit
//     or its complement depend on the counts of 1s the earlier rounds showed
//     when `adaptive` (each still eps0-LDP); the shuffler shows each round's
//     count.
#ifndef FEDLDP_AUDIT_PARTICIPATION_CHECKS_H_
#define FEDLDP_AUDIT_PARTICIPATION_CHECKS_H_

#include <span>
#include <vector>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/privacy/shuffle_pld.h"

namespace fedldp::audit {

double SampledResponseDelta(int users, int m, double eps0, double eps, int rounds = 1);
double PoissonResponseDelta(int users, double q, double eps0, double eps);
// At every eps of `epsilons` (one pass over the laws).
std::vector<double> AllocatedResponseDeltas(std::span<const int> sizes, double eps0, bool adaptive,
                                            std::span<const double> epsilons);

// Each rule's PLD (as account run composes it) against the exact delta of
// its randomized response at eps 0, 0.05, 0.1, 0.2, ... up to eps0: passes
// when the PLD's delta is never below it. value: the smallest ratio of the
// two where the exact delta is above 1e-12 (near 1: near tight). Sampled: 20
// users, 5 a round. Poisson: 24 users at q 0.2. Allocated: 12 users in rounds
// of 3, 5 and 4, adaptive; the PLD of one shuffle of 12.
Verdict CheckSampledRound(double eps0);
Verdict CheckPoissonRound(double eps0);
Verdict CheckAllocatedEpoch(double eps0);

// Randomized response at eps0 as a central step's PLD on `grid` (its two
// losses +-eps0, connected through its exact deltas).
Pld ResponseStepPld(double eps0, double grid);

// Central steps used at random (privacy/central_participation.h), one
// record's randomized response at eps0 standing for the step: the exact
// delta at each eps of `epsilons`, the larger of the two directions (remove
// and add), of `epochs` epochs of 1-of-`steps` allocation (the count of
// ones among the step outputs, S / t = (k e^eps0 + (t - k) e^-eps0) / t),
// or of `times` steps each used with probability q (Poisson).
std::vector<double> CentralAllocatedResponseDeltas(double eps0, int steps, int epochs,
                                                   std::span<const double> epsilons);
std::vector<double> CentralPoissonResponseDeltas(double eps0, double q, int times,
                                                 std::span<const double> epsilons);

// Each against its PLD as `account gaussian` composes it (grid 1e-3): 2
// epochs of 1 of 5 steps; 3 steps at q 0.2. value as above.
Verdict CheckCentralAllocation(double eps0);
Verdict CheckCentralPoisson(double eps0);

}  // namespace fedldp::audit

#endif  // FEDLDP_AUDIT_PARTICIPATION_CHECKS_H_
