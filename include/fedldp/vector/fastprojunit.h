// FastProjUnit (Asi, Feldman, Nelson, Nguyen & Talwar, "Fast optimal locally
// private mean estimation via random projections", NeurIPS 2023).
//
// For x in the ball of radius C: y = W x with the SRHT W = sqrt(d'/k) S H D of
// srht.h (d zero-padded to d' = 2^ceil(log2 d)); the direction y / ||y|| is
// rounded to the sphere as in PrivUnitG (sign + with probability
// (1 + ||x|| / C) / 2) and privatised by PrivUnitG in k dimensions (z, eps-LDP
// for any W, since W does not depend on x); the estimate is C W^T z. If
// y = 0 (x = 0, or x in W's null space) e_1 of R^k is privatised with a fair
// sign. The report a client sends is (seed, z): the seed, drawn from the
// client's generator, fixes S (and D unless shared), and reveals nothing about
// x; the noise of z comes from the client's generator, and z lies on
// PrivUnitG's public grid (random/exact_privunit.h; ValidateProjected checks
// it). y enters only as a direction: x is scaled by a power of two, and the
// rounding's sign is drawn by SphereSign, without a branch on x.
//
// Signs: drawn per client from the seed, or shared by every client from a
// public seed ("-corr", so a server can sum the z's in the rotated space and
// transform once).
//
// Error. The report keeps the first d coordinates of C W^T z (the padding's
// are dropped: x is 0 there). Each column of W has norm 1, so for PrivUnitG's
// noise (covariance sigma^2 (I - y^ y^T) + sigma^2 Var(a) y^ y^T about y^,
// the rounded direction) E||P_d W^T z||^2 = sigma^2 d + sigma gamma
// E||P_d W^T y^||^2, and with N = ||W x^||, x^ = x / ||x||:
//   E||out - x||^2 = C^2 (sigma^2 d + sigma gamma T) + ||x||^2 (1 - 2 E[N]),
// T = E||P_d W^T y^||^2 in [1, d'/k] (at least <W^T y^, x^>^2 = N^2, at most
// ||W^T||^2), and T = d/k exactly at x = 0 (y^ = e_1, independent of W).
// E[N^2] = 1 over S, so 1 - beta <= E[N] <= 1 with
//   beta = 2 (d' - k) / (k (d' - 1)) >= E[(N^2 - 1)^2] >= Var N >= 1 - E N
// (the middle step over random signs; E_D[d' sum y^4] = 3 - 2 ||x^||_4^4).
// SquaredError(norm) is exact at norm 0 and the upper end of this bracket
// elsewhere; SquaredErrorLowerBound the lower end.
//
// Bias. Normalising after projecting makes the mean C t E[W^T W x^ / N]
// (t = ||x|| / C) instead of x: along x^ it is shrunk by E[N] (at most beta),
// and every coordinate is off by at most C t E|1 - N| <= C sqrt(beta) (since
// ||W e_i|| = 1). With shared signs the bound holds on average over the public
// seed; BiasBound() gives it for one input and the actual signs.
#ifndef FEDLDP_VECTOR_FASTPROJUNIT_H_
#define FEDLDP_VECTOR_FASTPROJUNIT_H_

#include <memory>

#include "fedldp/vector/privunitg.h"
#include "fedldp/vector/seeded_privunit.h"
#include "fedldp/vector/srht.h"

namespace fedldp {

struct ProjectedReport {
  std::uint64_t seed = 0;  // fixes the rows S (and the signs D unless shared)
  std::vector<double> z;   // PrivUnitG's report in k dimensions (unit scale)
  // The seeded form ("fastprojunit-seed"): z is not sent but regenerated
  // from this 16-byte seed (seeded_privunit.h), 24 bytes a report in all.
  std::optional<SeedReport> candidate;
};

class FastProjUnit final : public VectorRandomizer {
 public:
  // eps in (0, 100], clip > 0, 1 <= k <= dimension <= kMaxVectorDimension.
  // shared_signs: the "-corr" variant, signs drawn from public_seed.
  // seeded: PrivUnitG in k dimensions sent as a seed (seeded_privunit.h;
  // per-client signs only).
  static Result<FastProjUnit> Create(std::size_t dimension, double epsilon, double clip,
                                     std::size_t k, bool shared_signs,
                                     std::uint64_t public_seed = 0, bool seeded = false);

  std::string name() const override;
  double epsilon() const override { return inner_->epsilon(); }
  // PrivUnitG's in k dimensions: the projection is post-processing (0 for
  // the seeded form, whose law is stated in its model).
  double deviation() const override { return seeded_ ? 0.0 : inner_->deviation(); }
  bool varying_draws() const override { return seeded_ != nullptr; }
  bool unbiased() const override { return false; }
  std::size_t k() const { return k_; }
  std::size_t padded() const { return padded_; }
  const PrivUnitG& inner() const { return *inner_; }
  // beta = 2 (d' - k) / (k (d' - 1)): bounds 1 - E[N] and E[(N^2 - 1)^2].
  double beta() const;

  double SquaredError(double norm) const override;
  double SquaredErrorLowerBound(double norm) const override;
  // PrivUnitG's in k dimensions (its seeded form's).
  ExactPrivacy ImplementedPrivacy() const override {
    return seeded_ ? seeded_->ImplementedPrivacy() : inner_->ImplementedPrivacy();
  }
  // Encode's report, checked by ValidateProjected.
  Status DrawAndCheckSent(std::span<const double> x, Rng& rng) const override;
  // max(SquaredError(0), SquaredError(C)): an upper bound.
  double WorstCaseSquaredError() const override;

  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override;
  using VectorRandomizer::Randomize;

  // The compact report as sent: its seed, then the candidate's 16 bytes
  // (the seeded form) or the k values of z, little-endian (base/words.h).
  // DecodeSent checks it by ValidateProjected before decoding.
  std::optional<std::string> EncodeSent(std::span<const double> x, Rng& rng) const override;
  Status DecodeSent(std::string_view bytes, std::span<double> out) const override;
  std::size_t MaxSentBytes() const override;

  // The client's side: the compact report.
  ProjectedReport Encode(std::span<const double> x, Rng& rng) const;
  // The server's side: C W^T z, d entries.
  void Decode(const ProjectedReport& report, std::span<double> out) const;
  Status ValidateProjected(const ProjectedReport& report) const;

  // E[C W^T W x / (||x|| N)] - x for one input, by Monte Carlo over `draws`
  // projections of `rng` (no privacy noise): the bias, measured.
  std::vector<double> ProjectionBias(std::span<const double> x, std::size_t draws, Rng& rng) const;
  // Bound on every coordinate of the bias for input x: C t sqrt(E[(N^2 - 1)^2]),
  // with the expectation over S for the shared signs, over S and D otherwise.
  double BiasBound(std::span<const double> x) const override;

 private:
  FastProjUnit(std::size_t dimension, double clip, std::size_t k, bool shared, SignBits signs,
               std::shared_ptr<const PrivUnitG> inner,
               std::shared_ptr<const SeededPrivUnitG> seeded);
  // The upper or lower end of the error bracket (exact at norm 0).
  double ErrorBound(double norm, bool upper) const;
  // The SRHT of `seed`: rows (and signs unless shared) into the out-params.
  Srht Projection(std::uint64_t seed, SignBits& signs, std::vector<std::uint32_t>& rows) const;

  std::size_t k_, padded_;
  bool shared_;
  SignBits shared_signs_;
  std::shared_ptr<const PrivUnitG> inner_;
  std::shared_ptr<const SeededPrivUnitG> seeded_;  // the seeded form's, else null
};

}  // namespace fedldp

#endif  // FEDLDP_VECTOR_FASTPROJUNIT_H_
