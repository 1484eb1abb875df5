// The compressed solution (Shin et al., "Privacy enhanced matrix
// factorization for recommendation with local differential privacy", TKDE
// 2018; FedSel's baseline "-RP"): a public Gaussian matrix Phi (q x d,
// entries N(0, 1/q), drawn from a public seed) projects the client's vector to
// y = Phi x; the client samples one of the q coordinates uniformly and reports
// (i, M(y_i)) with a value mechanism M at eps (y_i clipped to [-1, 1]). The
// server averages q * M(y_i) per coordinate into an estimate of Phi x-bar and
// recovers x-hat = Phi^+ y-hat, Phi^+ = Phi^T (Phi Phi^T)^-1 (q <= d).
//
// Privacy: the coordinate is data-independent and the value eps-LDP, so a
// report is eps-LDP. Utility: y-hat is unbiased for Phi x-bar when no y_i is
// clipped, but x-hat is unbiased only for Phi^+ Phi x-bar, the projection of
// x-bar on Phi's row space: the recovery error FedSel observes (Fig. 2(i)).
#ifndef FEDLDP_PIPELINE_COMPRESSED_H_
#define FEDLDP_PIPELINE_COMPRESSED_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/pipeline/sparse_report.h"

namespace fedldp {

class CompressedRandomizer {
 public:
  // 1 <= q <= min(d, 4096) (Phi Phi^T is factorised densely).
  static Result<CompressedRandomizer> Create(ValueMechanismKind mechanism, double epsilon,
                                             std::size_t d, std::size_t q,
                                             std::uint64_t projection_seed);

  SparseReport Randomize(std::span<const double> x, Rng& rng) const;
  bool Validate(const SparseReport& report) const;
  double Likelihood(const SparseReport& report, std::span<const double> x) const;

  // y = Phi x.
  std::vector<double> Project(std::span<const double> x) const;
  // x-hat = Phi^+ y: the minimum-norm solution of Phi x = y.
  std::vector<double> Recover(std::span<const double> y) const;

  double epsilon() const { return mechanism_->epsilon(); }
  std::size_t dimension() const { return d_; }
  std::size_t q() const { return q_; }
  const ValueMechanism& mechanism() const { return *mechanism_; }
  // Row-major q x d.
  const std::vector<double>& projection() const { return phi_; }

 private:
  CompressedRandomizer(std::shared_ptr<const ValueMechanism> m, std::size_t d, std::size_t q,
                       std::uint64_t seed);
  std::shared_ptr<const ValueMechanism> mechanism_;
  std::size_t d_, q_;
  std::vector<double> phi_;       // q x d
  std::vector<double> cholesky_;  // lower factor L of Phi Phi^T = L L^T, q x q
};

class CompressedAggregator {
 public:
  explicit CompressedAggregator(const CompressedRandomizer& randomizer);
  bool Add(const SparseReport& report);
  std::size_t count() const { return count_; }
  // Unbiased estimate of Phi x-bar (q entries).
  std::vector<double> ProjectedEstimate() const;
  // Phi^+ applied to it (d entries).
  std::vector<double> Estimate() const;

 private:
  const CompressedRandomizer& randomizer_;
  std::vector<double> sum_;
  std::size_t count_ = 0;
};

}  // namespace fedldp

#endif  // FEDLDP_PIPELINE_COMPRESSED_H_
