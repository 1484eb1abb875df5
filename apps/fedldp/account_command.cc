// fedldp account: what a configuration costs in privacy, before anything runs.
#include <charconv>
#include <cmath>
#include <ostream>
#include <string>

#include "cli.h"
#include "commands.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp::cli {

namespace {

// The shortest text that reads back as `value`.
std::string Shortest(double value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

// To 6 decimals, up or down: a rounded claim stays sound.
std::string Up(double value) { return Shortest(std::ceil(value * 1e6) / 1e6); }
std::string Down(double value) { return Shortest(std::floor(value * 1e6) / 1e6); }

}  // namespace

void SetupAccountShuffle(CLI::App& app, AccountShuffleOptions& o) {
  app.description(
      "The central (eps, delta) of N reports of an eps0-LDP randomizer, shuffled: the numerical\n"
      "bound of Feldman, McMillan & Talwar (FOCS 2021, Appendix E), bracketed (the upper end\n"
      "is the claim), beside their closed form (Theorem 3.1) where it applies.");
  app.add_option("--local-epsilon", o.local_epsilon, "eps0 of each report")->required();
  app.add_option("--reports", o.reports, "N: reports shuffled together")->required();
  app.add_option("--delta", o.delta, "Target delta, in [1e-12, 1)")->required();
  app.add_flag("--json", o.json, "One JSON object instead of text");
}

int RunAccountShuffle(const AccountShuffleOptions& o, std::ostream& out, std::ostream&) {
  auto bound = NumericalShuffleEpsilon(o.reports, o.local_epsilon, o.delta);
  if (!bound.ok()) throw UsageError(bound.error());
  const auto closed =
      FeldmanMcMillanTalwar(o.local_epsilon, static_cast<double>(o.reports), o.delta);
  if (o.json) {
    out << "{\"local_epsilon\":" << Shortest(o.local_epsilon) << ",\"reports\":" << o.reports
        << ",\"delta\":" << Shortest(o.delta)
        << ",\"epsilon_lower\":" << Shortest(bound->epsilon_lower)
        << ",\"epsilon_upper\":" << Shortest(bound->epsilon_upper)
        << ",\"closed_form\":" << (closed.applies ? Shortest(closed.epsilon) : std::string("null"))
        << "}\n";
    return 0;
  }
  out << o.reports << " reports of a " << Shortest(o.local_epsilon)
      << "-LDP randomizer, shuffled, are (" << Up(bound->epsilon_upper) << ", " << Shortest(o.delta)
      << ")-DP\n"
      << "  numerical bound (Feldman, McMillan & Talwar, Appendix E): eps in ["
      << Down(bound->epsilon_lower) << ", " << Up(bound->epsilon_upper)
      << "]; the upper end is the claim\n"
      << "  closed form (their Theorem 3.1): "
      << (closed.applies
              ? "eps <= " + Up(closed.epsilon)
              : "does not apply (needs N >= " + Shortest(std::ceil(closed.min_reports)) + ")")
      << "\n";
  return 0;
}

}  // namespace fedldp::cli
