// PrivUnitG sent as a 16-byte seed (issue 45, item 4): the rejection-sampling
// compression of Feldman & Talwar ("Lossless compression of efficient private
// local randomizers", ICML 2021) applied to PrivUnitG's law, registered as
// "privunitg-seed".
//
// The mechanism. PrivUnitG's report for a unit u is sigma w, where w has the
// density of N(0, I_d) times 1 on the cap {<w, u> >= gamma} and times e^-eps
// off it, normalised (privunitg.h, exact_privunit.h). That law is the
// standard normal reweighted by a factor in [e^-eps, 1], so it is drawn by
// rejection from N(0, I_d): draw a candidate, accept it with probability 1 on
// the cap and p' off it. Here a candidate is G(s), d normals generated from a
// 128-bit seed s (the ziggurat of normal.h on the counter generator
// CounterRng(s.hi, s.lo)), the seed is drawn from the caller's generator (a
// SecureRng in a deployment, so it is secret until sent), and the client
// sends only the accepted seed. The server regenerates G(s) and reports
// C sigma' G(s). Encode:
//   u = sign x / ||x|| (PrivUnitG's unbiased rounding to the sphere);
//   for t = 1 .. T: s = two fresh words; accept iff <G(s), u> >= gamma
//     (computed, see below) or a fresh word b < t' (P = t' / 2^64 = p');
//   if none is accepted, a fresh seed (G(s) is then a plain normal).
//
// Privacy, exactly. Write N for the number of seeds, c_u for the share of
// seeds whose candidate the computed test puts in u's cap, and A_u = p' + (1
// - p') c_u for the chance a trial accepts. A seed s is sent with probability
//   P(s | u) = (1 / N) [pi_u(s) (1 - r_u) / A_u + r_u],  r_u = (1 - A_u)^T,
// with pi_u(s) in {p', 1}. So for any two inputs
//   P(s | u) / P(s | u') <= (1 / p') (A_u' / A_u) (1 + r) / (1 - r),
// r = (1 - p')^T >= r_u. T = ceil(64 ln 2 / p') makes r <= 2^-64, and
// everything rests on how far A_u can move with u: c_u = q = Q(gamma) for
// ideal candidates and an exact test. Two things move it:
//  - the test in doubles. The test is <G(s), v> >= gamma ||v|| for v = sign
//    x scaled by a power of two (max |v_i| in [1/2, 1), non-finite entries
//    read as 0, e_1 for x = 0), both sums in blocks of 256: every term
//    passes through at most m = 258 + d / 256 roundings, so each side is
//    within gamma_m = m 2^-53 / (1 - m 2^-53) of ||w|| ||v|| (gamma_m ||v||^2
//    for the norm, two more roundings for its root and gamma's product),
//    plus d 2^-1074 for products that underflow. The computed test differs
//    from the exact one only where |<w, u> - gamma| <= E = gamma_m R +
//    |gamma| gamma_(m+3) + d 2^-1073, given ||w|| <= R = sqrt(d) + 12, an
//    event of normal probability at most 2 E / sqrt(2 pi) + e^-72 (Gaussian
//    concentration of the norm).
//  - the finite seed space. The share of the 2^128 seeds in a cap deviates
//    from its mean by at most sqrt((64 d + 65) ln 2 / 2^121) for every one of
//    the at most 2^(64 d) double inputs at once, except with probability
//    2^-64 over a random generator (Hoeffding, counting 2^120 independent
//    candidates to allow seeds to share a generator state up to 2^8-fold,
//    and a union bound).
// With Delta the sum, A moves within p' + (1 - p') (q -+ Delta), and the
// randomizer is eps'-LDP with
//   eps' = ln(1 / p') + ln(A_hi / A_lo) + ln((1 + r) / (1 - r)),
// which ImplementedPrivacy states; p' is a multiple of 2^-64 just above
// e^-eps, raised until eps' <= eps (eps - eps' below 1e-12 at d <= 10^6). The one assumption, as
// in Feldman & Talwar (who state computational DP under a secure PRG): the
// candidates behave as independent ideal normals, the generator as a random
// function of the seed. A seed that did not come from the generator would
// be a different law; SplitMix is not a cryptographic generator, and the
// statement is of this model, stated in the registry's floating_point line.
// The law's checks (tests/vector/seeded_privunit_test.cc) measure the cap
// share and the ratio of an event's probability under u and -u.
//
// Floating point of the report. The sent report is the seed; the decoded
// vector is a function of the seed alone (post-processing), so no low bit
// of it depends on x.
//
// Mean and error. An accepted candidate w has E[<w, u>] = mu' = phi(gamma)
// (1 - p') / A and E||w||^2 = d + gamma mu' (A = q + p' (1 - q)); with p' =
// e^-eps these are PrivUnitG's. sigma' = 1 / mu' makes the report unbiased
// (the unaccepted fallback, with probability below 2^-64, shrinks the mean by
// that share: below a double's rounding of sigma'), and E||R(x) - x||^2 =
// C^2 (sigma'^2 d + sigma' gamma) - ||x||^2, PrivUnitG's error at the same
// gamma (gamma is PrivUnitG's optimum for d and eps).
//
// Cost. A trial generates d normals and one dot product; a report takes 1 /
// A trials on average (3 at eps 2, 12 at eps 4, 300 at eps 8), at most T;
// the decode is one generation. The randomizer refuses eps whose expected
// trials pass 10^5 (eps above about 14.5).
#ifndef FEDLDP_VECTOR_SEEDED_PRIVUNIT_H_
#define FEDLDP_VECTOR_SEEDED_PRIVUNIT_H_

#include <cstdint>

#include "fedldp/random/exact_privunit.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

// A report as sent: the accepted candidate's 128-bit seed.
struct SeedReport {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  friend bool operator==(const SeedReport&, const SeedReport&) = default;
};
inline constexpr std::size_t kSeedReportBytes = 16;
// The 16 bytes as sent (hi then lo, little-endian), and back; nullopt for
// any other length.
std::string SeedBytes(const SeedReport& seed);
std::optional<SeedReport> SeedFromBytes(std::string_view bytes);

class SeededPrivUnitG final : public VectorRandomizer {
 public:
  // eps in (0, 100] with at most 10^5 expected trials, clip finite and > 0,
  // 1 <= dimension <= kMaxVectorDimension.
  static Result<SeededPrivUnitG> Create(std::size_t dimension, double epsilon, double clip);
  // With an off-cap acceptance `p_off` and threshold `gamma` of the caller's
  // choosing, for tests that build a wrong constant; claims `epsilon`.
  static SeededPrivUnitG WithAcceptance(std::size_t dimension, double epsilon, double clip,
                                        double gamma, double p_off);

  std::string name() const override { return "privunitg-seed"; }
  double epsilon() const override { return epsilon_; }
  double SquaredError(double norm) const override;
  double WorstCaseSquaredError() const override { return SquaredError(0); }
  ExactPrivacy ImplementedPrivacy() const override;
  std::optional<CapLaw> Cap() const override;
  // Its trials are a rejection loop: 1 / A on average at every input.
  bool varying_draws() const override { return true; }

  // out = Decode(Encode(x, rng)).
  void Randomize(std::span<const double> x, std::span<double> out, Rng& rng) const override;
  using VectorRandomizer::Randomize;

  // 16 bytes: SeedBytes(Encode(x)); DecodeSent reads them back.
  std::optional<std::string> EncodeSent(std::span<const double> x, Rng& rng) const override {
    return SeedBytes(Encode(x, rng));
  }
  Status DecodeSent(std::string_view bytes, std::span<double> out) const override;
  std::size_t MaxSentBytes() const override { return kSeedReportBytes; }

  // The client's half: the seed it sends for x.
  SeedReport Encode(std::span<const double> x, Rng& rng) const;
  // The server's half: out = C sigma' G(seed), out of dimension() entries.
  void Decode(const SeedReport& seed, std::span<double> out) const;
  // The same for the unit sign v / ||v|| (sign e_1 for v = 0), decoded at
  // scale sigma' `scale`: the step FastProjUnit's seeded form takes in k
  // dimensions.
  SeedReport EncodeUnit(std::span<const double> v, int sign, Rng& rng) const;
  void DecodeUnit(const SeedReport& seed, double scale, std::span<double> out) const;

  double gamma() const { return gamma_; }
  // sigma' = 1 / mu': the report's scale at unit clip.
  double sigma() const { return sigma_; }
  // p': the chance an off-cap candidate is accepted (a multiple of 2^-64).
  double off_cap_acceptance() const { return p_off_; }
  // A = q + p' (1 - q): the chance a trial accepts, for ideal candidates.
  double acceptance() const;
  // The largest number of trials, T = ceil(64 ln 2 / p').
  std::uint64_t max_trials() const { return max_trials_; }
  // Delta: the most the share of seeds in a cap moves from Q(gamma).
  double cap_share_slack() const;

 private:
  SeededPrivUnitG(std::size_t dimension, double epsilon, double clip, double gamma,
                  std::uint64_t off_cap_threshold);
  // <G(seed), v>, generated and summed as the header says.
  double CandidateDot(const SeedReport& seed, std::span<const double> v,
                      std::span<double> chunk) const;
  SeedReport EncodeScaled(std::span<const double> x, const UnitScaling& scaling, int sign,
                          Rng& rng) const;

  double epsilon_;
  double gamma_;
  std::uint64_t off_cap_threshold_;  // t' = p' 2^64
  double p_off_;
  std::uint64_t max_trials_;
  double sigma_;
};

// How its statement holds on real computers (its registry entry's
// floating_point line).
inline constexpr std::string_view kSeededPrivUnitGFloatingPoint =
    "floating point: the report sent is a 16-byte seed and the vector the server decodes is a "
    "function of the seed alone; the cap test in doubles and the finite seed space move the "
    "acceptance rate by a proven amount that the stated eps includes; the statement models "
    "the candidates as ideal normals, a random function of the seed (Feldman & Talwar's "
    "assumption; seeded_privunit.h)";

}  // namespace fedldp

#endif  // FEDLDP_VECTOR_SEEDED_PRIVUNIT_H_
