// The statistical checks of stat_checks.h applied to vector randomizers: the
// per-coordinate mean, the mean squared error against the closed form, and
// PrivUnitG's share of reports in its cap. Reports are summarised as they are
// drawn, so d x n never has to fit in memory.
#ifndef FEDLDP_AUDIT_VECTOR_CHECKS_H_
#define FEDLDP_AUDIT_VECTOR_CHECKS_H_

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "fedldp/audit/mechanism_checks.h"
#include "fedldp/audit/stat_checks.h"
#include "fedldp/vector/baselines.h"
#include "fedldp/vector/fastprojunit.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp::audit {

struct VectorSummary {
  std::size_t n = 0;
  std::vector<double> target;  // the clipped input the reports estimate
  std::vector<double> mean;    // per coordinate
  std::vector<double> m2;      // per coordinate, sum of squared deviations
  std::vector<double> errors;  // ||R(x) - target||^2 of each report
  std::vector<double> along;   // <R(x), cap_direction> of each report
  std::size_t in_cap = 0;      // reports with <R(x), cap_direction> >= cap_threshold
};

// n reports of `r` at x from CounterRng(seed); the cap is counted when
// cap_direction is not empty.
VectorSummary DrawVectorReports(const VectorRandomizer& r, std::span<const double> x, std::size_t n,
                                std::uint64_t seed, std::span<const double> cap_direction = {},
                                double cap_threshold = 0);

// Every coordinate's mean within z* standard errors (the sample's) of
// expected[i] +- allowance (allowance: a stated bound on a bias); value: the
// worst |z| after the allowance. z* = max(5, the Bonferroni threshold
// Q^-1(1e-4 / (2 d))): 5 up to d = 174, 5.73 at d = 10^4, so that a correct
// randomizer fails with probability below 1e-4 whatever d (5 alone would fail
// one in 170 correct checks at d = 10^4).
double CoordinateThreshold(std::size_t d);
Verdict CheckCoordinateMeans(const VectorSummary& s, std::span<const double> expected,
                             double allowance = 0);
// The mean of ||R(x) - x||^2 within 5 standard errors of [low, high].
Verdict CheckSquaredError(const VectorSummary& s, double low, double high);
// The mean of `values` within 5 standard errors of [low, high].
Verdict CheckMeanWithin(std::span<const double> values, double low, double high, const char* what);
// The share in the cap within 5 binomial standard errors of p.
Verdict CheckCapShare(const VectorSummary& s, double p);

// Issue 39's support check for a randomizer whose reports lie on a public
// support, fixed before any input is seen, every point of which every input
// can produce (the Gaussians' grid, duchi's atoms, FastProjUnit's sent z on
// PrivUnitG's grid), which its DrawAndCheckSent tests by membership: of n
// reports at x (CounterRng(seed)), the share off it, each a report that some
// other input cannot produce. 0 when the repair holds; a randomizer adding its noise in
// doubles scores near 1 (tests: the Gaussian as it was before issue 39).
Verdict CheckPublicSupport(const VectorRandomizer& r, std::span<const double> x, std::size_t n,
                           std::uint64_t seed);

// The timing check of a whole randomizer (issue 39): reports of x = 0 and of
// x = C / sqrt(d) (1, ..., 1), d coordinates a call, `calls` coordinates in
// all (CheckSamplerTiming's statistic).
Verdict CheckVectorTiming(const VectorRandomizer& r, std::size_t calls, std::uint64_t seed);

// Issue 39's timing check for the Gaussian randomizers: the coordinate
// sampler (an exact normal rounded to the grid) timed at -C and at C
// (mechanism_checks.h's CheckSamplerTiming, `calls` draws at each end), or
// at `low` (a multiple of C, e.g. 0) and at C.
Verdict CheckGaussianTiming(const GaussianRandomizer& g, std::size_t calls, std::uint64_t seed,
                            double low = -1);

// Every check of one vector randomizer, through the interface alone (issue
// 40: a registered randomizer is audited without a branch on its kind), at
// an input x of norm 0.9 C:
//  - privacy: ImplementedPrivacy's log ratio at most eps (1 + 1e-9) and its
//    delta at eps at most the stated delta (1 + 1e-9);
//  - n draws: every coordinate's mean within BiasBound(x) (z), and
//    E||R(x) - x||^2 within [SquaredErrorLowerBound, SquaredError] (z);
//  - PrivUnitG's share in its cap at the unit input (its own law's check,
//    the one extra a randomizer has here);
//  - the support check (min(n, 2000) sent reports) and, if timing_calls > 0,
//    the timing check of whole reports at x = 0 and at norm C.
struct VectorAudit {
  double log_ratio = 0;     // NaN where no pure bound holds
  double worst_mean_z = 0;  // the checks' statistics
  double worst_var_z = 0;
  double min_p = std::numeric_limits<double>::quiet_NaN();  // the cap share's p-value
  double ruled_out = 0;  // share of sent reports off the public support
  double timing_t = std::numeric_limits<double>::quiet_NaN();
  bool pass = true;
  std::string note;  // the first failure's reason, or the delta found
};
VectorAudit AuditVectorRandomizer(const VectorRandomizer& r, std::size_t n, std::uint64_t seed,
                                  std::size_t timing_calls);

// A unit vector in R^d with a fixed pseudo-random direction (dense, no
// coordinate dominating), times `norm`.
std::vector<double> TestDirection(std::size_t d, double norm, std::uint64_t seed);

}  // namespace fedldp::audit

#endif  // FEDLDP_AUDIT_VECTOR_CHECKS_H_
