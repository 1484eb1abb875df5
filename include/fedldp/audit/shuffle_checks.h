// The shuffle bounds checked against exact probabilities (issue 45): a bound
// that states (eps, delta) for n shuffled eps0-LDP reports must hold for
// every eps0-LDP randomizer, so for binary randomized response, whose
// shuffled output (the count of 1s) has an exact law.
#ifndef FEDLDP_AUDIT_SHUFFLE_CHECKS_H_
#define FEDLDP_AUDIT_SHUFFLE_CHECKS_H_

#include <cstdint>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp::audit {

// The exact divergence max(D_e^eps(P || Q), D_e^eps(Q || P)) of n shuffled
// binary randomized-response reports (1 with probability e^eps0 / (e^eps0 +
// 1) on input 1, 1 / (e^eps0 + 1) on input 0) for user 1 with input 0 (P)
// or 1 (Q) and `ones` of the other n - 1 users with input 1. O(n^2).
double ShuffledResponseDelta(std::uint64_t n, std::uint64_t ones, double eps0, double eps);

// `bound`'s (eps, delta) for n reports at eps0 against shuffled randomized
// response with the others' inputs all 0, half 1 and all 1: passes when
// the exact delta at that eps is at most delta (1 + 1e-9). value: the
// worst exact delta / delta (near 1: the bound is near tight there).
Verdict CheckShuffleBound(ShuffleReduction bound, std::uint64_t n, double eps0, double delta);

}  // namespace fedldp::audit

#endif  // FEDLDP_AUDIT_SHUFFLE_CHECKS_H_
