// The accountant: fedldp.account_run (what `fedldp account run` states),
// its inverse, and one shuffled round's numerical bound.
#include <pybind11/stl.h>

#include <cmath>
#include <limits>

#include "common.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/privacy/accountant.h"
#include "fedldp/privacy/central_participation.h"
#include "fedldp/privacy/composition.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/privacy/shuffle_numerical.h"
#include "fedldp/sim/records.h"

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
                            double sampling_rate, double report_deviation = 0, bool poisson = false,
                            bool allocation = false) {
  RunPrivacyConfig c;
  c.local_epsilon = local_epsilon;
  c.local_delta = local_delta;
  c.rounds = static_cast<std::uint64_t>(CountArg(rounds, kReportRounds));
  c.shuffle = shuffle;
  c.reports_per_round = reports_per_round;
  c.delta = delta;
  c.sampling_rate = sampling_rate;
  c.report_deviation = report_deviation;
  c.poisson = poisson;
  c.allocation = allocation;
  return c;
}

py::dict StepDict(const AccountedGroup& g) {
  py::dict d;
  d["local_epsilon"] = g.step.local_epsilon;
  d["local_delta"] = g.step.local_delta;
  d["reports_per_round"] = g.step.reports_per_round;
  d["sampling_rate"] = g.step.sampling_rate;
  d["poisson"] = g.step.poisson;
  d["report_deviation"] = g.step.report_deviation;
  d["times"] = g.times;
  return d;
}

py::list StepList(const Accountant& a) {
  py::list steps;
  for (const AccountedGroup& g : a.groups()) steps.append(StepDict(g));
  return steps;
}

// One layout whatever was recorded: the claim, its rule and warning, the
// kinds of step; "run" is account_run's dict when one kind was recorded.
py::dict AccountedDict(const Accountant& a, const AccountedTotal& t) {
  py::dict d;
  d["total"] = Guarantee(t.total);
  d["rule"] = t.rule;
  const std::string warning = MeaninglessWarning(t.total);
  d["warning"] = warning.empty() ? py::none() : py::object(py::str(warning));
  d["allowance"] = t.allowance;
  d["steps"] = StepList(a);
  d["run"] = t.run ? py::object(RunPrivacyDict(*t.run, "")) : py::none();
  const bool mixed = a.groups().size() > 1;
  d["basic"] = mixed ? Guarantee(t.basic) : py::none();
  d["pld"] = t.pld ? Guarantee(*t.pld) : py::none();
  d["description"] = DescribeAccountedTotal(a, t);
  return d;
}

// A randomizer's cost per report: eps (LdpFlRandomizer: eps per weight,
// composed over its weights), delta0 and floating-point deviation if it
// has them.
AccountedStep StepOf(const py::object& randomizer) {
  if (!py::hasattr(randomizer, "epsilon")) {
    throw py::type_error(
        "randomizer must be a VectorRandomizer, ValueMechanism or LdpFlRandomizer, not " +
        TypeName(randomizer));
  }
  AccountedStep s;
  s.local_epsilon = randomizer.attr("epsilon").cast<double>();
  if (py::hasattr(randomizer, "weights")) {
    s.local_epsilon *= randomizer.attr("weights").cast<double>();
  }
  if (py::hasattr(randomizer, "delta")) s.local_delta = randomizer.attr("delta").cast<double>();
  if (py::hasattr(randomizer, "deviation")) {
    s.report_deviation = randomizer.attr("deviation").cast<double>();
  }
  return s;
}

void Record(Accountant& a, AccountedStep step, const py::object& times,
            std::uint64_t reports_per_round, double sampling_rate, bool poisson) {
  step.reports_per_round = reports_per_round;
  step.sampling_rate = sampling_rate;
  step.poisson = poisson;
  Check(a.Record(step, static_cast<std::uint64_t>(CountArg(times, kReportRounds))));
}

void BindAccountant(py::module_& m);

// The inverse of the statement: the eps0 that meets a target.
void BindCalibration(py::module_& m) {
  m.def(
      "local_epsilon_for_central",
      [](double central_epsilon, const py::object& rounds, std::uint64_t reports_per_round,
         double delta, double sampling_rate, bool poisson, bool allocation) {
        auto c = MakeConfig(1.0, rounds, true, reports_per_round, delta, 0, sampling_rate, 0,
                            poisson, allocation);
        Check(c.Validate());
        return Take(WithoutGil([&] { return LocalEpsilonForCentral(c, central_epsilon); }));
      },
      py::arg("central_epsilon"), py::arg("rounds"), py::arg("reports_per_round"),
      py::arg("delta") = 1e-6, py::arg("sampling_rate") = 1.0, py::arg("poisson") = false,
      py::arg("allocation") = false,
      "The largest eps0 per report whose shuffled run stays within (central_epsilon, delta) "
      "per client in total (poisson=True: each client drawn with probability sampling_rate; "
      "allocation=True: each client in one secret round of every 1 / sampling_rate).");
  m.def(
      "calibrate",
      [](double target_epsilon, const py::object& rounds, double delta, bool shuffle,
         std::uint64_t reports_per_round, double sampling_rate, double local_delta, bool poisson,
         bool allocation) {
        auto c = MakeConfig(1.0, rounds, shuffle, reports_per_round, delta, local_delta,
                            sampling_rate, 0, poisson, allocation);
        Check(c.Validate());
        return Take(WithoutGil([&] { return LocalEpsilonForTotal(c, target_epsilon); }));
      },
      py::arg("target_epsilon"), py::arg("rounds"), py::arg("delta") = 1e-6,
      py::arg("shuffle") = false, py::arg("reports_per_round") = 0, py::arg("sampling_rate") = 1.0,
      py::arg("local_delta") = 0.0, py::arg("poisson") = false, py::arg("allocation") = false,
      R"doc(
The largest eps0 per report (within a relative 1e-4) whose planned run stays
within (target_epsilon, delta) per client in total, as account_run states
it: without the shuffler `rounds` reports (eps0 in [target / rounds,
target]; local_delta is a Gaussian's delta0), with it (shuffle=True)
`rounds` rounds of reports_per_round reports (eps0 at most 30). Build the
randomizer at it, e.g. VectorRandomizer("privunitg", d, eps0, clip).)doc");
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
  // One shuffled round, or with random allocation one epoch (one shuffle
  // of its reports): "round" is then None and "epoch" holds it.
  const bool allocated = p.shuffled && p.config.allocation;
  py::object round = py::none();
  if (p.shuffled) {
    py::dict shuffled;
    shuffled["epsilon"] = p.round.epsilon_upper;
    shuffled["epsilon_lower"] = p.round.epsilon_lower;
    shuffled["delta"] = p.round.delta;
    shuffled["closed_form"] = p.closed_form;
    if (allocated) {
      shuffled["rounds"] = p.config.rounds_per_epoch();
      shuffled["reports"] = p.epoch_reports;
    }
    round = shuffled;
  }
  d["round"] = allocated ? py::none() : round;
  d["epoch"] = allocated ? round : py::none();
  d["subsampled"] = p.config.sampled() && !allocated ? Guarantee(p.subsampled) : py::none();
  d["epochs"] = allocated ? py::object(py::int_(p.epochs)) : py::none();
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

py::object PrivacyObject(const std::optional<PrivacyRecord>& record) {
  return py::module_::import("json").attr("loads")(PrivacyJson(record).dump());
}

namespace {

// account_run: AccountRun's statement as a dict.
void BindAccountRun(py::module_& m) {
  m.def(
      "account_run",
      [](double local_epsilon, const py::object& rounds, bool shuffle,
         std::uint64_t reports_per_round, double delta, double local_delta, double sampling_rate,
         const std::string& mechanism, double report_deviation, const py::object& bound,
         bool poisson, bool allocation) {
        auto c = MakeConfig(local_epsilon, rounds, shuffle, reports_per_round, delta, local_delta,
                            sampling_rate, report_deviation, poisson, allocation);
        if (!bound.is_none()) {
          const auto key = bound.cast<std::string>();
          c.reduction = Take(ParseShuffleReduction(key));
          if (!shuffle) {
            throw py::value_error("bound=\"" + key +
                                  "\": a shuffle bound applies with the shuffler only");
          }
        }
        Check(c.Validate());
        Take(FloatingPointStatementFor(mechanism));  // an unknown name, before the work
        return RunPrivacyDict(Take(WithoutGil([&] { return AccountRun(c); })), mechanism);
      },
      py::arg("local_epsilon"), py::arg("rounds") = 1, py::arg("shuffle") = false,
      py::arg("reports_per_round") = 0, py::arg("delta") = 1e-6, py::arg("local_delta") = 0.0,
      py::arg("sampling_rate") = 1.0, py::arg("mechanism") = "", py::arg("report_deviation") = 0.0,
      py::arg("bound") = py::none(), py::arg("poisson") = false, py::arg("allocation") = false,
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
sampling_rate < 1 draws each round's clients in secret from the server
(poisson=True: each client on its own with that probability, the count shown;
reports_per_round then the expected count; allocation=True: each client in
exactly one of every t = 1 / sampling_rate rounds, the epoch's order drawn in
secret, each epoch stated as one shuffle of its t reports_per_round reports,
"epochs" giving how many). report_deviation is a report's total variation from the ideal law (PrivUnitG's
and FastProjUnit's proven allowance, VectorRandomizer.deviation): every delta
then includes (1 + e^eps) n times it for each step of n reports it composes,
the total's as "allowance". bound: a shuffled round's (with shuffle=True only),
"best" (the tightest proven, as when not given), "variation-ratio" (Wang et al.,
VLDB 2024, the parameters proven for any eps0-LDP randomizer) or "fmt"
(Feldman, McMillan & Talwar, FOCS 2021).)doc");
}

// shuffle_epsilon: one shuffled round's numerical bound.
void BindShuffleEpsilon(py::module_& m) {
  m.def(
      "shuffle_epsilon",
      [](std::uint64_t n, double local_epsilon, double delta, const std::string& bound) {
        const ShuffleReduction reduction = Take(ParseShuffleReduction(bound));
        const auto b = Take(WithoutGil(
            [&] { return NumericalShuffleEpsilon(n, local_epsilon, delta, reduction); }));
        py::dict d;
        d["epsilon"] = b.epsilon_upper;
        d["epsilon_lower"] = b.epsilon_lower;
        d["delta"] = b.delta;
        return d;
      },
      py::arg("n"), py::arg("local_epsilon"), py::arg("delta"), py::arg("bound") = "best",
      "One shuffled round of n local_epsilon-LDP reports: the proven (epsilon, delta) "
      "(bound \"best\": the tightest proven; \"variation-ratio\": Wang et al.'s; \"fmt\": "
      "Feldman, McMillan & Talwar's numerical bound), with the least epsilon the analysis "
      "could prove (epsilon_lower).");
}

// gaussian_steps_epsilon: DP-SGD's Gaussian steps, sampled or allocated.
void BindGaussianSteps(py::module_& m) {
  m.def(
      "gaussian_steps_epsilon",
      [](double sigma, std::uint64_t steps, double sampling_rate, std::uint64_t epochs,
         double delta, double grid) {
        const GaussianStepsConfig c{.sigma = sigma,
                                    .steps = steps,
                                    .sampling_rate = sampling_rate,
                                    .epochs = epochs,
                                    .delta = delta,
                                    .grid = grid};
        const auto a = Take(WithoutGil([&] { return GaussianStepsEpsilon(c); }));
        py::dict d;
        d["epsilon"] = a.epsilon;
        d["delta"] = delta;
        d["remove"] = a.remove;
        d["add"] = a.add;
        return d;
      },
      py::arg("sigma"), py::arg("steps") = 1, py::arg("sampling_rate") = 1.0, py::arg("epochs") = 1,
      py::arg("delta") = 1e-6, py::arg("grid") = 2e-3,
      "Gaussian steps of noise sigma and sensitivity 1 (DP-SGD's setting, not fedldp's "
      "shuffled reports), each epoch using a record in one of `steps` steps drawn in secret "
      "(random allocation, Feldman & Shenfeld) or, with sampling_rate q < 1, in its one step "
      "with probability q (Poisson), over `epochs` epochs: the proven (epsilon, delta) under "
      "add/remove of one record (the larger of the two directions', each given), from each "
      "epoch's exact pair on the loss grid `grid` (`fedldp account gaussian`).");
}

}  // namespace

void BindAccounting(py::module_& m) {
  BindAccountant(m);
  BindCalibration(m);
  BindAccountRun(m);
  BindShuffleEpsilon(m);
  BindGaussianSteps(m);
}

namespace {

constexpr char kAccountantDoc[] = R"doc(
What a run actually spent, per client, recorded as it goes, and its total at
any moment. record() a client's reports sent directly (each (eps0,
delta0)-LDP) or, with reports_per_round n > 0, shuffled rounds of n reports
(sampling_rate q: every round of the run counts, as in account_run;
poisson=True: each client drawn with probability q; an epoch of random
allocation is one round of all its reports: record it so);
record_randomizer() reads eps0, delta0 and the floating-point deviation from
a randomizer. get_epsilon(delta) and statement(delta) compose everything
recorded: one kind of step exactly as account_run (and `fedldp account run`)
states it; several by the smaller of basic composition (each kind at
delta / kinds) and their privacy-loss distributions convolved.)doc";

void BindAccountant(py::module_& m) {
  py::class_<Accountant>(m, "Accountant", kAccountantDoc)
      .def(py::init<>())
      .def(
          "record",
          [](Accountant& a, double local_epsilon, const py::object& times, double local_delta,
             std::uint64_t reports_per_round, double sampling_rate, double report_deviation,
             bool poisson) {
            Record(a,
                   {.local_epsilon = local_epsilon,
                    .local_delta = local_delta,
                    .report_deviation = report_deviation},
                   times, reports_per_round, sampling_rate, poisson);
          },
          py::arg("local_epsilon"), py::arg("times") = 1, py::kw_only(),
          py::arg("local_delta") = 0.0, py::arg("reports_per_round") = 0,
          py::arg("sampling_rate") = 1.0, py::arg("report_deviation") = 0.0,
          py::arg("poisson") = false,
          "`times` more reports sent directly, or shuffled rounds of reports_per_round reports.")
      .def(
          "record_randomizer",
          [](Accountant& a, const py::object& randomizer, const py::object& times,
             std::uint64_t reports_per_round, double sampling_rate, bool poisson) {
            Record(a, StepOf(randomizer), times, reports_per_round, sampling_rate, poisson);
          },
          py::arg("randomizer"), py::arg("times") = 1, py::kw_only(),
          py::arg("reports_per_round") = 0, py::arg("sampling_rate") = 1.0,
          py::arg("poisson") = false,
          "As record(), the report's eps0 (an LdpFlRandomizer's eps times its weights: its "
          "per-weight shuffling is not credited here), delta0 and deviation read from "
          "`randomizer`.")
      .def(
          "get_epsilon",
          [](const Accountant& a, double delta) {
            return Take(WithoutGil([&] { return a.Total(delta); })).total.epsilon;
          },
          py::arg("delta"), "The total eps per client at total delta, over what was recorded.")
      .def(
          "statement",
          [](const Accountant& a, double delta) {
            return AccountedDict(a, Take(WithoutGil([&] { return a.Total(delta); })));
          },
          py::arg("delta"),
          "The whole statement at total delta: \"total\" (the claim), \"rule\", \"warning\" "
          "(None, or why the eps protects little), \"allowance\", \"steps\", \"run\" "
          "(account_run's dict for one kind of step), \"basic\" and \"pld\" (several kinds), "
          "\"description\".")
      .def_property_readonly("steps", &StepList, "One dict per kind of step, with its times.")
      .def("__repr__", [](const Accountant& a) {
        const std::size_t kinds = a.groups().size();
        return "fedldp.Accountant(" + std::to_string(kinds) +
               (kinds == 1 ? " kind of step, " : " kinds of step, ") + std::to_string(a.steps()) +
               (a.steps() == 1 ? " step)" : " steps)");
      });
}

}  // namespace

}  // namespace fedldp::python
