// Scalar value mechanisms: the interface every one of them implements.
//
// A mechanism M maps a real input x to a random output y and satisfies
// eps-LDP on its input domain: for all x, x' and all measurable sets S,
// P[M(x) in S] <= e^eps P[M(x') in S]. Inputs outside the input domain are
// clipped to it first (NaN is mapped to the domain's centre); clipping is part
// of the mechanism, so the guarantee holds for every real input.
//
// Every mechanism explains itself: its epsilon, domains, exact variance, and
// its output law as atoms (probability masses), masses on a public grid and a
// density on the rest, so tests and audits can check it against the
// mathematics.
//
// Floating point (issue 39; Mironov, CCS 2012). A mechanism whose output is a
// formula of its input on doubles can output values that some other input
// cannot: such an output rules that input out, an unbounded privacy loss that
// no density shows. Every fedldp value mechanism therefore outputs only the
// values of a public set fixed before any input is seen, its atoms and its
// OutputGrid, and its probabilities are exact rationals or exact exp of
// rationals realised from uniform random words (random/discrete.h), so the
// ratio bound holds of the program, not only of the formula. No mechanism
// here has a density any more; the interface keeps one for mutants and for
// mechanisms added later, whose outputs the audit's support check flags.
#ifndef FEDLDP_MECHANISM_VALUE_MECHANISM_H_
#define FEDLDP_MECHANISM_VALUE_MECHANISM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/random/rng.h"

namespace fedldp {

struct Interval {
  double lo;
  double hi;
  bool Contains(double v) const { return v >= lo && v <= hi; }
  double center() const { return 0.5 * (lo + hi); }
};

// A public grid of outputs, the same for every input: the values
// Value(m) = m * step for the integers m in [lo, hi]. Samplers and checks
// compute a value by this one expression, so membership is exact.
struct OutputGrid {
  double step;
  std::int64_t lo, hi;
  double Value(std::int64_t m) const { return static_cast<double>(m) * step; }
  // The m with Value(m) == y exactly, if there is one.
  std::optional<std::int64_t> IndexOf(double y) const;
};

class ValueMechanism {
 public:
  virtual ~ValueMechanism() = default;

  virtual std::string name() const = 0;
  virtual double epsilon() const = 0;
  virtual Interval input_domain() const = 0;
  // Smallest interval holding every possible output.
  virtual Interval output_domain() const = 0;
  // True iff y could have been produced by this mechanism (for any input).
  virtual bool CanOutput(double y) const = 0;

  // The input as the mechanism sees it: clipped to the input domain, NaN
  // replaced by the domain's centre.
  double Clip(double x) const;

  virtual double Sample(double x, Rng& rng) const = 0;
  // out[i] = Sample(in[i]); may be faster than a loop of Sample.
  virtual void SampleMany(std::span<const double> in, std::span<double> out, Rng& rng) const;

  // Exact E[M(x)] and Var[M(x)] of the implemented mechanism.
  virtual double Mean(double x) const { return Clip(x); }
  virtual double Variance(double x) const = 0;

  // The output law given x: point masses at Atoms() and at the points of
  // Grid() with probability Mass(y, x), plus a density Density(y, x) on the
  // rest (0 for purely discrete mechanisms, as all of fedldp's are), and the
  // distribution function Cdf(y, x) = P[M(x) <= y].
  virtual std::vector<double> Atoms() const { return {}; }
  virtual std::optional<OutputGrid> Grid() const { return std::nullopt; }
  // y is an atom or a grid point: a value fixed before any input is seen.
  bool OnPublicSupport(double y) const;
  virtual double Mass(double y, double x) const;
  virtual double Density(double y, double x) const;
  virtual double Cdf(double y, double x) const = 0;
  // Mass(y, x) if y is on the public support, else Density(y, x): the
  // likelihood of one observed output, as privacy checks need it.
  double Likelihood(double y, double x) const;
};

// The mechanisms, named duchi, pm, hm, laplace and twopoint.
enum class ValueMechanismKind {
  kDuchi,      // Duchi et al.'s two-point mechanism on [-1, 1]
  kPiecewise,  // PM (Wang et al.)
  kHybrid,     // HM (Wang et al.)
  kLaplace,    // Laplace on [-1, 1]
  kTwoPoint,   // LDP-FL's two-point mechanism on [c - r, c + r]
};
std::string_view ValueMechanismName(ValueMechanismKind kind);
Result<ValueMechanismKind> ParseValueMechanism(std::string_view name);
// Names accepted by ParseValueMechanism.
std::vector<std::string> ValueMechanismNames();

// Builds a mechanism. `center` and `radius` are used by twopoint only (its
// input domain is [c - r, c + r]).
Result<std::shared_ptr<const ValueMechanism>> MakeValueMechanism(ValueMechanismKind kind,
                                                                 double epsilon,
                                                                 double center = 0.0,
                                                                 double radius = 1.0);
// By name, for the edges (CLI, Python): ParseValueMechanism, then the above.
Result<std::shared_ptr<const ValueMechanism>> MakeValueMechanism(std::string_view name,
                                                                 double epsilon,
                                                                 double center = 0.0,
                                                                 double radius = 1.0);

}  // namespace fedldp

#endif  // FEDLDP_MECHANISM_VALUE_MECHANISM_H_
