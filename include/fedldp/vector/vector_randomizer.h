// Randomizers for whole vectors: the interface every one of them implements.
//
// A randomizer R maps a vector x in R^d to a random report R(x) in R^d and is
// (eps, delta)-LDP over the l2 ball of radius C ("the clip"): for all x, x'
// in the ball and every measurable S, P[R(x) in S] <= e^eps P[R(x') in S] +
// delta. Inputs outside the ball are first scaled onto it (x C / ||x||), and
// a non-finite coordinate is replaced by 0 before that, so the guarantee holds
// for every input; the estimate is then of the clipped vector.
//
// Every randomizer states its (eps, delta) and its exact mean squared error
// E||R(x) - x||^2, which for all of them depends on x only through ||x||, and
// checks that a report is one it could have produced.
#ifndef FEDLDP_VECTOR_VECTOR_RANDOMIZER_H_
#define FEDLDP_VECTOR_VECTOR_RANDOMIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/random/rng.h"

namespace fedldp {

class VectorRandomizer {
 public:
  virtual ~VectorRandomizer() = default;

  virtual std::string name() const = 0;
  std::size_t dimension() const { return dimension_; }
  double clip() const { return clip_; }
  virtual double epsilon() const = 0;
  virtual double delta() const { return 0; }
  // Total variation between one report as the program draws it and the
  // ideal mechanism's law: PrivUnitG's and FastProjUnit's proven allowance
  // (random/exact_privunit.h), 0 where the law is exact (the Gaussians'
  // allowance is in delta()). The accountant adds (1 + e^eps) n times it to
  // the delta of each step of n reports (RunPrivacyConfig::report_deviation).
  virtual double deviation() const { return 0; }
  // True iff E[R(x)] = x for every x in the ball (FastProjUnit is not: its
  // normalisation after projecting shrinks the mean, see fastprojunit.h).
  virtual bool unbiased() const { return true; }

  // E||R(x) - x||^2 for an input of norm `norm` <= clip (exact, or for
  // FastProjUnit an upper bound stated there).
  virtual double SquaredError(double norm) const = 0;
  // The largest SquaredError over the ball.
  virtual double WorstCaseSquaredError() const = 0;

  // out = R(x). x and out have dimension() entries and must not overlap.
  virtual void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const = 0;
  std::vector<double> Randomize(std::span<const double> x, Rng& rng) const;

  // The public grid every entry of a report lies on, if the randomizer has
  // one (the Gaussians); the same for every input.
  virtual std::optional<OutputGrid> Grid() const { return std::nullopt; }

  // OK iff `report` could have been produced: the right length, finite, and
  // inside the randomizer's output domain where it has one.
  virtual Status ValidateReport(std::span<const double> report) const;

  // x with non-finite entries replaced by 0, scaled onto the ball if outside
  // it; returns its norm (<= clip).
  double ClipInto(std::span<const double> x, std::span<double> out) const;

 protected:
  VectorRandomizer(std::size_t dimension, double clip) : dimension_(dimension), clip_(clip) {}

 private:
  std::size_t dimension_;
  double clip_;
};

enum class VectorMechanism {
  kPrivUnitG,         // PrivUnitG (Asi, Feldman & Talwar 2022), eps-LDP
  kFastProjUnit,      // FastProjUnit (Asi et al. 2023), per-client random signs
  kFastProjUnitCorr,  // FastProjUnit with the signs shared from a public seed
  kGaussian,          // Gaussian, analytic calibration (Balle & Wang 2018)
  kGaussianClassic,   // Gaussian, sigma = 2C sqrt(2 ln(1.25 / delta)) / eps
  kDuchi,             // Duchi's two-point mechanism on every coordinate, eps / d each
};

struct VectorRandomizerConfig {
  VectorMechanism mechanism = VectorMechanism::kPrivUnitG;
  std::size_t dimension = 0;
  double epsilon = 1;
  double delta = 0;  // the Gaussians' only; must be 0 for the others
  double clip = 1;
  std::size_t k = 0;              // FastProjUnit's projected dimension; 0 = its default
  std::uint64_t public_seed = 0;  // FastProjUnit-corr's shared signs

  Status Validate() const;
};

// Largest dimension a vector randomizer accepts (2^24: a padded SRHT buffer of
// 128 MiB).
inline constexpr std::size_t kMaxVectorDimension = std::size_t{1} << 24;
// FastProjUnit's default k: min(d, 1000).
std::size_t DefaultProjection(std::size_t dimension);

Result<std::unique_ptr<VectorRandomizer>> MakeVectorRandomizer(
    const VectorRandomizerConfig& config);

// Names as the CLI spells them: privunitg, fastprojunit, fastprojunit-corr,
// gaussian, gaussian-classic, duchi.
std::string_view VectorMechanismName(VectorMechanism m);
Result<VectorMechanism> ParseVectorMechanism(std::string_view name);
std::vector<std::string> VectorMechanismNames();

// One line saying how a report's privacy statement holds of the program on
// real computers (issue 39): every value mechanism (nullopt) and vector duchi
// draw public atoms with exact probabilities; the Gaussians report points of
// a public grid with a proven allowance in delta; PrivUnitG and FastProjUnit
// points of a public grid within a proven total variation. `also` adds to the
// exact case what else a report holds (FedSel's index).
std::string FloatingPointStatement(std::optional<VectorMechanism> vector,
                                   std::string_view also = {});

}  // namespace fedldp

#endif  // FEDLDP_VECTOR_VECTOR_RANDOMIZER_H_
