// fedldp reproduce fedsel: parses the options into a FedSelReproductionConfig
// and calls ReproduceFedSel (sim/fedsel_reproduction.h), which runs FedSel's
// Table 3 and figures and writes the folder; this file prints.
#include <iomanip>
#include <optional>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/base/format.h"
#include "fedldp/sim/fedsel_reproduction.h"
#include "progress.h"

namespace fedldp::cli {

void SetupReproduce(CLI::App& app, FedSelReproductionConfig& o) {
  app.require_subcommand(1);
  auto* fedsel = app.add_subcommand(
      "fedsel",
      "FedSel Table 3: for syn-L-0.01-0.9, BANK, KDD and ADULT with logistic regression and\n"
      "SVM at eps = 2, accuracy of PM (flat) and of EXP/PE/PS-PM and -PM-C, with\n"
      "gain = acc(X-PM-C) - acc(PM) and loss = acc(X-PM-C) - acc(X-PM) in points, beside\n"
      "the paper's values, the non-private model and the majority class, and U-PM:\n"
      "the control uniform-pm (no selection, reports not enlarged by d; not in the\n"
      "paper), which shows how much of a gain the selection itself earns. Writes\n"
      "DIR/table3.md, DIR/table3.csv and DIR/runs.jsonl.\n"
      "Then the data and plots (DIR/fig*.{csv,gp,png,svg,pdf}, gnuplot) of Fig. 2(f-i) and\n"
      "Fig. 3 on ADULT with logistic regression, 2 x 5-fold CV: accuracy against\n"
      "eps in {0.5,1,2,4,8} for PM, EXP/PE/PS-PM(-C) with 1 (f) and 2 (g) epochs;\n"
      "HM/Duchi against PS-HM/PS-Duchi (h); PM-RP (i); -O against ours over 2\n"
      "epochs (3a); mu in {0.05,...,0.8} for eps in {1,2,4} (3b); the automatic mu\n"
      "for m/N in {0.002,...,0.05} at 50 iterations (3c).\n"
      "Ctrl-C stops after the current fold and exits 1; runs.jsonl keeps what finished.");
  fedsel->add_option("--out", o.out, "Output folder")->required();
  fedsel->add_flag("--quick", o.quick, "1 x 2-fold CV instead of 10 x 5 (a smoke run)");
  fedsel->add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  fedsel->add_option("--seed", o.seed, "Seed")->capture_default_str();
  fedsel->add_option("--threads", o.threads, "Threads (0: all cores)")
      ->capture_default_str()
      ->check(Within(kWorkerThreads));
  fedsel->add_option("--epsilon", o.epsilon, "Total budget for Table 3")->capture_default_str();
  fedsel->add_flag_callback(
      "--no-figures", [&o] { o.figures = false; }, "Table 3 only");
  fedsel
      ->add_option_function<std::string>(
          "--gradient-scaling",
          [&o](const std::string& v) { o.gradient_scaling = ParseGradientScaling(v).value(); },
          "clip or normalize (see train)")
      ->check(CLI::IsMember({"clip", "normalize"}))
      ->default_str("clip");
}

int RunReproduceFedSel(const FedSelReproductionConfig& given, std::ostream& out,
                       std::ostream& err) {
  FedSelReproductionConfig config = given;
  config.data_dir = DataDir(given.data_dir);
  if (Status s = config.Validate(); !s.ok()) throw UsageError(s.error());

  FedSelReproductionObserver observer;
  observer.started = [&](const std::string& summary) {
    out << "fedldp reproduce fedsel: " << summary << "\n";
    out.flush();
  };
  std::optional<ProgressBar> bar;
  std::string bar_label;
  observer.progress = [&](const std::string& label, std::size_t done, std::size_t total) {
    if (!bar || bar_label != label) {
      bar.reset();
      bar.emplace(label);
      bar_label = label;
    }
    bar->Update(done, total);
  };
  observer.row = [&](const std::string& row) {
    bar.reset();
    out << "  done " << row << "\n";
    out.flush();
  };
  observer.table3 = [&](const FedSelReproduction& r) {
    out << "\n"
        << r.table3 << "\nTable 3 time: " << Fixed(r.seconds, 1) << " s of training, "
        << Fixed(static_cast<double>(r.updates) / r.seconds, 0) << " client updates/s\n";
    if (!config.figures) return;
    out << "\nFigures (ADULT, logistic, " << r.figure_cv.repeats << " x " << r.figure_cv.folds
        << "-fold CV):\n";
    out.flush();
  };
  observer.figure = [&](const Figure& f, const std::string& note) {
    bar.reset();
    if (!note.empty()) out << "  " << note << "\n";
    out << "  wrote " << config.out << "/" << f.id << ".{csv,gp,png,svg,pdf}\n";
    out.flush();
  };
  // Ctrl-C (or SIGTERM) stops after the current fold.
  StopOnSignal stop;
  auto result = ReproduceFedSel(config, observer, stop.token());
  bar.reset();
  if (!result.ok()) {
    ThrowFailure(result.code(), result.error() + DataDirHint(result.error()));
  }
  if (result->stopped) {
    err << "stopped: the configurations that finished are in " << config.out << "/runs.jsonl"
        << (result->table3.empty() ? "; Table 3 was not written" : "") << "\n";
    return 1;
  }
  return 0;
}

}  // namespace fedldp::cli
