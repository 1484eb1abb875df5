// The shuffle bounds side by side (issue 45): the central eps of n shuffled
// eps0-LDP reports against n, for each eps0, by FMT's numerical bound, the
// variation-ratio bound (the claim: the tightest proven) and FMT's closed
// form (Theorem 3.1, where it applies): `fedldp account curves`, whose
// figure docs/shuffle-accounting.md shows.
#ifndef FEDLDP_SIM_SHUFFLE_CURVES_H_
#define FEDLDP_SIM_SHUFFLE_CURVES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/sim/figure.h"

namespace fedldp {

struct ShuffleCurvesConfig {
  std::vector<double> local_epsilons = {1, 2, 4};
  // n: 1e3 to 1e8, three a decade.
  std::vector<std::uint64_t> reports = {1000,     2000,     5000,     10000,    20000,   50000,
                                        100000,   200000,   500000,   1000000,  2000000, 5000000,
                                        10000000, 20000000, 50000000, 100000000};
  double delta = 1e-6;
  Status Validate() const;
};

// One bound's eps at every n (NaN where it gives none).
struct ShuffleCurve {
  std::string bound;  // "fmt", "variation-ratio", "closed-form"
  double local_epsilon = 0;
  std::vector<double> epsilon;  // by config.reports
};

// Every bound at every (eps0, n); `progress(done, total)` after each point.
Result<std::vector<ShuffleCurve>> ShuffleCurves(
    const ShuffleCurvesConfig& config,
    const std::function<void(std::size_t, std::size_t)>& progress = {});

// The curves as a log-log figure (id "shuffle-bounds").
Figure ShuffleCurvesFigure(const ShuffleCurvesConfig& config,
                           const std::vector<ShuffleCurve>& curves);

}  // namespace fedldp

#endif  // FEDLDP_SIM_SHUFFLE_CURVES_H_
