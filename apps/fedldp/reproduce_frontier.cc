// fedldp reproduce frontier: parses the options into a
// FrontierReproductionConfig and calls ReproduceFrontier
// (sim/frontier_reproduction.h), which runs the frontier and writes the
// folder; this file prints.
#include <unistd.h>

#include <chrono>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/sim/frontier_reproduction.h"
#include "progress.h"

namespace fedldp::cli {

void SetupReproduceFrontier(CLI::App& reproduce, FrontierReproductionConfig& o) {
  auto* app = reproduce.add_subcommand(
      "frontier",
      "The accuracy-privacy frontier (docs/frontier.md): FedSel PS-PM, flat PM, LDP-FL's\n"
      "per-weight two-point at eps/d per coordinate, the Gaussian, PrivUnitG and\n"
      "FastProjUnit, local and through the shuffler, at total eps in {0.5,1,2,4,8} per\n"
      "client, on the same folds and seeds. Each fold chooses lr, m / N and the clip on\n"
      "validation rows carved from its own training rows (nested CV); the non-private\n"
      "model is tuned the same way. Writes DIR/frontier.csv, DIR/frontier.jsonl,\n"
      "DIR/summary.md and the plots DIR/frontier-local.* and DIR/frontier-shuffled.*.\n"
      "Ctrl-C stops after the current fold and exits 1, writing nothing.");
  app->add_option("--out", o.out, "Output folder")->required();
  app->add_flag("--quick", o.quick,
                "A smoke run: eps in {1, 4}, 1 x 2-fold CV, one validation split, a 4-point grid");
  app->add_option("--dataset", o.dataset, "A binary dataset (see train)")->capture_default_str();
  app->add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  app->add_option("--repeats", o.repeats, "Cross-validation repeats")
      ->capture_default_str()
      ->check(Within(kRepeats));
  app->add_option("--folds", o.folds, "Cross-validation folds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  app->add_option("--tuning-splits", o.tuning_splits, "Validation splits per grid point")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app->add_option("--delta", o.delta,
                  "Total delta per client of the shuffled runs, and the Gaussian's per report")
      ->capture_default_str();
  app->add_option("--seed", o.seed, "Seed")->capture_default_str();
  app->add_option("--threads", o.threads, "Threads (0: all cores)")
      ->capture_default_str()
      ->check(Within(kWorkerThreads));
  app->add_flag_callback(
      "--no-figures", [&o] { o.figures = false; }, "Data only, no plots");
}

int RunReproduceFrontier(const FrontierReproductionConfig& given, std::ostream& out,
                         std::ostream& err) {
  FrontierReproductionConfig config = given;
  config.data_dir = DataDir(given.data_dir);
  if (const Status s = config.Validate(); !s.ok()) throw UsageError(s.error());
  FrontierReproductionObserver observer;
  observer.started = [&](const std::string& summary) {
    out << "fedldp reproduce frontier: " << summary << "\n";
    out.flush();
  };
  // A bar on a terminal; otherwise (a log file, CI) one line per row.
  ProgressBar bar("frontier");
  const bool terminal = isatty(STDERR_FILENO) == 1;
  const auto start = std::chrono::steady_clock::now();
  observer.progress = [&](std::size_t done, std::size_t total, const std::string& what) {
    bar.Update(done, total);
    if (terminal) return;
    err << "[" << done << "/" << total << "] " << what << " done, "
        << static_cast<long>(
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
        << " s\n";
    err.flush();
  };
  StopOnSignal stop;
  auto result = ReproduceFrontier(config, observer, stop.token());
  if (!result.ok()) {
    ThrowFailure(result.code(), result.error() + DataDirHint(result.error()));
  }
  if (result->stopped) {
    err << "stopped after " << result->frontier.rows.size()
        << " private row(s); nothing was written\n";
    return 1;
  }
  out << result->summary;
  for (const std::string& note : result->figure_notes) err << "  " << note << "\n";
  out << "wrote " << config.out << "/{frontier.csv,frontier.jsonl,summary.md"
      << (config.figures ? ",frontier-local.*,frontier-shuffled.*" : "") << "}\n";
  return 0;
}

}  // namespace fedldp::cli
