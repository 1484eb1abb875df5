// fedldp account: what a configuration costs in privacy, before anything runs.
#include <charconv>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli.h"
#include "commands.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/privacy/central_participation.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/privacy/shuffle_numerical.h"
#include "progress.h"

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

// --mechanism: whose floating-point line the statement ends with.
void AddMechanismOption(CLI::App& app, std::string& mechanism) {
  app.add_option("--mechanism", mechanism,
                 "The reports' mechanism (a FedSel variant, a value mechanism or a vector "
                 "randomizer): whether its eps0 holds in floating point; without it, a line for "
                 "every one");
}

// --bound: whose pair bounds a shuffled round (privacy/shuffle_numerical.h);
// left empty unless given (BoundOf reads that as the tightest proven).
void AddBoundOption(CLI::App& app, std::string& bound, const std::string& what) {
  app.add_option("--bound", bound,
                 what + ": " + std::string(kBestShuffleBoundKey) + " (the tightest proven, " +
                     ShuffleReductionKey(kTightestShuffleBound) + " today), " +
                     ShuffleReductionKey(ShuffleReduction::kVariationRatio) +
                     " (Wang et al.; Feldman, McMillan & Talwar SODA 2023) or " +
                     ShuffleReductionKey(ShuffleReduction::kClones) +
                     " (Feldman, McMillan & Talwar FOCS 2021)")
      ->check([](const std::string& key) {
        const auto parsed = ParseShuffleReduction(key);
        return parsed.ok() ? std::string() : parsed.error();
      })
      ->default_str(std::string(kBestShuffleBoundKey));
}

std::string FloatingPointLine(const std::string& mechanism) {
  auto line = FloatingPointStatementFor(mechanism);
  if (!line.ok()) throw UsageError(line.error());
  return *line;
}

}  // namespace

void SetupAccountShuffle(CLI::App& app, AccountShuffleOptions& o) {
  app.description(
      "The central (eps, delta) of N reports of an eps0-LDP randomizer, shuffled: the numerical\n"
      "bound of Feldman, McMillan & Talwar (FOCS 2021, Appendix E) and the variation-ratio\n"
      "bound of Wang et al. (VLDB 2024, with the parameters proven for any eps0-LDP\n"
      "randomizer), each bracketed (the upper end is the claim), beside the closed form of\n"
      "Feldman et al. (Theorem 3.1) where it applies. The first line's claim is the tightest\n"
      "proven (variation-ratio), or --bound's.");
  app.add_option("--local-epsilon", o.local_epsilon, "eps0 of each report")->required();
  app.add_option("--reports", o.reports, "N: reports shuffled together")->required();
  app.add_option("--delta", o.delta, "Target delta, in [1e-12, 1)")->required();
  AddMechanismOption(app, o.mechanism);
  AddBoundOption(app, o.bound, "The claim's bound");
  app.add_flag("--json", o.json, "One JSON object instead of text");
}

namespace {

// The bound --bound names (AddBoundOption checked it; refused here too),
// the tightest proven if none.
ShuffleReduction BoundOf(const std::string& key) {
  if (key.empty()) return kTightestShuffleBound;
  auto bound = ParseShuffleReduction(key);
  if (!bound.ok()) throw UsageError(bound.error());
  return *bound;
}

// "eps in [lower, upper]" of a numerical bound, or why it has none.
std::string Bracket(const Result<NumericalShuffleBound>& b) {
  if (!b.ok()) return "beyond the exact sum's reach (" + b.error() + ")";
  return "eps in [" + Down(b->epsilon_lower) + ", " + Up(b->epsilon_upper) + "]";
}

nlohmann::json BracketJson(const Result<NumericalShuffleBound>& b) {
  if (!b.ok()) return nullptr;
  return {{"epsilon_lower", b->epsilon_lower}, {"epsilon_upper", b->epsilon_upper}};
}

}  // namespace

int RunAccountShuffle(const AccountShuffleOptions& o, std::ostream& out, std::ostream&) {
  const std::string floating_point = FloatingPointLine(o.mechanism);
  const auto fmt =
      NumericalShuffleEpsilon(o.reports, o.local_epsilon, o.delta, ShuffleReduction::kClones);
  if (!fmt.ok()) throw UsageError(fmt.error());
  // The variation-ratio pair has more clones: its sum may be beyond reach
  // where the other's is not.
  const auto vr = NumericalShuffleEpsilon(o.reports, o.local_epsilon, o.delta,
                                          ShuffleReduction::kVariationRatio);
  const bool by_vr = BoundOf(o.bound) == ShuffleReduction::kVariationRatio;
  if (by_vr && !vr.ok()) throw UsageError("the variation-ratio bound: " + vr.error());
  const NumericalShuffleBound& claim = by_vr ? *vr : *fmt;
  const auto closed =
      FeldmanMcMillanTalwar(o.local_epsilon, static_cast<double>(o.reports), o.delta);
  if (o.json) {
    nlohmann::ordered_json j;
    j["local_epsilon"] = o.local_epsilon;
    j["reports"] = o.reports;
    j["delta"] = o.delta;
    j["bound"] = ShuffleReductionKey(BoundOf(o.bound));
    j["epsilon_lower"] = claim.epsilon_lower;
    j["epsilon_upper"] = claim.epsilon_upper;
    j["fmt"] = BracketJson(fmt);
    j["variation_ratio"] = BracketJson(vr);
    j["closed_form"] = closed.applies ? nlohmann::json(closed.epsilon) : nlohmann::json();
    j["floating_point"] = floating_point;
    out << j.dump() << "\n";
    return 0;
  }
  const std::string claimed = "; the upper end is the claim";
  out << o.reports << " reports of a " << Shortest(o.local_epsilon)
      << "-LDP randomizer, shuffled, are (" << Up(claim.epsilon_upper) << ", " << Shortest(o.delta)
      << ")-DP\n"
      << "  numerical bound (Feldman, McMillan & Talwar, Appendix E): " << Bracket(fmt)
      << (by_vr ? "" : claimed) << "\n"
      << "  variation-ratio bound (Wang et al., VLDB 2024; any eps0-LDP randomizer): "
      << Bracket(vr) << (by_vr ? claimed : "") << "\n"
      << "  closed form (Feldman et al., Theorem 3.1): "
      << (closed.applies
              ? "eps <= " + Up(closed.epsilon)
              : "does not apply (needs N >= " + Shortest(std::ceil(closed.min_reports)) + ")")
      << "\n  " << floating_point << "\n";
  return 0;
}

void SetupAccountRun(CLI::App& app, AccountRunOptions& o) {
  app.description(
      "What a training run costs one client, before anything is trained: each report's local\n"
      "(eps0, delta0); with --shuffle, each round's central (eps, delta) from the numerical\n"
      "shuffle bound; and the total over the rounds the client reports in, by optimal\n"
      "composition (Kairouz, Oh & Viswanath), beside advanced composition. Rounds with\n"
      "disjoint clients compose in parallel: count only the rounds one client is in. With\n"
      "--sampling-rate q, each round samples q of the clients in secret from the server (the\n"
      "shuffler draws them), --rounds counts every round of the run, and each round is first\n"
      "amplified by sampling (Balle, Barthe & Gaboardi). A server that picks the clients knows\n"
      "who took part: then give no --sampling-rate, and --rounds as the rounds a client is in.\n"
      "With --poisson, each client is drawn on its own with probability q (the count varies and\n"
      "is shown): each round is a binomial mixture over the count, N = n / q clients. With\n"
      "--allocation, each client is in exactly one of every t = 1 / q rounds, the epoch's order\n"
      "drawn in secret by the shuffler: each epoch is stated as one shuffle of its t n reports.\n"
      "  fedldp account run --local-epsilon 4 --rounds 5 --shuffle --reports-per-round 10000 "
      "--delta 1e-6");
  app.add_option("--local-epsilon", o.local_epsilon, "eps0 of each report")->required();
  app.add_option("--local-delta", o.local_delta,
                 "delta0 of each report (the Gaussian's; 0 for pure eps0-LDP)")
      ->capture_default_str();
  app.add_option("--rounds", o.rounds, "R: rounds one client reports in")->capture_default_str();
  app.add_flag("--shuffle", o.shuffle, "Each round's reports are shuffled together");
  app.add_option("--reports-per-round", o.reports_per_round,
                 "N: reports shuffled together in a round (with --shuffle)");
  app.add_option("--delta", o.delta, "Total delta per client, in [1e-12, 1)")
      ->capture_default_str();
  app.add_option("--sampling-rate", o.sampling_rate,
                 "q: each round samples this share of the clients uniformly, without "
                 "replacement (with --shuffle; --rounds then counts all rounds)")
      ->capture_default_str();
  app.add_flag("--poisson", o.poisson,
               "With --sampling-rate q: each client drawn on its own with probability q "
               "(Poisson participation, the count shown), not q N of the N; "
               "--reports-per-round is then the expected count q N");
  app.add_flag("--allocation", o.allocation,
               "With --sampling-rate q = 1 / t: random allocation, each client in exactly one "
               "of every t rounds, the epoch's order drawn in secret; each epoch stated as one "
               "shuffle of its t n reports (docs/shuffle-accounting.md)");
  app.add_option("--report-deviation", o.report_deviation,
                 "Each report's total variation from the ideal law (PrivUnitG's and "
                 "FastProjUnit's floating-point allowance, as train and serve state it): every "
                 "delta then includes (1 + e^eps) n times it for each step of n reports it "
                 "composes")
      ->capture_default_str();
  AddMechanismOption(app, o.mechanism);
  AddBoundOption(app, o.bound, "With --shuffle, each round's bound");
  app.add_flag("--json", o.json, "One JSON object instead of text");
}

namespace {

// account run --json: the statement's lines as one object; an allocated
// run's shuffle is its epochs' (per_epoch), not a round's.
nlohmann::ordered_json AccountRunJson(const AccountRunOptions& o, const RunPrivacy& p,
                                      const std::string& floating_point) {
  const auto pair = [](const DpGuarantee& g) {
    return nlohmann::ordered_json{{"epsilon", g.epsilon}, {"delta", g.delta}};
  };
  nlohmann::ordered_json j;
  j["local"] = pair(p.local);
  j["rounds"] = o.rounds;
  j["local_basic"] = pair(p.local_basic);
  j["local_optimal"] = pair(p.local_optimal);
  if (p.shuffled) {
    const nlohmann::ordered_json shuffled = {
        {"reports", o.allocation ? p.epoch_reports : o.reports_per_round},
        {"epsilon_lower", p.round.epsilon_lower},
        {"epsilon_upper", p.round.epsilon_upper},
        {"delta", p.round.delta}};
    // Allocated: each epoch is one shuffle of its reports, stated as such.
    j["per_round"] = o.allocation ? nlohmann::ordered_json(nullptr) : shuffled;
    if (p.config.sampled()) {
      j["sampling_rate"] = o.sampling_rate;
      j["participation"] = o.poisson ? "poisson" : o.allocation ? "allocation" : "fixed";
      if (o.allocation) {
        j["per_epoch"] = shuffled;
        j["per_epoch"]["rounds"] = p.config.rounds_per_epoch();
        j["epochs"] = p.epochs;
      } else {
        j["per_round_sampled"] = pair(p.subsampled);
      }
    }
  } else {
    j["per_round"] = nullptr;
  }
  j["total"] = pair(p.total);
  j["rule"] = p.rule;
  const std::string warning = MeaninglessWarning(p.total);
  j["warning"] =
      warning.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(warning);
  j["total_advanced"] = pair(p.total_advanced);
  j["report_deviation"] = o.report_deviation;
  j["allowance"] = p.allowance;
  j["floating_point"] = floating_point;
  return j;
}

}  // namespace

int RunAccountRun(const AccountRunOptions& o, std::ostream& out, std::ostream&) {
  const std::string floating_point = FloatingPointLine(o.mechanism);
  RunPrivacyConfig c;
  c.local_epsilon = o.local_epsilon;
  c.local_delta = o.local_delta;
  c.rounds = o.rounds;
  c.shuffle = o.shuffle;
  c.reports_per_round = o.reports_per_round;
  c.delta = o.delta;
  c.sampling_rate = o.sampling_rate;
  c.poisson = o.poisson;
  c.allocation = o.allocation;
  c.report_deviation = o.report_deviation;
  c.reduction = BoundOf(o.bound);
  if (!o.bound.empty() && !o.shuffle) {
    throw UsageError("--bound " + o.bound + ": a shuffle bound applies with the shuffler only");
  }
  auto p = AccountRun(c);
  if (!p.ok()) throw UsageError(p.error());
  if (!o.json) {
    out << DescribeRunPrivacy(p.value(), floating_point);
    return 0;
  }
  out << AccountRunJson(o, *p, floating_point).dump() << "\n";
  return 0;
}

void SetupAccountCurves(CLI::App& app, AccountCurvesOptions& o) {
  app.description(
      "The central eps of N shuffled eps0-LDP reports against N, for each eps0, by FMT's\n"
      "numerical bound, the variation-ratio bound (the claim: the tightest proven) and FMT's\n"
      "closed form (where it applies): DIR/shuffle-bounds.csv, .gp and, with gnuplot, .png,\n"
      ".svg and .pdf; a table on stdout.\n"
      "  fedldp account curves --out DIR --local-epsilons 1,2,4 --delta 1e-6");
  app.add_option("--out", o.out, "Folder for the figure (made if missing)")->required();
  app.add_option("--local-epsilons", o.config.local_epsilons, "eps0 of each report")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--reports", o.config.reports, "The N plotted (default 1e3 to 1e8)")
      ->delimiter(',');
  app.add_option("--delta", o.config.delta, "Target delta, in [1e-12, 1)")->capture_default_str();
}

int RunAccountCurves(const AccountCurvesOptions& o, std::ostream& out, std::ostream&) {
  if (Status bad = o.config.Validate(); !bad.ok()) throw UsageError(bad.error());
  ProgressBar bar("account curves", "points");
  auto curves = ShuffleCurves(
      o.config, [&](std::size_t done, std::size_t total) { bar.Update(done, total); });
  if (!curves.ok()) throw UsageError(curves.error());
  std::error_code made;
  std::filesystem::create_directories(o.out, made);
  if (made) throw std::runtime_error("cannot make " + o.out + ": " + made.message());
  auto written = WriteFigure(ShuffleCurvesFigure(o.config, *curves), o.out);
  if (!written.ok()) throw std::runtime_error(written.error());
  out << "central eps at delta " << Shortest(o.config.delta) << " (upper ends; - where none)\n"
      << "N";
  for (const ShuffleCurve& c : *curves) {
    out << "," << c.bound << " " << Shortest(c.local_epsilon);
  }
  out << "\n";
  for (std::size_t i = 0; i < o.config.reports.size(); ++i) {
    out << o.config.reports[i];
    for (const ShuffleCurve& c : *curves) {
      out << "," << (std::isnan(c.epsilon[i]) ? "-" : Up(c.epsilon[i]));
    }
    out << "\n";
  }
  out << "figure: " << o.out << "/shuffle-bounds.csv"
      << (written->empty() ? ", .png, .svg, .pdf" : " (" + *written + ")") << "\n";
  return 0;
}

void SetupAccountGaussian(CLI::App& app, AccountGaussianOptions& o) {
  app.description(
      "The central (eps, delta) of Gaussian steps of noise --sigma and sensitivity 1 (DP-SGD's\n"
      "setting, not fedldp's shuffled reports: account run), under add/remove of one record,\n"
      "each epoch using the record in one of --steps steps drawn in secret (random allocation;\n"
      "Feldman & Shenfeld) or, with --sampling-rate q, in its one step with probability q\n"
      "(Poisson), over --epochs epochs: each epoch's exact pair (its likelihood ratio the mean\n"
      "of the steps', or q times the step's plus 1 - q), put on the loss grid keeping its\n"
      "mean (pessimistic in both directions), composed; the claim is the larger direction.\n"
      "  fedldp account gaussian --sigma 1 --steps 10 --delta 1e-5\n"
      "  fedldp account gaussian --sigma 0.5 --sampling-rate 0.2 --epochs 3 --delta 0.156");
  GaussianStepsConfig& c = o.config;
  app.add_option("--sigma", c.sigma, "Noise of each step (sensitivity 1)")->required();
  app.add_option("--steps", c.steps, "t: steps per epoch, the record in one")
      ->capture_default_str();
  app.add_option("--sampling-rate", c.sampling_rate,
                 "q: each epoch's step uses the record with probability q (Poisson)")
      ->capture_default_str();
  app.add_option("--epochs", c.epochs, "Epochs, composed")->capture_default_str();
  app.add_option("--delta", c.delta, "Target delta, in [1e-12, 1)")->capture_default_str();
  app.add_option("--grid", c.grid, "The loss grid, in (0, 0.1]")->capture_default_str();
  app.add_flag("--json", o.json, "One JSON object instead of text");
}

int RunAccountGaussian(const AccountGaussianOptions& o, std::ostream& out, std::ostream&) {
  const GaussianStepsConfig& c = o.config;
  const auto stated = GaussianStepsEpsilon(c);
  if (!stated.ok()) throw UsageError(stated.error());
  const auto [eps, remove, add] = *stated;
  const std::string how = c.sampling_rate < 1 ? "sampled at " + Shortest(c.sampling_rate)
                          : c.steps > 1       ? "1 of " + std::to_string(c.steps) + " steps"
                                              : "every step";
  if (o.json) {
    const nlohmann::ordered_json j = {{"sigma", c.sigma},
                                      {"steps", c.steps},
                                      {"sampling_rate", c.sampling_rate},
                                      {"epochs", c.epochs},
                                      {"delta", c.delta},
                                      {"grid", c.grid},
                                      {"epsilon", eps},
                                      {"remove", remove},
                                      {"add", add},
                                      {"neighbours", "add/remove"}};
    out << j.dump() << "\n";
    return 0;
  }
  out << "Gaussian steps (sigma " << Shortest(c.sigma) << "), " << how << " per epoch, " << c.epochs
      << (c.epochs == 1 ? " epoch" : " epochs") << ": (" << Up(eps) << ", " << Shortest(c.delta)
      << ")-DP for add/remove of one record\n"
      << "  remove " << Up(remove) << ", add " << Up(add)
      << " (the larger is the claim); each epoch's exact pair, on the grid " << Shortest(c.grid)
      << "\n";
  return 0;
}

}  // namespace fedldp::cli
