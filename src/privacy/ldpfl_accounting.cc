#include "fedldp/privacy/ldpfl_accounting.h"

#include <cmath>
#include <sstream>

namespace fedldp {

ShuffleBound FeldmanMcMillanTalwar(double eps0, double n, double delta) {
  ShuffleBound b;
  b.delta = delta;
  b.min_reports = 16 * std::log(2 / delta) * std::exp(eps0);
  if (!(n > 0 && delta > 0 && delta < 1 && eps0 > 0)) return b;
  if (eps0 > std::log(n / (16 * std::log(2 / delta)))) return b;
  const double e = std::exp(eps0);
  const double a = 8 * std::sqrt(e * std::log(4 / delta)) / std::sqrt(n) + 8 * e / n;
  b.applies = true;
  b.epsilon = std::log1p((e - 1) / (e + 1) * a);
  return b;
}

Result<ShuffledReports> ShuffledReportsBound(std::uint64_t n, double eps0, double delta,
                                             ShuffleReduction reduction) {
  auto numerical = NumericalShuffleEpsilon(n, eps0, delta, reduction);
  if (numerical.ok()) return ShuffledReports{numerical.value(), false};
  // Too many terms for the exact sum: there FMT's closed form holds (for
  // any eps0-LDP randomizer, whichever pair was asked for).
  const auto closed = FeldmanMcMillanTalwar(eps0, static_cast<double>(n), delta);
  if (!closed.applies) return Error{numerical.error()};
  return ShuffledReports{{closed.epsilon, closed.epsilon, delta}, true};
}

LdpFlPrivacy AccountLdpFl(double epsilon, std::size_t weights, std::size_t rounds_joined,
                          std::size_t reports_per_round, double delta_total) {
  LdpFlPrivacy p;
  p.per_weight_epsilon = epsilon;
  p.weights = weights;
  p.rounds_joined = rounds_joined;
  p.reports_per_round = reports_per_round;
  p.per_round_ldp = static_cast<double>(weights) * epsilon;
  p.plain_composition = static_cast<double>(rounds_joined) * p.per_round_ldp;
  p.delta_total = delta_total;
  const std::uint64_t k = static_cast<std::uint64_t>(weights) * rounds_joined;
  const double column_delta = delta_total / (2 * static_cast<double>(k));
  p.per_column =
      FeldmanMcMillanTalwar(epsilon, static_cast<double>(reports_per_round), column_delta);
  auto column = ShuffledReportsBound(reports_per_round, epsilon, column_delta);
  if (!column.ok()) {
    p.why_not = column.error();
    return p;
  }
  if (!column->closed_form) p.per_column_numerical = column->bound;
  const double eps_c = column->bound.epsilon_upper;
  p.column_rule = column->closed_form ? "closed form" : "numerical";
  p.column_epsilon = eps_c;
  p.shuffle_applies = true;
  p.shuffled = AdvancedComposition(eps_c, column_delta, static_cast<double>(k), delta_total / 2);
  p.shuffled_rule = "advanced";
  if (k <= 1'000'000) {
    auto optimal = OptimalComposition(eps_c, column_delta, k, delta_total);
    if (optimal.ok() && optimal->epsilon <= p.shuffled.epsilon) {
      p.shuffled = optimal.value();
      p.shuffled_rule = "optimal";
    }
  }
  // Never claim more than plain composition, which needs no shuffler.
  if (p.shuffled.epsilon > p.plain_composition) {
    p.shuffled = {p.plain_composition, 0};
    p.shuffled_rule = "plain (the shuffle bound adds nothing)";
  }
  return p;
}

std::string DescribeLdpFlPrivacy(const LdpFlPrivacy& p) {
  std::ostringstream s;
  s << "privacy: eps = " << p.per_weight_epsilon
    << " per weight (two-point mechanism, what the paper states)\n"
    << "  plain composition: " << p.weights << " weights -> " << p.per_round_ldp
    << "-LDP per round; at most " << p.rounds_joined << " rounds joined -> " << p.plain_composition
    << "-LDP per client\n";
  s << "  shuffle model (Feldman-McMillan-Talwar FOCS 2021, n = " << p.reports_per_round
    << " reports per parameter per round, delta = " << p.delta_total << " in all): ";
  if (p.shuffle_applies) {
    s << "(" << p.shuffled.epsilon << ", " << p.shuffled.delta << ")-DP per client over all "
      << p.weights << " parameters and " << p.rounds_joined << " rounds (" << p.shuffled_rule
      << " composition of " << p.column_epsilon << " per parameter and round, " << p.column_rule
      << " bound); "
      << "their closed form (Thm 3.1) "
      << (p.per_column.applies
              ? "gives " + std::to_string(p.per_column.epsilon) + " per parameter and round"
              : "would need n >= " +
                    std::to_string(static_cast<long long>(std::ceil(p.per_column.min_reports))))
      << "\n";
  } else {
    s << "not computed (" << p.why_not << "); nothing beyond plain composition is claimed\n";
  }
  return s.str();
}

}  // namespace fedldp
