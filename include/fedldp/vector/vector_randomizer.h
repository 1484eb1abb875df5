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

#include "fedldp/base/limits.h"
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

  // What the audit checks every randomizer by, with no branch on its kind:
  //  - the privacy of the law as implemented, computed from its exact
  //    probabilities rather than restated: log_ratio, the worst log ratio
  //    of a report's probability under two inputs (NaN where no pure bound
  //    holds: the Gaussians), and the delta at epsilon();
  struct ExactPrivacy {
    double log_ratio = 0;
    double delta_at_epsilon = 0;
  };
  virtual ExactPrivacy ImplementedPrivacy() const = 0;
  //  - a bound on |E[R(x)]_i - x_i| (0: unbiased) and the lower end of
  //    E||R(x) - x||^2 (SquaredError is exact but for FastProjUnit);
  virtual double BiasBound(std::span<const double>) const { return 0; }
  virtual double SquaredErrorLowerBound(double norm) const { return SquaredError(norm); }
  //  - for randomizers with a cap law (PrivUnitG and its seeded form): at
  //    x = C u, u a unit vector, <R(x), u> >= threshold with probability
  //    share, and at x = -C u with probability opposite_share (share e^-eps
  //    for a positive threshold: the privacy ratio of that event); the
  //    audit counts both shares;
  struct CapLaw {
    double threshold = 0;
    double share = 0;
    double opposite_share = 0;
  };
  virtual std::optional<CapLaw> Cap() const { return std::nullopt; }
  //  - whether a report draws a random number of words by design (a
  //    rejection loop whose law does not depend on x): the timing check
  //    then compares the counts' laws at its two inputs, not the counts;
  virtual bool varying_draws() const { return false; }
  //  - one report drawn at x as it is sent, checked against the public
  //    support it must lie on (issue 39): ValidateReport of Randomize, or
  //    FastProjUnit's projected report.
  virtual Status DrawAndCheckSent(std::span<const double> x, Rng& rng) const;

  // The report as a client sends it, when it is shorter than its d values
  // (the seeded forms: a seed; FastProjUnit: its seed and k values): bytes
  // the server turns back into the d values with DecodeSent. nullopt for
  // randomizers whose d values are what is sent.
  virtual std::optional<std::string> EncodeSent(std::span<const double>, Rng&) const {
    return std::nullopt;
  }
  // out = the d values of bytes EncodeSent produced, or why `bytes` are not
  // a report it could have produced.
  virtual Status DecodeSent(std::string_view bytes, std::span<double> out) const;
  // The most bytes EncodeSent produces (0: it sends values).
  virtual std::size_t MaxSentBytes() const { return 0; }

  // x with non-finite entries replaced by 0, scaled onto the ball if outside
  // it; returns its norm (<= clip).
  double ClipInto(std::span<const double> x, std::span<double> out) const;

 protected:
  VectorRandomizer(std::size_t dimension, double clip) : dimension_(dimension), clip_(clip) {}

 private:
  std::size_t dimension_;
  double clip_;
};

struct VectorRandomizerKind;
struct VectorRandomizerTraits;

// A registered randomizer, by its name as the CLI spells it: a handle on
// an entry of VectorRandomizerKinds(). The constants name the built-in ones
// for code and tests; any registered name is reached by ParseVectorMechanism.
class VectorMechanism {
 public:
  constexpr VectorMechanism() = default;  // privunitg
  static const VectorMechanism kPrivUnitG, kFastProjUnit, kFastProjUnitCorr, kGaussian,
      kGaussianClassic, kDuchi;

  std::string_view name() const { return name_; }
  // Its registry entry (every VectorMechanism names a registered one).
  const VectorRandomizerKind& kind() const;
  const VectorRandomizerTraits& traits() const;
  friend bool operator==(VectorMechanism a, VectorMechanism b) { return a.name_ == b.name_; }

 private:
  friend Result<VectorMechanism> ParseVectorMechanism(std::string_view name);
  explicit constexpr VectorMechanism(std::string_view name) : name_(name) {}
  std::string_view name_ = "privunitg";
};

inline constexpr VectorMechanism VectorMechanism::kPrivUnitG{"privunitg"};
inline constexpr VectorMechanism VectorMechanism::kFastProjUnit{"fastprojunit"};
inline constexpr VectorMechanism VectorMechanism::kFastProjUnitCorr{"fastprojunit-corr"};
inline constexpr VectorMechanism VectorMechanism::kGaussian{"gaussian"};
inline constexpr VectorMechanism VectorMechanism::kGaussianClassic{"gaussian-classic"};
inline constexpr VectorMechanism VectorMechanism::kDuchi{"duchi"};

struct VectorRandomizerConfig {
  VectorMechanism mechanism = VectorMechanism::kPrivUnitG;
  std::size_t dimension = 0;
  double epsilon = 1;
  double delta = 0;  // for randomizers with traits().needs_delta; must be 0 for the others
  double clip = 1;
  std::size_t k = 0;              // for traits().takes_k: the projected dimension; 0 = default
  std::uint64_t public_seed = 0;  // for traits().shared_seed: the public randomness

  Status Validate() const;
};

// What a randomizer asks of the run that uses it: every caller reads these
// instead of naming randomizers (issue 40).
struct VectorRandomizerTraits {
  // (eps, delta)-LDP with a delta in (0, 1) asked for; else pure eps-LDP. The
  // deployment's ledgers charge pure eps, and no amplification by shuffling
  // is proven for these reports.
  bool needs_delta = false;
  bool takes_k = false;      // a projected dimension k (0 = DefaultProjection)
  bool shared_seed = false;  // public randomness every client shares (public_seed)
  // Its statement holds in a model of its candidate generator (the seeded
  // forms: candidates as ideal normals, seeded_privunit.h), not of every
  // value the program draws.
  bool generator_model = false;
};

// One registered randomizer (vector/registry.cc lists them; each is defined
// beside its randomizer): a new randomizer is its file, one line there, a
// build rule and its tests, and every name list, option check and audit row
// follows from this entry.
struct VectorRandomizerKind {
  std::string_view name;     // as the CLI spells it
  std::string_view summary;  // one line for --help and docs' tables
  VectorRandomizerTraits traits;
  // Builds the randomizer of a config Validate() accepted.
  Result<std::unique_ptr<VectorRandomizer>> (*make)(const VectorRandomizerConfig&);
  // How its privacy statement holds of the program on real computers; empty
  // for reports of public atoms or grid points drawn with exact probabilities
  // (FloatingPointStatement then says so).
  std::string_view floating_point;
  // The registered randomizer whose law it draws, sent another way (the
  // seeded forms: privunitg, fastprojunit): it takes that one's tuned
  // defaults. Empty for the others.
  std::string_view law_of{};
};

// Every registered randomizer, in the order the CLI lists them.
std::span<const VectorRandomizerKind* const> VectorRandomizerKinds();

// A registry entry's `make` from a randomizer's Create.
template <typename T>
Result<std::unique_ptr<VectorRandomizer>> Owned(Result<T> made) {
  if (!made.ok()) return Error{made.error()};
  return std::unique_ptr<VectorRandomizer>(std::make_unique<T>(std::move(made).value()));
}

// A registry entry's `make` for a randomizer whose Create takes (d, eps, clip).
template <typename T>
Result<std::unique_ptr<VectorRandomizer>> MadeByCreate(const VectorRandomizerConfig& c) {
  return Owned(T::Create(c.dimension, c.epsilon, c.clip));
}

// Largest dimension a vector randomizer accepts: base/limits.h's kDimension
// (2^24, a padded SRHT buffer of 128 MiB).
inline constexpr std::size_t kMaxVectorDimension = static_cast<std::size_t>(kDimension.max);
// FastProjUnit's default k: min(d, 1000).
std::size_t DefaultProjection(std::size_t dimension);

Result<std::unique_ptr<VectorRandomizer>> MakeVectorRandomizer(
    const VectorRandomizerConfig& config);

// The registered names, as the CLI spells them.
std::string_view VectorMechanismName(VectorMechanism m);
Result<VectorMechanism> ParseVectorMechanism(std::string_view name);
std::vector<std::string> VectorMechanismNames();

// One line saying how a report's privacy statement holds of the program on
// real computers (issue 39): the vector randomizer's registered statement,
// or, for the value mechanisms (nullopt) and randomizers that register none,
// that every report is public atoms or grid points drawn with exact
// probabilities; `also` adds what else a report holds (FedSel's index).
std::string FloatingPointStatement(std::optional<VectorMechanism> vector,
                                   std::string_view also = {});

}  // namespace fedldp

#endif  // FEDLDP_VECTOR_VECTOR_RANDOMIZER_H_
