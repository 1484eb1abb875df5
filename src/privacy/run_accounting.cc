#include "fedldp/privacy/run_accounting.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "fedldp/base/limits.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/shuffle_pld.h"

namespace fedldp {

namespace {
// The most reports an allocated epoch is stated for (far past the shuffle
// bound's reach, which refuses first; here to keep t n in range).
constexpr std::uint64_t kMaxAllocatedReports = 1'000'000'000'000;
}  // namespace

Status RunPrivacyConfig::Validate() const {
  std::ostringstream e;
  if (!(std::isfinite(local_epsilon) && local_epsilon > 0)) {
    e << "the local epsilon must be a finite number > 0, got " << local_epsilon;
  } else if (!(local_delta >= 0 && local_delta < 1)) {
    e << "the local delta must be in [0, 1), got " << local_delta;
  } else if (Status bad = CheckCount(kReportRounds, rounds); !bad.ok()) {
    e << bad.error();
  } else if (Status bad = CheckDelta(delta, "the total delta"); !bad.ok()) {
    e << bad.error();
  } else if (shuffle && reports_per_round < 1) {
    e << "with the shuffler, the reports per round must be at least 1";
  } else if (!shuffle && reports_per_round != 0) {
    e << "reports per round apply with the shuffler only";
  } else if (!(sampling_rate > 0 && sampling_rate <= 1)) {
    e << "the sampling rate must be in (0, 1], got " << sampling_rate;
  } else if (poisson && !sampled()) {
    e << "Poisson participation draws each client with the sampling rate: give one below 1";
  } else if (allocation && (!sampled() || poisson)) {
    e << "random allocation puts each client in one of every 1 / q rounds: give a sampling rate "
         "below 1, without Poisson participation";
  } else if (allocation &&
             std::abs(static_cast<double>(rounds_per_epoch()) * sampling_rate - 1) > 1e-9) {
    e << "random allocation needs a whole number of rounds per epoch: 1 / q = "
      << 1 / sampling_rate;
  } else if (allocation && reports_per_round > kMaxAllocatedReports / rounds_per_epoch()) {
    e << "an allocated epoch of " << rounds_per_epoch() << " rounds of " << reports_per_round
      << " reports is beyond " << kMaxAllocatedReports << " reports";
  } else if (sampled() && !shuffle) {
    e << "sampling amplifies nothing without the shuffler (the server sees who reports): "
         "give the reports one client sends as the rounds";
  } else if (!(report_deviation >= 0 && report_deviation < 1)) {
    e << "the report deviation (a total variation) must be in [0, 1), got " << report_deviation;
  } else if (shuffle && local_delta > 0) {
    e << "the numerical shuffle bound is proven for pure eps0-LDP randomizers; a report with "
         "delta0 > 0 (the Gaussian) gets no amplification here";
  } else {
    return {};
  }
  return Error{e.str()};
}

std::uint64_t RunPrivacyConfig::rounds_per_epoch() const {
  return sampled() ? static_cast<std::uint64_t>(std::llround(1 / sampling_rate)) : 1;
}

RunPrivacyConfig AllocatedEpochs(const RunPrivacyConfig& c) {
  RunPrivacyConfig e = c;
  const std::uint64_t t = c.rounds_per_epoch();
  e.rounds = (c.rounds + t - 1) / t;
  e.reports_per_round = c.reports_per_round * t;
  e.sampling_rate = 1;
  e.allocation = false;
  return e;
}

namespace {

// A round's share of the leftover mass (infinite loss) its windows may
// leave out (ComposeRoundPlds says why a share).
double RoundTolerance(const RunPrivacyConfig& c) {
  return 1e-3 * c.delta / static_cast<double>(c.rounds);
}

// How the rounds' sampling enters the rule's name.
std::string SamplingRule(const RunPrivacyConfig& c) {
  if (c.poisson) return ", Poisson participation (a binomial mixture over the count shown)";
  return c.sampled() ? ", sampled without replacement (Dong-Roth-Su)" : "";
}

// Shuffled rounds: the whole curve of each round (a sampled one's C_q,
// SampledRoundPld), composed (total_pld), the claim when it is tighter.
// Trimmed tails and the windows' leftovers cost at most 2e-3 delta, counted in. A round's leftover
// mass (infinite loss) adds up over the rounds, so each round may leave out only its share: with
// 1e-3 delta per round, 512 rounds had spent the whole delta on it and the PLD refused what a
// larger eps0 passed.
void ComposeRoundPlds(RunPrivacy& p) {
  const RunPrivacyConfig& c = p.config;
  constexpr double kGrid = 1e-3;
  const std::optional<Pld> run =
      ShuffledRunPld(c.reports_per_round, c.local_epsilon, c.sampling_rate, c.rounds, kGrid,
                     RoundTolerance(c), 1e-3 * c.delta, c.reduction, c.poisson);
  if (!run) return;
  p.total_pld.epsilon = PldEpsilon(*run, c.delta);
  if (p.total_pld.epsilon < p.total.epsilon) {
    p.total = p.total_pld;
    p.rule = "numerical shuffle bound (" + ReductionName(c.reduction) + ")" + SamplingRule(c) +
             ", its privacy-loss distribution composed exactly over rounds";
  }
}

// Poisson participation's per-round point, read off its round's PLD at the
// round's share of delta (the point-wise rule's input, as Balle-Barthe-
// Gaboardi's amplified point is for rounds of m).
Result<DpGuarantee> PoissonRoundPoint(const RunPrivacyConfig& c, double delta) {
  auto round = ShuffledRoundOfRunPld(c.reports_per_round, c.local_epsilon, c.sampling_rate, 1e-3,
                                     RoundTolerance(c), c.reduction, true);
  if (!round.ok()) return Error{round.error()};
  return DpGuarantee{PldEpsilon(*round, delta), delta};
}

// A round's share of delta that gives no shuffle bound, said as what the
// user gave (the total delta and the rounds): before, "delta must be in
// [1e-12, 1) ..., not 5e-13" named a delta nobody gave.
Error NoRoundBound(const RunPrivacyConfig& c, double delta_round, const std::string& why) {
  std::ostringstream e;
  e << "each round's share of delta, delta / (2 x rounds" << (c.sampled() ? " x sampling rate" : "")
    << ") = " << delta_round << ", gives no shuffle bound: " << why
    << " (give a larger delta or fewer rounds)";
  return Error{e.str()};
}

// p.subsampled: one shuffled round's point (p.round at delta_round) as the
// rounds compose it, amplified where they are sampled; what the rule's name
// adds for that, or why there is no point.
Result<std::string> SetRoundPoint(RunPrivacy& p, double delta_round) {
  const RunPrivacyConfig& c = p.config;
  const double q = c.sampling_rate;
  p.subsampled = {p.round.epsilon_upper, delta_round};
  if (c.poisson) {
    auto point = PoissonRoundPoint(c, q * delta_round);
    if (!point.ok()) return NoRoundBound(c, delta_round, point.error());
    p.subsampled = *point;
    return std::string(", Poisson participation (its round's privacy-loss distribution)");
  }
  if (!c.sampled()) return std::string();
  p.subsampled = {std::log1p(q * std::expm1(p.round.epsilon_upper)), q * delta_round};
  return std::string(", amplified by sampling (Balle-Barthe-Gaboardi)");
}

// The ideal mechanism's run: every report drawn from its law exactly.
Result<RunPrivacy> AccountIdealRun(const RunPrivacyConfig& c) {
  RunPrivacy p;
  p.config = c;
  const double r = static_cast<double>(c.rounds);
  // Reports one client sends: every round, or q R in expectation when sampled.
  const std::uint64_t reports =
      c.sampled() ? std::max<std::uint64_t>(
                        1, static_cast<std::uint64_t>(std::ceil(c.sampling_rate * r * (1 - 1e-12))))
                  : c.rounds;
  p.local_reports = reports;
  const double rr = static_cast<double>(reports);
  p.local = {c.local_epsilon, c.local_delta};
  p.local_basic = {rr * c.local_epsilon, -std::expm1(rr * std::log1p(-c.local_delta))};
  auto optimal = OptimalComposition(c.local_epsilon, c.local_delta, reports, c.delta);
  p.local_optimal = optimal.ok() ? optimal.value() : p.local_basic;
  if (!c.shuffle) {
    // Basic composition holds with delta 0: prefer it unless optimal saves over 0.01 %.
    const bool basic =
        !optimal.ok() || p.local_basic.epsilon <= p.local_optimal.epsilon * (1 + 1e-4);
    p.total = basic ? p.local_basic : p.local_optimal;
    p.rule = basic ? "basic composition" : "optimal composition (Kairouz-Oh-Viswanath)";
    p.total_advanced = AdvancedComposition(c.local_epsilon, c.local_delta, r, c.delta / 2);
    return p;
  }
  p.shuffled = true;
  const double q = c.sampling_rate;
  const double delta_round = c.delta / (2 * r * q);
  auto round = ShuffledReportsBound(c.reports_per_round, c.local_epsilon, delta_round, c.reduction);
  if (!round.ok()) return NoRoundBound(c, delta_round, round.error());
  p.round = round->bound;
  p.closed_form = round->closed_form;
  std::string rule = p.closed_form
                         ? "closed-form shuffle bound per round (Feldman-McMillan-Talwar Thm 3.1)"
                         : "numerical shuffle bound per round (" + ReductionName(c.reduction) + ")";
  auto sampling = SetRoundPoint(p, delta_round);
  if (!sampling.ok()) return Error{sampling.error()};
  rule += *sampling;
  auto total = OptimalComposition(p.subsampled.epsilon, p.subsampled.delta, c.rounds, c.delta);
  if (!total.ok()) return Error{total.error()};
  p.total = total.value();
  p.total_points = p.total;
  p.rule = rule + ", optimal composition over rounds (Kairouz-Oh-Viswanath)";
  p.total_advanced = AdvancedComposition(p.subsampled.epsilon, p.subsampled.delta, r, c.delta / 2);
  p.total_pld = {std::numeric_limits<double>::infinity(), c.delta};
  if (!p.closed_form) ComposeRoundPlds(p);
  // Shuffling never makes a report less private than it is locally (when
  // the number of reports is fixed; a sampled client's is not).
  if (c.sampled()) return p;
  if (p.local_basic.epsilon <= p.total.epsilon) {  // as private, with delta 0 (eps0 past reach)
    p.total = p.local_basic;
    p.rule = "basic composition of the local reports (the shuffler adds nothing here)";
  } else if (p.local_optimal.epsilon < p.total.epsilon && optimal.ok()) {
    p.total = p.local_optimal;
    p.rule = "optimal composition of the local reports (the shuffler adds nothing here)";
  }
  return p;
}

// Each delta raised by what tau costs it (see the header); a delta is at
// most 1. A statement composed of per-report (or per-round) guarantees
// takes each step's allowance, R times: the compositions add per-step
// deltas at most linearly. A round's shuffled bound, and the privacy-loss
// distribution's total, take the coupling of all the reports they cover.
void AddFloatingPointAllowance(RunPrivacy& p) {
  const RunPrivacyConfig& c = p.config;
  const double tau = c.report_deviation;
  if (tau == 0) return;
  const auto coupling = [tau](double epsilon, double reports) {
    return (1 + std::exp(epsilon)) * reports * tau;
  };
  const auto raise = [](DpGuarantee& g, double added) {
    g.delta = std::min(1.0, g.delta + added);
    return added;
  };
  // The claim is the local composition when the shuffler adds nothing.
  const auto same = [](const DpGuarantee& a, const DpGuarantee& b) {
    return a.epsilon == b.epsilon && a.delta == b.delta;
  };
  const bool own_total =
      !p.shuffled || same(p.total, p.local_optimal) || same(p.total, p.local_basic);
  const double own = static_cast<double>(p.local_reports) * coupling(c.local_epsilon, 1);
  raise(p.local, coupling(c.local_epsilon, 1));
  raise(p.local_basic, own);
  raise(p.local_optimal, own);
  if (!p.shuffled) {
    raise(p.total_advanced, own);
    p.allowance = raise(p.total, own);
    return;
  }
  const double n = static_cast<double>(c.reports_per_round), rounds = static_cast<double>(c.rounds);
  p.round.delta = std::min(1.0, p.round.delta + coupling(p.round.epsilon_upper, n));
  const double per_round = raise(p.subsampled, coupling(p.subsampled.epsilon, n));
  raise(p.total_points, rounds * per_round);
  raise(p.total_advanced, rounds * per_round);
  if (std::isfinite(p.total_pld.epsilon))
    raise(p.total_pld, coupling(p.total_pld.epsilon, rounds * n));
  const bool from_points = p.total.epsilon == p.total_points.epsilon;
  p.allowance = raise(p.total, own_total     ? own
                               : from_points ? rounds * per_round
                                             : coupling(p.total.epsilon, rounds * n));
}

}  // namespace

Result<RunPrivacy> AccountRun(const RunPrivacyConfig& c) {
  if (const Status s = c.Validate(); !s.ok()) return Error{s.error()};
  // An allocated run is stated as its epochs, each one shuffled round.
  const RunPrivacyConfig stated = c.allocation ? AllocatedEpochs(c) : c;
  auto ideal = AccountIdealRun(stated);
  if (!ideal.ok()) return ideal;
  RunPrivacy p = std::move(ideal).value();
  AddFloatingPointAllowance(p);
  if (c.allocation) {
    p.config = c;
    p.epochs = stated.rounds;
    p.epoch_reports = stated.reports_per_round;
    p.rule = "random allocation (each epoch of " + std::to_string(c.rounds_per_epoch()) +
             " rounds, its order secret, as one shuffle of its " + std::to_string(p.epoch_reports) +
             " reports), " + p.rule;
  }
  return p;
}

namespace {
Result<double> SearchLocalEpsilon(RunPrivacyConfig config, double central_epsilon);
}  // namespace

Result<double> LocalEpsilonForCentral(RunPrivacyConfig config, double central_epsilon) {
  if (!config.shuffle) return Error{"a central target needs the shuffler"};
  return LocalEpsilonForTotal(config, central_epsilon);
}

Result<double> LocalEpsilonForTotal(RunPrivacyConfig config, double central_epsilon) {
  if (!(central_epsilon > 0 && std::isfinite(central_epsilon))) {
    return Error{"the target epsilon must be a finite number > 0"};
  }
  // A pure function of its inputs that tuning asks for again and again
  // (every grid point of every fold): remembered, bounded, thread-safe. The
  // key holds every input the total depends on (the bound too: a run asking
  // FMT's must not get the variation-ratio's eps0).
  using Key = std::tuple<std::uint64_t, std::uint64_t, double, double, double, double, bool, int,
                         bool, bool, double>;
  static std::mutex mutex;
  static std::map<Key, double> memo;
  const Key key{config.rounds,          config.reports_per_round,
                config.delta,           config.sampling_rate,
                config.local_delta,     central_epsilon,
                config.shuffle,         static_cast<int>(config.reduction),
                config.poisson,         config.allocation,
                config.report_deviation};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  auto found = SearchLocalEpsilon(config, central_epsilon);
  if (found.ok()) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (memo.size() > 4096) memo.clear();
    memo.emplace(key, *found);
  }
  return found;
}

namespace {

Result<double> SearchLocalEpsilon(RunPrivacyConfig config, double central_epsilon) {
  // A run meets the target when its total is within central_epsilon and its
  // delta within the target's, but for a negligible floating-point allowance
  // (AddFloatingPointAllowance adds it on top; at eps0 of 50 and more it can
  // pass delta itself, and a run there was calibrated to (90, 1)).
  const double delta = config.delta;
  const auto meets = [&](double eps0) -> Result<bool> {
    config.local_epsilon = eps0;
    auto p = AccountRun(config);
    if (!p.ok()) return Error{p.error()};
    return p->total.epsilon <= central_epsilon && p->total.delta <= delta * (1 + kAllowanceShare);
  };
  // The total grows with eps0: bisect on log eps0. R eps0 = target meets
  // the epsilon by basic composition (the shuffler never makes a report
  // less private; each sampled round is at most eps0 too), so the search
  // starts there, checked for the delta. Without the shuffler one report
  // costs its eps0: the target bounds it; with it, 30 does.
  const double top = config.shuffle ? 30 : central_epsilon;
  double lo = std::max(1e-3, std::min(central_epsilon / static_cast<double>(config.rounds), top)),
         hi = top;
  FEDLDP_ASSIGN_OR_RETURN(const bool lo_meets, meets(lo));
  if (!lo_meets) {
    hi = lo;
    lo = 1e-3;
    FEDLDP_ASSIGN_OR_RETURN(const bool least_meets, meets(lo));
    if (hi <= lo || !least_meets) {
      std::ostringstream why;
      why << "no local epsilon >= 0.001 keeps the run within central (" << central_epsilon << ", "
          << delta << ")";
      return Error{why.str()};
    }
  } else {
    if (lo >= hi) return lo;
    FEDLDP_ASSIGN_OR_RETURN(const bool top_meets, meets(hi));
    if (top_meets) return hi;
  }
  while (hi / lo > 1 + 1e-4) {
    const double mid = std::sqrt(lo * hi);
    FEDLDP_ASSIGN_OR_RETURN(const bool mid_meets, meets(mid));
    (mid_meets ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

std::string AccountRunArguments(const RunPrivacyConfig& c, std::string_view mechanism) {
  // The shortest text that reads back as each value: the same figures.
  const auto exact = [](double value) {
    char text[32];
    return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
  };
  std::ostringstream s;
  s << "--local-epsilon " << exact(c.local_epsilon);
  if (c.local_delta > 0) s << " --local-delta " << exact(c.local_delta);
  s << " --rounds " << c.rounds;
  if (c.shuffle) s << " --shuffle --reports-per-round " << c.reports_per_round;
  if (c.sampled()) s << " --sampling-rate " << exact(c.sampling_rate);
  if (c.poisson) s << " --poisson";
  if (c.allocation) s << " --allocation";
  if (c.shuffle && c.reduction != kTightestShuffleBound) {
    s << " --bound " << ShuffleReductionKey(c.reduction);
  }
  s << " --delta " << exact(c.delta);
  if (c.report_deviation > 0) s << " --report-deviation " << exact(c.report_deviation);
  if (!mechanism.empty()) s << " --mechanism " << mechanism;
  return s.str();
}

std::string MeaninglessWarning(const DpGuarantee& g) {
  if (!(g.epsilon > kMeaningfulEpsilon)) return "";
  std::ostringstream s;
  s.precision(6);
  s << "warning: eps " << g.epsilon << " bounds a likelihood ratio of e^" << g.epsilon
    << ", beyond e^" << kMeaningfulEpsilon
    << " = 22,026: stated as proven, but not a meaningful protection";
  return s.str();
}

namespace {

// The lines of a shuffled run's rounds (or allocated epochs).
void DescribeShuffledRounds(const RunPrivacy& p, std::ostringstream& s) {
  const auto& c = p.config;
  if (c.allocation) {
    s << "  per epoch of " << c.rounds_per_epoch() << " rounds of " << c.reports_per_round
      << " reports, its order drawn in secret: as one shuffle of " << p.epoch_reports
      << " reports, (" << p.round.epsilon_upper << ", " << p.round.delta << ")-DP; " << p.epochs
      << (p.epochs == 1 ? " epoch composes\n" : " epochs compose\n");
    return;
  }
  s << "  per round, shuffled with " << c.reports_per_round << " reports: ("
    << p.round.epsilon_upper << ", " << p.round.delta << ")-DP (";
  if (p.closed_form) {
    s << "closed form: the exact sum is out of reach at this n)\n";
  } else {
    s << "numerical bound, eps in [" << p.round.epsilon_lower << ", " << p.round.epsilon_upper
      << "])\n";
  }
  if (c.sampled()) {
    s << "  per round, "
      << (c.poisson ? "each client drawn with probability " : "amplified by sampling ")
      << c.sampling_rate << (c.poisson ? " (Poisson, the count shown): (" : " of the clients: (")
      << p.subsampled.epsilon << ", " << p.subsampled.delta << ")-DP; " << c.rounds
      << " rounds compose\n";
  }
}

}  // namespace

std::string DescribeRunPrivacy(const RunPrivacy& p, std::string_view floating_point) {
  const auto& c = p.config;
  std::ostringstream s;
  s.precision(6);
  s << "per client over the run: (" << p.total.epsilon << ", " << p.total.delta << ")-DP ("
    << p.rule << ")\n";
  if (const std::string w = MeaninglessWarning(p.total); !w.empty()) s << "  " << w << "\n";
  s << "  local: each report (" << p.local.epsilon << ", " << p.local.delta << ")-LDP; ";
  if (c.allocation) {
    s << "a client in one round of every " << c.rounds_per_epoch() << " of " << c.rounds
      << " rounds sends at most " << p.local_reports;
  } else if (c.sampled()) {
    s << "a client sampled in " << c.sampling_rate << " of " << c.rounds << " rounds sends about "
      << p.local_reports;
  } else {
    s << c.rounds;
  }
  const bool one = c.allocation ? p.local_reports == 1 : !c.sampled() && c.rounds == 1;
  s << (one ? " report" : " reports") << " -> (" << p.local_basic.epsilon << ", "
    << p.local_basic.delta << ") basic, (" << p.local_optimal.epsilon << ", "
    << p.local_optimal.delta << ") optimal composition\n";
  if (p.shuffled) DescribeShuffledRounds(p, s);
  if (p.shuffled && std::isfinite(p.total_pld.epsilon)) {
    const char* steps = c.allocation ? "epochs" : "rounds";
    s << "  composed: privacy-loss distribution over " << steps << " (" << p.total_pld.epsilon
      << ", " << p.total_pld.delta << "); optimal composition of the per-"
      << (c.allocation ? "epoch" : "round") << " points (" << p.total_points.epsilon << ", "
      << p.total_points.delta << ")\n";
  }
  s << "  advanced composition on the same figures: (" << p.total_advanced.epsilon << ", "
    << p.total_advanced.delta << ")\n";
  if (c.report_deviation > 0) {
    s << "  floating-point allowance: each report within total variation " << c.report_deviation
      << " of the ideal law; every delta above includes what that costs, (1 + e^eps) n times "
         "it for a step of n reports at eps, added over the steps composed (the total's: "
      << p.allowance << ")\n";
  }
  if (!floating_point.empty()) s << "  " << floating_point << "\n";
  return s.str();
}

}  // namespace fedldp
