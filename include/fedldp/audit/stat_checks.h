// Statistical checks from the mathematics, shared by the tests and by
// `fedldp audit`. Each check returns a verdict with a human-readable reason.
//
// Tolerances are derived from the sample size: a z-score of 5 standard errors
// for means and variances, a p-value floor of 1e-6 for chi-square tests. With
// fixed seeds every check is deterministic; the floors only say how unlucky a
// seed would have to be to fail a correct mechanism. These checks find
// violations; they never prove privacy.
#ifndef FEDLDP_AUDIT_STAT_CHECKS_H_
#define FEDLDP_AUDIT_STAT_CHECKS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fedldp::audit {

struct Verdict {
  bool pass;
  std::string reason;
  // The statistic judged: z for means and variances, the p-value for
  // chi-square tests, the worst ratio for ratio checks.
  double value = 0;
};

struct Moments {
  double n = 0, mean = 0, variance = 0, fourth = 0;  // central moments
};
Moments SampleMoments(std::span<const double> values);

// |mean - expected| <= 5 sqrt(expected_variance / n).
Verdict CheckMean(const Moments& m, double expected_mean, double expected_variance);
// |s^2 - sigma^2| <= 5 standard errors of s^2, where
// Var(s^2) = (mu4 - sigma^4 (n - 3) / (n - 1)) / n from the law's exact
// variance sigma^2 and 4th central moment mu4.
Verdict CheckVariance(const Moments& m, double expected_variance, double expected_fourth);

// Upper tail of the chi-square distribution with df degrees of freedom.
double ChiSquarePValue(double statistic, double df);
// Pearson's test of observed counts against exact probabilities. Categories
// whose expected count is below 5 are merged with their neighbours; an
// observation in a category of probability 0 fails at once.
Verdict CheckChiSquare(std::span<const std::uint64_t> observed, std::span<const double> probability,
                       double p_floor = 1e-6);

// Worst ratio of likelihoods: max over pairs (a, b) of la[i] / lb[i], where
// la and lb are the likelihoods of the same outputs under two inputs.
// Returns +inf if some output is possible under one input only.
double WorstRatio(const std::vector<std::vector<double>>& likelihood_by_input);
Verdict CheckRatio(double worst_ratio, double epsilon);

}  // namespace fedldp::audit

#endif  // FEDLDP_AUDIT_STAT_CHECKS_H_
