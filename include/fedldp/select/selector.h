// Private dimension selection (FedSel, Liu et al., DASFAA 2020, Sect. 4 and
// Appendix Algorithms 2-4), plus the non-private Top-k and uniform baselines.
//
// Every selector here is a function of the ranking of |r| only (ranking.h):
// it draws a rank position M from a law that does not depend on r, and
// outputs the index at position M, ties broken uniformly at random (or
// "none", -1, for PE's empty set). Hence, with G(j) the positions of j's tie
// group in r (a single position when |r_j| is unique),
//   P[j | r] = average of P[M = m] over m in G(j),
// which lies between min_m P[M = m] and max_m P[M = m]; the worst-case ratio
// over all pairs of inputs r, r' is exactly
//   max_m P[M = m] / min_m P[M = m]
// (reached by inputs without ties), which WorstCaseRatio() returns. Sampling costs one O(d)
// expected nth_element, never a full sort (the paper's EXP is O(d^2)).
//
// Position laws (d dimensions, Top-k = positions 0..k-1):
//  EXP  P[m] proportional to exp(eps (d - m) / (d - 1)) (paper: rank z = d - m,
//       1 = smallest). Ratio exactly e^eps: Lemma 1 holds.
//  PS   P[m] = e^eps / (d - k + k e^eps) for m < k, 1 / (d - k + k e^eps)
//       otherwise (Algorithm 4 and Lemma 3's p = e^eps k / (d - k + e^eps k)).
//       Ratio exactly e^eps. Sect. 4.1's text writes e^(eps k) instead; that
//       typo would give ratio e^(eps k) / k; fedldp follows Algorithm 4.
//  PE   Algorithm 3: each Top-k bit is kept w.p. p = e^eps' / (e^eps' + 1),
//       each other bit set w.p. 1 - p; S = set bits; output uniform on S, or
//       none if S is empty. Exactly, for j in the Top-k,
//         P[m] = p E[1 / (1 + Bin(k - 1, p) + Bin(d - k, 1 - p))],
//       and otherwise (1 - p) E[1 / (1 + Bin(k, p) + Bin(d - k - 1, 1 - p))].
//       The second count is stochastically larger, so the ratio EXCEEDS
//       p / (1 - p) = e^eps': Lemma 2's proof divides both sides by the same
//       expected size l, which is wrong (e.g. d = 10, k = 1, eps' = 1 gives
//       e^1.173). "pe" calibrates eps' < eps by bisection so that the exact
//       ratio is <= e^eps; "pe-published" keeps eps' = eps and reports its
//       true (larger) ratio.
//  topk     uniform on the Top-k (non-private; epsilon() is +inf).
//  uniform  uniform on all d (0-LDP; the flat solution's sampling).
#ifndef FEDLDP_SELECT_SELECTOR_H_
#define FEDLDP_SELECT_SELECTOR_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/random/rng.h"

namespace fedldp {

class Selector {
 public:
  static constexpr std::int64_t kNone = -1;

  virtual ~Selector() = default;
  virtual std::string name() const = 0;
  // The guarantee this selector gives: eps-LDP with respect to the ranking.
  virtual double epsilon() const = 0;
  std::size_t dimension() const { return d_; }
  std::size_t k() const { return k_; }

  // P[M = position]; position in [0, d).
  virtual double PositionProbability(std::size_t position) const = 0;
  // P[output is none].
  virtual double NoneProbability() const { return 0.0; }
  // Draws M (or kNone) without looking at any data.
  virtual std::int64_t SamplePosition(Rng& rng) const = 0;

  // Selects an index of r (r.size() must equal dimension()), or kNone.
  // Throws std::invalid_argument on a size mismatch.
  virtual std::int64_t Select(std::span<const double> r, Rng& rng) const;
  // Exact P[Select(r) = j] for every j (size d); NoneProbability() is the rest.
  std::vector<double> Probabilities(std::span<const double> r) const;
  // max_m P[M = m] / min_m P[M = m] (+inf if some position is impossible).
  double WorstCaseRatio() const;

 protected:
  Selector(std::size_t d, std::size_t k) : d_(d), k_(k) {}
  void CheckSize(std::span<const double> r) const;

 private:
  std::size_t d_, k_;
};

// The selectors, named exp, pe, pe-published, ps, topk and uniform.
enum class SelectorKind {
  kExp,          // EXP (Algorithm 2)
  kPe,           // PE calibrated to its exact ratio (docs/corrections.md)
  kPePublished,  // PE with the paper's eps' (Lemma 2 as written)
  kPs,           // PS (Algorithm 4)
  kTopK,         // non-private Top-k, uniform within the k largest
  kUniform,      // uniform over all d: data-independent, spends nothing
};
std::string_view SelectorName(SelectorKind kind);
Result<SelectorKind> ParseSelector(std::string_view name);
std::vector<std::string> SelectorNames();

// Builds a selector. Requires d >= 1, 1 <= k <= d, and epsilon as for every
// mechanism (ignored by topk and uniform, unused k by exp and uniform but
// still validated).
Result<std::shared_ptr<const Selector>> MakeSelector(SelectorKind kind, double epsilon,
                                                     std::size_t d, std::size_t k);
// By name, for the edges (CLI, Python): ParseSelector, then the above.
Result<std::shared_ptr<const Selector>> MakeSelector(std::string_view name, double epsilon,
                                                     std::size_t d, std::size_t k);

// E[1 / (1 + Bin(a, p) + Bin(b, q))] = integral over u in [0, 1] of
// (1 - p u)^a (1 - q u)^b, by Gauss-Legendre quadrature on panels sized by the
// integrand's decay (relative error ~1e-14; checked against exact
// convolution in the tests). Exposed for tests and audits.
double ExpectedInverseCount(std::uint64_t a, double p, std::uint64_t b, double q);

}  // namespace fedldp

#endif  // FEDLDP_SELECT_SELECTOR_H_
