// The accountant: fedldp.account_run (what `fedldp account run` states),
// its inverse, and one shuffled round's numerical bound.
#include <pybind11/stl.h>

#include <cmath>
#include <limits>

#include "common.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/privacy/composition.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp::python {
namespace {

// {"epsilon": e, "delta": d}; None where nothing was stated (eps 0 or inf
// with delta 0, as RunPrivacy leaves a line it did not compute).
py::object Guarantee(const DpGuarantee& g) {
  if (!std::isfinite(g.epsilon) || (g.epsilon == 0 && g.delta == 0)) return py::none();
  py::dict d;
  d["epsilon"] = g.epsilon;
  d["delta"] = g.delta;
  return d;
}

// rounds as Python gave it: an int within kReportRounds (base/limits.h).
RunPrivacyConfig MakeConfig(double local_epsilon, const py::object& rounds, bool shuffle,
                            std::uint64_t reports_per_round, double delta, double local_delta,
                            double sampling_rate, double report_deviation = 0) {
  RunPrivacyConfig c;
  c.local_epsilon = local_epsilon;
  c.local_delta = local_delta;
  c.rounds = static_cast<std::uint64_t>(CountArg(rounds, kReportRounds));
  c.shuffle = shuffle;
  c.reports_per_round = reports_per_round;
  c.delta = delta;
  c.sampling_rate = sampling_rate;
  c.report_deviation = report_deviation;
  return c;
}

}  // namespace

py::dict RunPrivacyDict(const RunPrivacy& p, const std::string& mechanism) {
  const std::string floating_point = Take(FloatingPointStatementFor(mechanism));
  py::dict d;
  d["total"] = Guarantee(p.total);
  d["rule"] = p.rule;
  const std::string warning = MeaninglessWarning(p.total);
  d["warning"] = warning.empty() ? py::none() : py::object(py::str(warning));
  d["local"] = Guarantee(p.local);
  d["local_reports"] = p.local_reports;
  d["local_basic"] = Guarantee(p.local_basic);
  d["local_optimal"] = Guarantee(p.local_optimal);
  d["shuffled"] = p.shuffled;
  if (p.shuffled) {
    py::dict round;
    round["epsilon"] = p.round.epsilon_upper;
    round["epsilon_lower"] = p.round.epsilon_lower;
    round["delta"] = p.round.delta;
    round["closed_form"] = p.closed_form;
    d["round"] = round;
  } else {
    d["round"] = py::none();
  }
  d["subsampled"] = p.config.sampled() ? Guarantee(p.subsampled) : py::none();
  d["total_points"] = Guarantee(p.total_points);
  d["total_advanced"] = Guarantee(p.total_advanced);
  d["total_pld"] = Guarantee(p.total_pld);
  d["report_deviation"] = p.config.report_deviation;
  d["allowance"] = p.allowance;
  d["arguments"] = AccountRunArguments(p.config, mechanism);
  d["floating_point"] = floating_point;
  d["description"] = DescribeRunPrivacy(p, floating_point);
  return d;
}

void BindAccounting(py::module_& m) {
  m.def(
      "account_run",
      [](double local_epsilon, const py::object& rounds, bool shuffle,
         std::uint64_t reports_per_round, double delta, double local_delta, double sampling_rate,
         const std::string& mechanism, double report_deviation) {
        const auto c = MakeConfig(local_epsilon, rounds, shuffle, reports_per_round, delta,
                                  local_delta, sampling_rate, report_deviation);
        Check(c.Validate());
        Take(FloatingPointStatementFor(mechanism));  // an unknown name, before the work
        return RunPrivacyDict(Take(WithoutGil([&] { return AccountRun(c); })), mechanism);
      },
      py::arg("local_epsilon"), py::arg("rounds") = 1, py::arg("shuffle") = false,
      py::arg("reports_per_round") = 0, py::arg("delta") = 1e-6, py::arg("local_delta") = 0.0,
      py::arg("sampling_rate") = 1.0, py::arg("mechanism") = "", py::arg("report_deviation") = 0.0,
      R"doc(
A client's privacy over a run of `rounds` reports, each (local_epsilon,
local_delta)-LDP, as `fedldp account run` states it: a dict whose "total" is
the claim {"epsilon", "delta"} per client (the smaller of the proven totals;
"rule" says which), with the local lines, the shuffled round's bound, the
other totals (None where not computed), "arguments" (the CLI options that
state the same), "floating_point" (whether eps0 holds of the program in
floating point: for `mechanism`, a FedSel variant, value mechanism or vector
randomizer, or for every one when it is empty) and "description" (the CLI's text). With
shuffle=True each round's reports_per_round reports are shuffled together;
sampling_rate < 1 draws each round's clients in secret from the server.
report_deviation is a report's total variation from the ideal law (PrivUnitG's
and FastProjUnit's proven allowance, VectorRandomizer.deviation): every delta
then includes (1 + e^eps) n times it for each step of n reports it composes,
the total's as "allowance".)doc");
  m.def(
      "local_epsilon_for_central",
      [](double central_epsilon, const py::object& rounds, std::uint64_t reports_per_round,
         double delta, double sampling_rate) {
        auto c = MakeConfig(1.0, rounds, true, reports_per_round, delta, 0, sampling_rate);
        Check(c.Validate());
        return Take(WithoutGil([&] { return LocalEpsilonForCentral(c, central_epsilon); }));
      },
      py::arg("central_epsilon"), py::arg("rounds"), py::arg("reports_per_round"),
      py::arg("delta") = 1e-6, py::arg("sampling_rate") = 1.0,
      "The largest eps0 per report whose shuffled run stays within (central_epsilon, delta) "
      "per client in total.");
  m.def(
      "shuffle_epsilon",
      [](std::uint64_t n, double local_epsilon, double delta) {
        const auto b =
            Take(WithoutGil([&] { return NumericalShuffleEpsilon(n, local_epsilon, delta); }));
        py::dict d;
        d["epsilon"] = b.epsilon_upper;
        d["epsilon_lower"] = b.epsilon_lower;
        d["delta"] = b.delta;
        return d;
      },
      py::arg("n"), py::arg("local_epsilon"), py::arg("delta"),
      "One shuffled round of n local_epsilon-LDP reports: the proven (epsilon, delta) "
      "(Feldman, McMillan & Talwar's numerical bound), with the least epsilon the analysis "
      "could prove (epsilon_lower).");
}

}  // namespace fedldp::python
