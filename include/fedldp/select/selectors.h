// The concrete selectors of selector.h. Build them with Create (or
// MakeSelector by name); each Create validates d, k and epsilon.
#ifndef FEDLDP_SELECT_SELECTORS_H_
#define FEDLDP_SELECT_SELECTORS_H_

#include <limits>

#include "fedldp/random/discrete.h"
#include "fedldp/select/selector.h"

namespace fedldp {

// EXP, Algorithm 2: P[rank z] proportional to exp(eps z / (d - 1)), i.e.
// position m = d - z with probability proportional to exp(-m eps / (d - 1)).
// Drawn exactly (issue 39): with the rational rate
// s / t <= eps / (d - 1) (RationalRateBelow), m = Y mod d for Y geometric
// with P[Y = y] proportional to exp(-y s / t) (CKS, random/discrete.h);
// P[Y mod d = m] is proportional to exp(-m s / t), the truncated law itself.
class ExponentialSelection final : public Selector {
 public:
  static Result<ExponentialSelection> Create(double epsilon, std::size_t d);
  std::string name() const override { return "exp"; }
  double epsilon() const override { return epsilon_; }
  double PositionProbability(std::size_t position) const override;
  std::int64_t SamplePosition(Rng& rng) const override;

 private:
  ExponentialSelection(double epsilon, std::size_t d, RationalRate rate);
  double epsilon_;
  RationalRate rate_;  // s / t <= eps / (d - 1): the log-probability drop per position
  double log_norm_;    // log of (1 - rho) / (1 - rho^d), rho = e^-(s / t)
};

// PE, Algorithm 3, with its randomized-response parameter calibrated (or not,
// for the published form) as described in selector.h. Drawn exactly (issue
// 39): the flip probability is Q / 2^53, Q = ceil(2^53 / (1 + e^eps')), so it
// and 1 - Q / 2^53 are exact doubles; the two binomials are BinomialDyadic's
// (random/discrete.h), and every probability and the guarantee are computed
// from these values, not from eps'.
class PerturbedEncoding final : public Selector {
 public:
  // Calibrated: the exact worst-case ratio is <= e^epsilon.
  static Result<PerturbedEncoding> Create(double epsilon, std::size_t d, std::size_t k);
  // As published: flips with p = e^epsilon / (e^epsilon + 1); its true
  // guarantee is log(WorstCaseRatio()) > epsilon.
  static Result<PerturbedEncoding> CreatePublished(double epsilon, std::size_t d, std::size_t k);

  std::string name() const override { return published_ ? "pe-published" : "pe"; }
  // The guarantee: the target for "pe", the true one for "pe-published".
  double epsilon() const override { return guarantee_; }
  // The eps' of the randomized response actually used: ln((2^53 - Q) / Q).
  double flip_epsilon() const { return flip_epsilon_; }
  double PositionProbability(std::size_t position) const override;
  double NoneProbability() const override { return none_; }
  std::int64_t SamplePosition(Rng& rng) const override;

  // Exact P[position in Top-k] / P[position outside] for randomized response
  // with parameter flip_epsilon: the worst-case ratio of PE.
  static double RatioFor(double flip_epsilon, std::size_t d, std::size_t k);

 private:
  PerturbedEncoding(double flip_epsilon, std::size_t d, std::size_t k, bool published);
  std::uint64_t flip_numerator_;  // Q
  double flip_epsilon_, guarantee_;
  double keep_, flip_;  // 1 - Q / 2^53 and Q / 2^53, exact
  double in_, out_, none_;
  bool published_;
};

// PS, Algorithm 4: a Top-k position e^eps times as likely as any other.
// Drawn exactly (issue 39): every position has the integer weight b and the
// Top-k's b + c, with (b + c) / b <= e^eps within 2^-52 (MakeIntegerExpRatio),
// as one uniform integer below W = b d + c k: below b d it names a position of
// all d (by a shift), else a uniform one of the Top-k. PositionProbability
// gives these implemented probabilities.
class PerturbedSampling final : public Selector {
 public:
  static Result<PerturbedSampling> Create(double epsilon, std::size_t d, std::size_t k);
  std::string name() const override { return "ps"; }
  double epsilon() const override { return epsilon_; }
  double PositionProbability(std::size_t position) const override;
  std::int64_t SamplePosition(Rng& rng) const override;

 private:
  PerturbedSampling(double epsilon, std::size_t d, std::size_t k, IntegerExpRatio ratio);
  double epsilon_;
  int shift_;        // every position has weight b = 2^shift
  Uint128 extra_;    // the Top-k's have b + c
  Uint128 total_;    // W = b d + c k
  double in_, out_;  // P[M = m] inside and outside the Top-k: (b + c) / W, b / W
};

// Non-private Top-k: uniform on the k largest |r_j| (k = 1: the argmax).
class TopKSelection final : public Selector {
 public:
  static Result<TopKSelection> Create(std::size_t d, std::size_t k);
  std::string name() const override { return "topk"; }
  double epsilon() const override;
  double PositionProbability(std::size_t position) const override;
  std::int64_t SamplePosition(Rng& rng) const override;

 private:
  TopKSelection(std::size_t d, std::size_t k) : Selector(d, k) {}
};

// Uniform sampling of one of d dimensions; reads no data.
class UniformSelection final : public Selector {
 public:
  static Result<UniformSelection> Create(std::size_t d);
  std::string name() const override { return "uniform"; }
  double epsilon() const override { return 0.0; }
  double PositionProbability(std::size_t) const override { return 1.0 / dimension(); }
  std::int64_t SamplePosition(Rng& rng) const override;
  std::int64_t Select(std::span<const double> r, Rng& rng) const override;

 private:
  explicit UniformSelection(std::size_t d) : Selector(d, d) {}
};

}  // namespace fedldp

#endif  // FEDLDP_SELECT_SELECTORS_H_
