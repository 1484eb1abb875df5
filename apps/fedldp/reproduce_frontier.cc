// fedldp reproduce frontier: parses the options into a
// FrontierReproductionConfig (the linear frontier) or, with --model cnn, a
// CnnFrontierConfig, and calls ReproduceFrontier
// (sim/frontier_reproduction.h) or ReproduceCnnFrontier
// (sim/cnn_frontier.h), which run the frontier and write the folder; this
// file prints.
#include <unistd.h>

#include <chrono>
#include <optional>
#include <tuple>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/base/format.h"
#include "fedldp/sim/cnn_frontier.h"
#include "fedldp/sim/frontier_reproduction.h"
#include "progress.h"

namespace fedldp::cli {

FrontierOptions::FrontierOptions()
    : linear(std::make_unique<FrontierReproductionConfig>()),
      cnn(std::make_unique<CnnFrontierConfig>()) {}
FrontierOptions::~FrontierOptions() = default;

namespace {

// Refuses an option of one model set away from its default for the
// other (by value, so that --print-config's output, which writes every
// default, runs as it is).
void CheckModelOnlyOptions(const FrontierOptions& o) {
  const FrontierReproductionConfig& l = *o.linear;
  const CnnFrontierConfig& c = *o.cnn;
  const FrontierReproductionConfig l0;
  const CnnFrontierConfig c0;
  const std::vector<std::tuple<const char*, const char*, bool>> options = {
      {"--repeats", "linear", l.repeats != l0.repeats},
      {"--folds", "linear", l.folds != l0.folds},
      {"--tuning-splits", "linear", l.tuning_splits != l0.tuning_splits},
      {"--data", "linear", !l.data_file.empty()},
      {"--label-column", "linear", !l.label_column.empty()},
      {"--resume", "cnn", c.resume},
      {"--epsilons", "cnn", c.epsilons != c0.epsilons},
      {"--randomizers", "cnn", c.randomizers != c0.randomizers},
      {"--grid", "cnn", !o.grid.empty()},
      {"--validation-rows", "cnn", c.validation_rows != c0.validation_rows},
      {"--client-lr", "cnn", c.client_lr != c0.client_lr},
      {"--twopoint-epsilon", "cnn", c.twopoint_epsilon != c0.twopoint_epsilon},
      {"--train-rows", "cnn", c.train_rows != 0},
      {"--test-rows", "cnn", c.test_rows != 0}};
  for (const auto& [flag, model, set] : options) {
    if (set && model != o.model) {
      throw UsageError(std::string(flag) + " applies to --model " + model + " only");
    }
  }
}

void SetupCnnOptions(CLI::App* app, FrontierOptions& o) {
  CnnFrontierConfig& c = *o.cnn;
  app->add_flag("--resume", c.resume, "cnn: reuse the runs already in DIR/runs.jsonl");
  app->add_option("--epsilons", c.epsilons,
                  "cnn: central eps targets per client (default 1,2,3,5,8)")
      ->delimiter(',');
  app->add_option_function<std::vector<std::string>>(
         "--randomizers",
         [&c](const std::vector<std::string>& names) {
           c.randomizers.clear();
           for (const std::string& n : names) {
             auto m = ParseVectorMechanism(n);
             if (!m.ok()) throw CLI::ValidationError("--randomizers", m.error());
             c.randomizers.push_back(*m);
           }
         },
         "cnn: vector randomizers (default privunitg,fastprojunit)")
      ->delimiter(',');
  app->add_option("--grid", o.grid,
                  "cnn: grid points optimizer:lr:clip:per_round:epochs[:sampled|:allocated]"
                  "[:ema=DECAY|:tail=FRACTION][:freeze=LAYERS], comma-separated; sampled: "
                  "each round drawn "
                  "afresh in secret by the shuffler, epochs then the reports a client sends in "
                  "expectation; allocated: the epochs' disjoint rounds, their order drawn in "
                  "secret by the shuffler, each epoch stated as one shuffle; freeze: layers "
                  "kept at their initial weights, '+' between them (e.g. freeze=fc1) "
                  "(default: momentum:0.1 "
                  "and adam:0.001, 1000 and 6000 a round, "
                  "clip 1, 3 epochs, disjoint rounds)")
      ->delimiter(',');
  app->add_option("--validation-rows", c.validation_rows,
                  "cnn: training rows held out to choose each row's grid point")
      ->capture_default_str();
  app->add_option("--client-lr", c.client_lr,
                  "cnn: a client's update is -lr x its gradient, then clipped")
      ->capture_default_str();
  app->add_option("--twopoint-epsilon", c.twopoint_epsilon,
                  "cnn: LDP-FL's two-point row (the paper's setting): eps per weight")
      ->capture_default_str();
  app->add_option("--train-rows", c.train_rows, "cnn: the first training rows only (0: all)");
  app->add_option("--test-rows", c.test_rows, "cnn: the first test rows only (0: all)");
}

}  // namespace

void SetupReproduceFrontier(CLI::App& reproduce, FrontierOptions& o) {
  FrontierReproductionConfig& l = *o.linear;
  auto* app = reproduce.add_subcommand(
      "frontier",
      "The accuracy-privacy frontier (docs/frontier.md).\n"
      "--model linear (default): FedSel PS-PM, flat PM, LDP-FL's per-weight two-point at\n"
      "eps/d per coordinate, the Gaussian, PrivUnitG and FastProjUnit, local and through\n"
      "the shuffler, at total eps in {0.5,1,2,4,8} per client on a binary dataset; each\n"
      "fold chooses lr, m / N and the clip on validation rows carved from its own training\n"
      "rows (nested CV). Writes DIR/frontier.{csv,jsonl}, DIR/summary.md and the plots\n"
      "DIR/frontier-local.* and DIR/frontier-shuffled.*. Ctrl-C stops after the current\n"
      "fold and exits 1, writing nothing.\n"
      "--model cnn: the paper's CNN on mnist or fmnist, one client per training image,\n"
      "PrivUnitG and FastProjUnit through the shuffler calibrated to central eps in\n"
      "{1,2,3,5,8} (delta 1e-5 per client in total), each row's grid point chosen on\n"
      "10,000 held-out training images, beside the noise-free CNN tuned the same way,\n"
      "LDP-FL's two-point with its honest total, and the majority class. Writes\n"
      "DIR/runs.jsonl as each run ends (Ctrl-C, then --resume, continues),\n"
      "DIR/cnn-frontier.{csv,jsonl}, DIR/summary.md and the plot DIR/cnn-frontier-shuffled.*.");
  app->add_option("--out", l.out, "Output folder")->required();
  app->add_option("--model", o.model, "linear, or cnn")
      ->capture_default_str()
      ->check(CLI::IsMember({"linear", "cnn"}));
  app->add_flag("--quick", l.quick,
                "A smoke run (linear: eps {1, 4}, 1 x 2-fold CV, one validation split, a "
                "4-point grid; cnn: 1,200 training and 500 test images, eps {2, 8}, privunitg, "
                "a 2-point grid)");
  app->add_option("--dataset", o.dataset,
                  "linear: a binary dataset (see train; default adult); cnn: mnist (default) or "
                  "fmnist");
  app->add_option("--data-dir", l.data_dir, "Folder of the dataset files");
  app->add_option("--data", l.data_file,
                  "linear: your own binary file instead of --dataset (CSV with a header, or "
                  "LIBSVM, as train --data)");
  app->add_option("--label-column", l.label_column,
                  "linear, with --data FILE.csv: the label's column name or index (default: the "
                  "last)");
  app->add_option("--repeats", l.repeats, "linear: cross-validation repeats")
      ->capture_default_str()
      ->check(Within(kRepeats));
  app->add_option("--folds", l.folds, "linear: cross-validation folds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  app->add_option("--tuning-splits", l.tuning_splits, "linear: validation splits per grid point")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app->add_option("--delta", o.delta,
                  "The shuffled runs' total delta per client (default 1e-6 linear, 1e-5 cnn); "
                  "linear: also the Gaussian's per report");
  SetupCnnOptions(app, o);
  app->add_option("--seed", l.seed, "Seed")->capture_default_str();
  app->add_option("--threads", l.threads, "Threads (0: all cores)")
      ->capture_default_str()
      ->check(Within(kWorkerThreads));
  app->add_flag_callback(
      "--no-figures", [&l] { l.figures = false; }, "Data only, no plots");
}

namespace {

int RunLinear(const FrontierOptions& o, std::ostream& out, std::ostream& err) {
  FrontierReproductionConfig config = *o.linear;
  config.data_dir = DataDir(config.data_dir);
  if (o.dataset) config.dataset = *o.dataset;
  if (o.dataset && !config.data_file.empty())
    throw UsageError("give --dataset or --data, not both");
  if (o.delta) config.delta = *o.delta;
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

CnnFrontierConfig CnnConfig(const FrontierOptions& o) {
  CnnFrontierConfig c = *o.cnn;
  const FrontierReproductionConfig& l = *o.linear;
  c.out = l.out;
  c.quick = l.quick;
  c.data_dir = l.data_dir;
  c.seed = l.seed;
  c.threads = l.threads;
  c.figures = l.figures;
  if (o.delta) c.delta = *o.delta;
  if (o.dataset) {
    auto d = ParseImageDataset(*o.dataset);
    if (!d.ok()) throw UsageError(d.error());
    c.dataset = *d;
  }
  for (const std::string& spec : o.grid) {
    auto g = ParseCnnGridPoint(spec);
    if (!g.ok()) throw UsageError(g.error());
    c.grid.push_back(*g);
  }
  if (const Status s = c.Validate(); !s.ok()) throw UsageError(s.error());
  return c;
}

int RunCnn(const FrontierOptions& o, std::ostream& out, std::ostream& err) {
  const CnnFrontierConfig config = CnnConfig(o);
  JournaledProgress progress(out);
  const auto observer =
      progress.Observer("fedldp reproduce frontier --model cnn", config.out, config.resume);
  StopOnSignal stop;
  auto result = ReproduceCnnFrontier(config, observer, stop.token());
  progress.Clear();
  if (!result.ok()) ThrowFailure(result.code(), result.error());
  if (result->stopped) return JournaledProgress::Stopped(err, result->trained, config.out);
  out << result->summary;
  for (const std::string& note : result->figure_notes) err << "  " << note << "\n";
  out << "wrote " << config.out << "/{runs.jsonl,cnn-frontier.csv,cnn-frontier.jsonl,summary.md"
      << (config.figures ? ",cnn-frontier-shuffled.*" : "") << "}\n";
  return 0;
}

}  // namespace

int RunReproduceFrontier(const FrontierOptions& o, std::ostream& out, std::ostream& err) {
  CheckModelOnlyOptions(o);
  return o.model == "cnn" ? RunCnn(o, out, err) : RunLinear(o, out, err);
}

}  // namespace fedldp::cli
