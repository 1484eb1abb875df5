// FedSel's two-stage randomizer (Algorithm 1, lines 16-18) and its
// aggregator. The client selects j from its accumulated vector r^t with a
// selector at eps1 and reports s*_j = M(r^t_j + eta r^{t-1}_j) with a value
// mechanism at eps2 (the mechanism clips s_j to [-1, 1]); PE's empty outcome
// is reported as "none" (index -1) and counts as a zero vector.
//
// The same class serves the non-private baselines: value mechanism "none"
// reports s_j itself (NP-K: selector topk, k = 1; NP-RS: selector uniform,
// which the aggregator scales by d to stay unbiased).
//
// Uniform selection can be aggregated two ways: enlarged by d (unbiased, the
// flat solution's and NP-RS's rule, so a two-stage run with mu = 0 is flat
// PM exactly) or plainly averaged like every private selector (the control
// "uniform-pm": the two-stage pipeline without the information selection
// adds; docs/fedsel.md, Table 3).
#ifndef FEDLDP_PIPELINE_FEDSEL_H_
#define FEDLDP_PIPELINE_FEDSEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/select/selector.h"

namespace fedldp {

struct FedSelReport {
  std::int64_t index = -1;  // -1: none
  double value = 0;
};

class FedSelRandomizer {
 public:
  // value_mechanism: pm, hm, duchi (on [-1, 1]), or none (nullopt: the
  // selected value is sent as it is).
  // enlarge_uniform: with the uniform selector, scale by d (see above).
  static Result<FedSelRandomizer> Create(SelectorKind selector, double select_epsilon,
                                         std::size_t d, std::size_t k,
                                         std::optional<ValueMechanismKind> value_mechanism,
                                         double value_epsilon, bool enlarge_uniform = true);

  // accumulated = r^t, previous = r^{t-1}.
  FedSelReport Randomize(std::span<const double> accumulated, std::span<const double> previous,
                         double momentum, Rng& rng) const;
  bool Validate(const FedSelReport& report) const;

  const Selector& selector() const { return *selector_; }
  // nullptr for "none".
  const ValueMechanism* mechanism() const { return mechanism_.get(); }
  // The server's scale of the sum: d for enlarged uniform selection, else 1.
  double scale() const { return scale_; }

 private:
  FedSelRandomizer(std::shared_ptr<const Selector> s, std::shared_ptr<const ValueMechanism> m,
                   double scale)
      : selector_(std::move(s)), mechanism_(std::move(m)), scale_(scale) {}
  std::shared_ptr<const Selector> selector_;
  std::shared_ptr<const ValueMechanism> mechanism_;
  double scale_ = 1.0;
};

// Averages reports: mean[j] = scale * (sum of values at j) / (number of reports).
class FedSelAggregator {
 public:
  FedSelAggregator(const FedSelRandomizer& randomizer, std::size_t d);
  bool Add(const FedSelReport& report);
  std::size_t count() const { return count_; }
  std::size_t rejected() const { return rejected_; }
  std::vector<double> Mean() const;
  void Reset();

 private:
  const FedSelRandomizer& randomizer_;
  std::vector<double> sum_;
  std::size_t count_ = 0, rejected_ = 0;
};

}  // namespace fedldp

#endif  // FEDLDP_PIPELINE_FEDSEL_H_
