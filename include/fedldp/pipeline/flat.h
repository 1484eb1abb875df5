// The flat solution for multidimensional vectors (Wang et al., ICDE 2019,
// Algorithm 4; FedSel's baselines PM, HM and Duchi): each client samples k of
// its d dimensions uniformly without replacement and perturbs each sampled
// x_j (clipped to [-1, 1]) with a value mechanism at eps / k; the server
// scales each reported value by d / k and averages over clients.
//
// Privacy: the sampled set does not depend on the data and each of the k
// values is (eps/k)-LDP, so a report is eps-LDP (Likelihood() lets tests check
// this exactly). Default k = max(1, min(d, floor(eps / 2.5))) (Wang et al.).
// Per coordinate, the scaled contribution y_j has E[y_j] = x_j and
// Var[y_j] = (d / k) (Var_M(x_j) + x_j^2) - x_j^2.
#ifndef FEDLDP_PIPELINE_FLAT_H_
#define FEDLDP_PIPELINE_FLAT_H_

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/pipeline/sparse_report.h"

namespace fedldp {

class FlatRandomizer {
 public:
  // mechanism: pm, hm or duchi (any scalar mechanism on [-1, 1] works; laplace
  // too). k defaults to Wang et al.'s rule.
  static Result<FlatRandomizer> Create(ValueMechanismKind mechanism, double epsilon, std::size_t d,
                                       std::optional<std::size_t> k = std::nullopt);
  static std::size_t DefaultK(double epsilon, std::size_t d);

  SparseReport Randomize(std::span<const double> x, Rng& rng) const;
  // True iff the report could come from this randomizer: k distinct indices
  // below d, each value a possible output of the per-dimension mechanism.
  bool Validate(const SparseReport& report) const;
  // Likelihood of a report given x: P[set] times each value's mass (or
  // density) under its coordinate.
  double Likelihood(const SparseReport& report, std::span<const double> x) const;
  // Var of the scaled per-coordinate contribution d/k * value (0 if unsampled).
  double CoordinateVariance(double xj) const;

  double epsilon() const { return epsilon_; }
  std::size_t dimension() const { return d_; }
  std::size_t k() const { return k_; }
  double scale() const { return static_cast<double>(d_) / static_cast<double>(k_); }
  // The per-dimension mechanism, at epsilon / k.
  const ValueMechanism& mechanism() const { return *mechanism_; }

 private:
  FlatRandomizer(std::shared_ptr<const ValueMechanism> m, double epsilon, std::size_t d,
                 std::size_t k);
  std::shared_ptr<const ValueMechanism> mechanism_;
  double epsilon_;
  std::size_t d_, k_;
};

// Sums scaled reports and returns the mean estimate.
class FlatAggregator {
 public:
  explicit FlatAggregator(const FlatRandomizer& randomizer);
  // Adds a report; returns false (and ignores it) if it does not validate.
  bool Add(const SparseReport& report);
  std::size_t count() const { return count_; }
  std::vector<double> Estimate() const;

 private:
  const FlatRandomizer& randomizer_;
  std::vector<double> sum_;
  std::size_t count_ = 0;
};

// k distinct indices of [0, d), uniformly (Floyd's algorithm, O(k) draws),
// in increasing order.
std::vector<std::uint32_t> SampleWithoutReplacement(std::size_t d, std::size_t k, Rng& rng);

}  // namespace fedldp

#endif  // FEDLDP_PIPELINE_FLAT_H_
