// fedldp train: one FedSel configuration, cross-validated, beside its two
// references (majority class, non-private model) on the same folds.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "config_options.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/base/format.h"
#include "fedldp/base/names.h"
#include "fedldp/base/units.h"
#include "fedldp/data/dataset.h"
#include "fedldp/fl/fedsel_options.h"
#include "fedldp/model/linear.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/sim/fedsel_experiment.h"
#include "progress.h"

namespace fedldp::cli {

namespace {

// The data a configuration trains on: a dataset or the user's file, and
// how its rows are split among clients.
void AddDataOptions(CLI::App& app, TrainOptions& o) {
  auto* dataset =
      app.add_option(
             "--dataset", o.dataset,
             Listed(DatasetNames(false), ", ") + " ([-entry] for syn), or " +
                 Listed(DatasetNames(true), " or ") +
                 " (images: softmax over the classes; their standard split: --repeats runs, "
                 "no folds)")
          ->capture_default_str();
  auto* data_dir = app.add_option(
      "--data-dir", o.data_dir,
      "Folder of the dataset files (default $FEDLDP_DATA_DIR, else the repository's data/)");
  app.add_option("--pool", o.pool,
                 "One-channel images (mnist, fmnist): average each F x F block of pixels (2: 14 "
                 "x 14 pixels, 1,960 weights), a smaller model for private training")
      ->capture_default_str()
      ->check(CLI::Range(1, 28));
  app.add_option("--feature-center", o.feature_center,
                 "Subtract this public constant from every feature (after --pool), in [-" +
                     Significant(kMaxFeatureCenter) + ", " + Significant(kMaxFeatureCenter) +
                     "]: 0.13, about MNIST's mean pixel, lets a private softmax learn more in the "
                     "same rounds; choose it on validation rows (fedldp tune)")
      ->capture_default_str();
  app.add_option("--data", o.data,
                 "Your own data instead of --dataset: a CSV file (.csv, .csv.gz; numeric "
                 "features scaled to about [-1, 1], one label column) or LIBSVM text")
      ->excludes(dataset)
      ->excludes(data_dir);
  app.add_option("--label-column", o.label_column,
                 "With --data FILE.csv: the label column's header name or 0-based index "
                 "(default: the last column)");
}

// The variant, then FedSelConfig's options, each bound from its row
// (fl/fedsel_options.h), with the default variant's defaults shown.
void AddMethodOptions(CLI::App& app, TrainOptions& o) {
  app.add_option("--variant", o.variant, "FedSel variant or baseline")->capture_default_str();
  BindOptions(app, FedSelOptions(), DefaultFedSelVariantConfig(), o.config);
}

// The central budget of a shuffled run.
void AddShuffleOptions(CLI::App& app, TrainOptions& o) {
  app.add_option("--central-delta", o.central_delta,
                 "With --shuffle: the total delta per client, in [1e-12, 1)")
      ->capture_default_str();
  app.add_option("--central-epsilon", o.central_epsilon,
                 "With --shuffle, instead of --epsilon: the total central eps per client; each "
                 "fold runs at the largest local eps the accountant allows for it");
}

// Tuning's validation and grid, seed and threads.
void AddRunOptions(CLI::App& app, TrainOptions& o) {
  app.add_option("--validation-fraction", o.validation_fraction,
                 "With --tune: the share of a fold's training rows held out for validation")
      ->capture_default_str();
  app.add_option("--tuning-splits", o.tuning_splits,
                 "With --tune: validation splits averaged per grid point")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--grid-lr", o.grid_lr,
                 "With --tune / tune: the learning rates tried (default: DefaultGrid's)")
      ->delimiter(',');
  app.add_option("--grid-batch-fraction", o.grid_batch_fraction,
                 "With --tune / tune: the m / N tried (default: DefaultGrid's)")
      ->delimiter(',');
  app.add_option(
         "--grid-clip", o.grid_clip,
         "With --tune / tune: the clip norms tried, vector variants (default: DefaultGrid's)")
      ->delimiter(',');
  app.add_option("--grid-server-lr", o.grid_server_lr,
                 "With --tune / tune: the server optimiser's learning rates tried (default: "
                 "--server-lr only)")
      ->delimiter(',');
  app.add_option("--grid-server-beta1", o.grid_server_beta1,
                 "With --tune / tune and --server-optimizer momentum, adam or yogi: the beta1 "
                 "tried (default: --server-beta1 only)")
      ->delimiter(',');
  app.add_option("--grid-epochs", o.grid_epochs,
                 "With --tune / tune: the epochs tried (default: --epochs only)")
      ->delimiter(',')
      ->check(Within(kEpochs));
  app.add_option("--seed", o.seed, "Seed of the whole run")->capture_default_str();
  app.add_option("--threads", o.threads,
                 "Threads (0: all cores, shared among the MPI processes on this machine)")
      ->capture_default_str()
      ->check(Within(kWorkerThreads));
}

// The options that describe one configuration, shared by `train` and `tune`
// (in this order in --help).
void AddConfigOptions(CLI::App& app, TrainOptions& o) {
  AddDataOptions(app, o);
  AddMethodOptions(app, o);
  AddShuffleOptions(app, o);
  AddRunOptions(app, o);
}

}  // namespace

void SetupTrain(CLI::App& app, TrainOptions& o) {
  app.description(
      "Cross-validated FedSel training (Algorithm 1 of the paper) of an l2-regularised\n"
      "linear model, one record per client. Prints the privacy statement and the\n"
      "accuracy beside the majority-class and non-private references on the same folds.\n"
      "Variants: np, np-rs, np-k, pm, hm, duchi, pm-rp, {exp,pe,ps}-{pm,hm,duchi}[-c][-o],\n"
      "and the control uniform-{pm,hm,duchi}[-o] (uniform selection, not enlarged by d);\n"
      "beyond the paper, " +
      Listed(FedSelVectorVariantNames()) +
      "\nprivatise the whole l2-clipped gradient (docs/frontier.md).\n"
      "Options may also come from a TOML/INI file given before the subcommand:\n"
      "  fedldp --config run.toml train   with the options under a [train] section.");
  AddConfigOptions(app, o);
  app.add_flag("--tune", o.tune,
               "Nested cross-validation: each fold chooses lr, m / N, clip (vector variants) on "
               "a validation share of its training rows (DefaultGrid), never its test rows; "
               "one given as an option (--lr, --batch-fraction, --clip, --tail-average, "
               "--epochs) is held, not searched");
  app.add_option("--repeats", o.repeats, "Cross-validation repeats")
      ->capture_default_str()
      ->check(Within(kRepeats));
  app.add_option("--folds", o.folds, "Cross-validation folds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  app.add_flag("--no-reference", o.no_reference, "Skip the non-private reference run");
  app.add_option("--reference-lr", o.reference_lr,
                 "Learning rate of the non-private reference (the private default diverges "
                 "on Bank without noise)")
      ->capture_default_str();
  app.add_option("--reference-batch-fraction", o.reference_batch_fraction,
                 "m / N of the non-private reference (default: np's own, not the private "
                 "run's --batch-fraction)")
      ->check(CLI::Range(1e-9, 1.0));
  app.add_flag("--allow-weak-reference", o.allow_weak_reference,
               "Exit 0 even if the non-private reference does not beat the majority class "
               "(otherwise: its results are printed and recorded, and train exits 1)");
  app.add_option("--out", o.out, "Append one JSON line of results to this file");
}

void SetupTune(CLI::App& app, TrainOptions& o) {
  app.description(
      "Choose a variant's hyper-parameters (lr, m / N, clip for the vector variants) on\n"
      "validation data: --tuning-splits seeded splits of the dataset hold out\n"
      "--validation-fraction of its rows each; every point of the grid (docs/frontier.md)\n"
      "trains on the rest. Prints the best points and the winner as `train` options.\n"
      "Tune on training data only (e.g. adult-train), never on what you test on.");
  AddConfigOptions(app, o);
  o.dataset = "adult-train";
  app.get_option("--dataset")->default_str("adult-train");
  app.add_option("--out", o.out, "Append one JSON line per grid point to this file");
}

namespace {

// "accuracy +- sd %   (misclassification m %)".
std::string MeanSd(double mean, double sd) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << Percent(mean) << " +- " << Percent(sd)
    << " %   (misclassification " << Percent(1 - mean) << " %)";
  return s.str();
}

// The options as the library's typed configuration. Checks that are about
// which flags were given (not about the values) live here; the rest is
// FedSelExperimentConfig::Validate's, and a refusal names the option.
// The data options: a dataset or the user's file.
void ToDataConfig(const TrainOptions& o, FedSelExperimentConfig& c) {
  c.dataset = o.dataset;
  c.data_dir = o.data_dir;
  c.data_file = o.data;
  c.label_column = o.label_column;
  c.pool = o.pool;
  c.feature_center = o.feature_center;
  if (!o.label_column.empty() && o.data.empty()) {
    throw UsageError("--label-column applies to --data FILE.csv only");
  }
}

// The training configuration of `variant` with the options given (the
// library's rules and sentences, as Python's), and the central budget.
void ToTrainingConfig(const TrainOptions& o, const FedSelVariant& variant,
                      FedSelExperimentConfig& c) {
  auto training = FedSelConfigWith(variant, GivenOptions(o.config));
  if (!training.ok()) throw UsageError(training.error());
  c.training = *training;
  if (o.central_epsilon) {
    const Status target =
        CheckCentralTarget(c.training, *o.central_epsilon, o.config.contains("epsilon"));
    if (!target.ok()) throw UsageError(target.error());
  }
  c.central_epsilon = o.central_epsilon;
  c.central_delta = o.central_delta;
}

// The grid --tune and `tune` search: DefaultGrid, with the lists given
// replacing its own (a batch fraction or epochs list also drops the
// shuffled grid's extra schedule: the product asked for is what runs).
FedSelGrid ListedGrid(const TrainOptions& o, const FedSelVariant& variant,
                      const FedSelExperimentConfig& c) {
  FedSelGrid grid = DefaultGrid(c.training);
  if (!o.grid_batch_fraction.empty() || !o.grid_epochs.empty()) grid.extra_schedules.clear();
  if (!o.grid_lr.empty()) grid.learning_rates = o.grid_lr;
  if (!o.grid_batch_fraction.empty()) grid.batch_fractions = o.grid_batch_fraction;
  if (!o.grid_clip.empty()) {
    if (!TraitsOf(variant).whole_vector) {
      throw UsageError("--grid-clip applies to the vector variants only");
    }
    grid.clips = o.grid_clip;
  }
  if (!o.grid_server_lr.empty()) grid.server_lrs = o.grid_server_lr;
  if (!o.grid_server_beta1.empty()) {
    if (c.training.server.kind == ServerOptimizerKind::kFedAvg) {
      throw UsageError("--grid-server-beta1 applies to --server-optimizer momentum, adam and yogi");
    }
    grid.server_beta1s = o.grid_server_beta1;
  }
  if (!o.grid_epochs.empty()) grid.epochs = o.grid_epochs;
  return grid;
}

// The hyper-parameters given as options: held, not searched; one given
// beside its --grid- list is refused.
std::vector<std::string> HeldKeys(const TrainOptions& o) {
  struct Held {
    const char* key;
    const char* flag;
    bool listed;  // its --grid- list was given too
  };
  const Held held[] = {{"learning_rate", "lr", !o.grid_lr.empty()},
                       {"batch_fraction", "batch-fraction", !o.grid_batch_fraction.empty()},
                       {"clip", "clip", !o.grid_clip.empty()},
                       {"tail_average", "tail-average", false},
                       {"server_lr", "server-lr", !o.grid_server_lr.empty()},
                       {"server_beta1", "server-beta1", !o.grid_server_beta1.empty()},
                       {"epochs", "epochs", !o.grid_epochs.empty()}};
  std::vector<std::string> fixed;
  for (const Held& h : held) {
    if (!o.config.contains(h.key)) continue;
    if (h.listed) {
      throw UsageError(std::string("--") + h.flag + " and --grid-" + h.flag +
                       ": give one (the first holds it, the second searches it)");
    }
    fixed.emplace_back(h.key);
  }
  return fixed;
}

// Tuning: its validation, and the grid --tune and `tune` search.
void ToTuningConfig(const TrainOptions& o, const FedSelVariant& variant, bool tune,
                    FedSelExperimentConfig& c) {
  c.tuning.validation_fraction = o.validation_fraction;
  c.tuning.splits = o.tuning_splits;
  c.tuning.seed = o.seed;
  const bool lists =
      !(o.grid_lr.empty() && o.grid_batch_fraction.empty() && o.grid_clip.empty() &&
        o.grid_server_lr.empty() && o.grid_server_beta1.empty() && o.grid_epochs.empty());
  if (!tune && lists) {
    throw UsageError(
        "--grid-lr, --grid-batch-fraction, --grid-clip, --grid-server-lr, --grid-server-beta1, "
        "--grid-epochs need --tune");
  }
  c.tune = tune;
  if (!tune) return;
  c.grid = HoldFixed(ListedGrid(o, variant, c), c.training, HeldKeys(o));
}

FedSelExperimentConfig ToConfig(const TrainOptions& o, bool tune) {
  auto parsed = ParseFedSelVariant(o.variant);
  if (!parsed.ok()) throw UsageError(parsed.error());
  FedSelExperimentConfig c;
  ToDataConfig(o, c);
  ToTrainingConfig(o, *parsed, c);
  ToTuningConfig(o, *parsed, tune, c);
  c.cv = {o.repeats, o.folds, o.seed};
  c.reference = !o.no_reference;
  c.reference_lr = o.reference_lr;
  c.reference_batch_fraction = o.reference_batch_fraction;
  c.threads = o.threads;
  if (Status s = c.Validate(); !s.ok()) throw UsageError(s.error());
  return c;
}

// A refusal from the library: the user's file named by its option, a
// missing dataset file with the data folder's hint.
[[noreturn]] void Refuse(const std::string& error) {
  constexpr std::string_view kFile = "data file: ";
  if (error.starts_with(kFile)) throw UsageError("--data: " + error.substr(kFile.size()));
  throw UsageError(error + DataDirHint(error));
}

void PrintHeader(const TrainOptions& o, const FedSelExperiment& e, std::ostream& out) {
  for (const std::string& w : e.warnings) out << "warning: " << w << "\n";
  const Dataset& data = *e.data;
  out << "fedldp train: " << e.dataset_label << " (" << data.size()
      << " records, d = " << data.dimension;
  if (data.classes > 2) {
    out << ", " << data.classes << " classes: " << LinearParameters(data) << " weights";
  }
  out << "), " << LossName(e.config.training.loss) << ", variant " << o.variant << ", ";
  if (e.test_from > 0) {
    out << o.repeats << " run(s) on the standard split (" << e.test_from << " training rows, "
        << data.size() - e.test_from << " test rows)";
  } else {
    out << o.repeats << " x " << o.folds << "-fold CV";
  }
  out << ", seed " << o.seed << ", " << e.threads << " threads";
  if (e.processes > 1) out << " on each of " << e.processes << " MPI processes";
  out << "\n";
  out.flush();
}

// The accountant's total for a client's own reports, as "(eps, delta) per
// client (rule)".
std::string LocalTotal(const RunPrivacy& p) {
  std::ostringstream s;
  s << "(" << p.total.epsilon << ", " << p.total.delta << ") per client (" << p.rule << ")";
  return s.str();
}

void PrintPrivacy(const TrainOptions& o, const FedSelExperiment& e, std::ostream& out) {
  const FedSelVariant variant = ParseFedSelVariant(o.variant).value();
  const FedSelConfig& config = e.effective;
  const FedSelRun& run = e.result.last;
  const bool vector = TraitsOf(variant).whole_vector;
  const bool gaussian = NeedsDelta(variant);
  if (vector) {
    out << "privacy: " << FedSelVariantName(variant) << " on the whole gradient (l2 clip "
        << config.clip << "), eps " << run.budget.value_epsilon << " per report";
    if (gaussian) out << ", delta " << config.delta << " per report";
    out << ", " << config.epochs << " epoch(s), ";
    if (config.sample_clients && config.shuffle) {
      out << "sampled rounds: " << config.epochs << " reports per client in expectation\n";
    } else {
      out << (config.sample_clients ? "sampled rounds, at most " + std::to_string(config.epochs) +
                                          " reports per client"
                                    : std::string("one report per epoch"));
      // Unshuffled, the accountant's local lines are the statement.
      if (!config.shuffle) out << ": total " << LocalTotal(*e.privacy);
      out << "\n";
    }
  } else {
    out << "privacy: "
        << (variant.is_private() ? run.budget.Statement() : std::string("none (non-private)"))
        << "\n";
  }
  // Shuffled, the line ends the accountant's statement below.
  if (variant.is_private() && !config.shuffle) out << FloatingPointStatement(variant) << "\n";
  if (config.sample_clients) {
    out << "sampled rounds: " << run.plan.batch << " of " << run.plan.batch / run.plan.sampling_rate
        << " clients per round, " << run.plan.rounds
        << " rounds; the most reports one client sent: " << run.most_reports;
    if (config.shuffle) {
      out << " (locally " << run.most_reports << " x " << run.plan.ReportEpsilon()
          << " without the shuffler's help)";
    } else {
      out << ", " << run.declined << " sampled clients declined (budget spent)";
    }
    out << "\n";
  }
  if (config.shuffle && e.privacy) {
    out << "shuffled, each round's reports (at least " << run.smallest_round
        << ") through the shuffler (fedldp account run "
        << AccountRunArguments(*e.accounting, FedSelVariantName(variant)) << "):\n"
        << DescribeRunPrivacy(*e.privacy, FloatingPointStatement(variant));
    if (o.central_epsilon) {
      out << "(the last " << (e.test_from > 0 ? "run" : "fold")
          << "'s figures; every one ran at the largest local eps within central "
          << *o.central_epsilon << ")\n";
    }
  }
}

void PrintResults(const TrainOptions& o, const FedSelExperiment& e, std::ostream& out) {
  const FedSelVariant variant = ParseFedSelVariant(o.variant).value();
  const FedSelConfig& config = e.effective;
  const FedSelRun& run = e.result.last;
  PrintPrivacy(o, e, out);
  if (!e.chosen.empty() && o.tune) {
    out << "chosen on validation rows, per " << (e.test_from > 0 ? "run" : "fold")
        << " (lr, m / N, clip, tail, epochs):";
    for (const FedSelConfig& c : e.chosen) {
      out << " (" << c.learning_rate << ", " << c.batch_fraction << ", " << c.clip << ", "
          << c.tail_average << ", " << c.epochs << ")";
    }
    out << "\n";
  }
  if (config.clients > 0) {
    out << "clients: " << config.clients << ", each the mean gradient of its share of a fold's "
        << "training rows (" << config.partition().Describe() << "); privacy is per client\n";
  }
  if (TraitsOf(variant).whole_vector) {
    out << "clients per iteration m = " << run.batch << ", " << run.iterations
        << " iterations per run\n";
  } else {
    out << "clients per iteration m = " << run.batch << ", Top-k k = " << run.k << ", "
        << run.iterations << " iterations per run, mu = " << run.budget.mu << "\n";
  }
  if (run.selector && *run.selector != variant.selector) {
    out << "note: mu = 0 leaves no budget for selection, so dimensions are sampled uniformly\n";
  }
  if (run.rejected > 0) out << "warning: the server rejected " << run.rejected << " reports\n";
  if (e.stopped()) {
    out << "stopped after " << e.result.folds.size() << " of "
        << (e.test_from > 0 ? o.repeats : o.repeats * o.folds)
        << " runs: the figures below are theirs\n";
  }
  const CrossValidationResult& result = e.result;
  out << "  " << std::left << std::setw(24) << o.variant
      << MeanSd(result.MeanAccuracy(), result.StdAccuracy()) << "\n";
  if (e.reference) {
    out << "  " << std::setw(24) << (o.tune ? "np (non-private, tuned)" : "np (non-private)")
        << MeanSd(e.reference->MeanAccuracy(), e.reference->StdAccuracy()) << "\n";
  }
  out << "  " << std::setw(24) << "majority class" << MeanSd(result.MeanMajority(), 0) << "\n";
  if (!e.learned()) {
    out << "note: " << o.variant
        << " is not better than the majority class: it has learned nothing\n";
  }
  const double rate = static_cast<double>(result.updates) / result.seconds;
  out << "time: " << std::fixed << std::setprecision(2) << result.seconds << " s, "
      << std::setprecision(0) << rate << " client updates/s\n";
}

}  // namespace

int RunTrain(const TrainOptions& o, std::ostream& out, std::ostream& err, Cluster& cluster) {
  const FedSelExperimentConfig config = ToConfig(o, o.tune);
  CheckOut(o.out);
  // Ctrl-C (or SIGTERM) ends the run under way at its next round, unscored;
  // the folds done are printed and recorded. A second one ends the process.
  StopOnSignal stop;
  std::optional<ProgressBar> bar;
  std::string stage;
  FedSelObserver observer;
  observer.started = [&](const FedSelExperiment& e) { PrintHeader(o, e, out); };
  observer.progress = [&](const std::string& label, std::size_t done, std::size_t total) {
    if (label != stage) {
      bar.reset();
      stage = label;
      bar.emplace(label == "reference" ? std::string("np reference")
                  : o.tune             ? o.variant + " (tuning)"
                                       : o.variant,
                  "iterations");
    }
    bar->Update(done, total);
  };
  auto experiment = RunFedSelExperiment(config, observer, stop.token(), cluster);
  bar.reset();
  if (!experiment.ok() && stop.token().stop_requested()) {  // asked for, not a usage error
    out << experiment.error() << ": nothing to report\n";
    return 1;
  }
  if (!experiment.ok()) Refuse(experiment.error());
  PrintResults(o, *experiment, out);
  if (cluster.rank() == 0) AppendOut(o.out, experiment->RecordJson() + "\n");
  if (experiment->weak_reference() && !o.allow_weak_reference) {
    // Every figure above is printed and recorded; the exit status says the
    // comparison is not one to report.
    err << "fedldp train: error: the non-private reference ("
        << PercentText(experiment->reference->MeanAccuracy())
        << " %) does not beat the majority class ("
        << PercentText(experiment->result.MeanMajority())
        << " %): its settings do not fit these data; give it a smaller --reference-lr (now "
        << o.reference_lr << ") or a --reference-batch-fraction, or --allow-weak-reference\n";
    return 1;
  }
  return experiment->stopped() ? 1 : 0;
}

namespace {

// tune's first line: the data, the variant, the budget and the grid.
void PrintTuneStart(const TrainOptions& o, const FedSelExperimentConfig& config,
                    const FedSelVariant& variant, const FedSelTuningRun& t, std::ostream& out) {
  const Dataset& data = *t.data;
  out << "fedldp tune: " << t.dataset_label << " (" << (t.test_from > 0 ? t.test_from : data.size())
      << " training records, d = " << data.dimension << ", " << LinearParameters(data)
      << " weights), variant " << o.variant << ", ";
  if (o.central_epsilon) {
    out << "shuffled, central eps " << *o.central_epsilon << " (delta " << o.central_delta
        << ") per client";
  } else if (variant.is_private()) {
    out << "eps " << config.training.epsilon << " per client";
  } else {
    out << "non-private";
  }
  out << ", " << t.points << " grid point" << (t.points == 1 ? "" : "s") << " x "
      << config.tuning.splits << " split" << (config.tuning.splits == 1 ? "" : "s")
      << " holding out " << 100 * config.tuning.validation_fraction << " % of the rows, seed "
      << o.seed << ", " << t.threads << " threads\n";
  out.flush();
}

// A point's server optimiser in the ranking: lr and beta1 (fedavg: "-").
std::string ServerColumns(const ServerOptimizerConfig& server) {
  std::ostringstream s;
  s << std::setw(11) << server.learning_rate << std::setw(10);
  if (server.kind == ServerOptimizerKind::kFedAvg) {
    s << "-";
  } else {
    s << server.beta1;
  }
  return s.str();
}

// The ten best grid points by score, and how many were refused (and why).
void PrintTuneRanking(const FedSelTuning& tuned, const FedSelVariant& variant,
                      std::vector<const TuningTrial*>& ranked, std::ostream& out) {
  std::size_t refused = 0;
  std::string why;
  for (const TuningTrial& t : tuned.trials) {
    if (t.refused.empty()) {
      ranked.push_back(&t);
    } else if (refused++ == 0) {
      why = t.refused;
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const TuningTrial* a, const TuningTrial* b) { return a->score > b->score; });
  const bool vector = TraitsOf(variant).whole_vector;
  // The server's columns where some point steps other than by the mean.
  const bool server = std::any_of(tuned.trials.begin(), tuned.trials.end(),
                                  [](const auto& t) { return !t.config.server.is_identity(); });
  out << "  rank        lr     m / N      clip      tail" << (server ? "  server lr     beta1" : "")
      << "    epochs   local eps   validation accuracy (sd)   score = accuracy - sd\n";
  for (std::size_t i = 0; i < ranked.size() && i < 10; ++i) {
    const FedSelConfig& c = ranked[i]->config;
    out << std::right << std::setw(6) << i + 1 << std::setw(10) << c.learning_rate << std::setw(10)
        << c.batch_fraction << std::setw(10) << (vector ? std::to_string(c.clip).substr(0, 4) : "-")
        << std::setw(10) << c.tail_average << (server ? ServerColumns(c.server) : "")
        << std::setw(10) << c.epochs << std::setw(12) << std::setprecision(4);
    if (variant.is_private()) {
      out << c.epsilon / c.epochs;
    } else {
      out << "-";
    }
    out << std::setw(17) << std::fixed << std::setprecision(2) << Percent(ranked[i]->accuracy)
        << " % (" << Percent(ranked[i]->sd) << ")" << std::setw(17) << Percent(ranked[i]->score)
        << " %\n"
        << std::defaultfloat << std::setprecision(6);
  }
  if (refused > 0) out << refused << " grid points refused (" << why << ")\n";
}

}  // namespace

int RunTune(const TrainOptions& o, std::ostream& out, std::ostream& err) {
  const FedSelExperimentConfig config = ToConfig(o, /*tune=*/true);
  CheckOut(o.out);
  const FedSelVariant variant = ParseFedSelVariant(o.variant).value();
  std::optional<ProgressBar> bar;
  FedSelTuningObserver observer;
  observer.started = [&](const FedSelTuningRun& t) {
    PrintTuneStart(o, config, variant, t, out);
    bar.emplace(o.variant + " (tuning)", "iterations");
  };
  observer.progress = [&](std::size_t done, std::size_t total) {
    if (bar) bar->Update(done, total);
  };
  // Ctrl-C (or SIGTERM) skips the runs not yet started and ends those under
  // way at their next round: the points that ran on every split are ranked
  // and recorded, no winner is named, and the exit code is 1.
  StopOnSignal stop;
  auto run = RunFedSelTuning(config, observer, stop.token());
  bar.reset();  // cleared before the table
  if (!run.ok()) Refuse(run.error());
  const FedSelTuning& tuned = run->tuning;
  std::vector<const TuningTrial*> ranked;
  PrintTuneRanking(tuned, variant, ranked, out);
  if (tuned.stopped) {
    if (!o.out.empty()) AppendOut(o.out, run->RecordLines());
    out << "stopped: " << ranked.size() << " of " << tuned.trials.size()
        << " grid points ran on every split; no winner is named\n";
    return 1;
  }
  const FedSelConfig& best = tuned.best;
  out << "winner: --lr " << best.learning_rate << " --batch-fraction " << best.batch_fraction;
  if (TraitsOf(variant).whole_vector) out << " --clip " << best.clip;
  out << " --tail-average " << best.tail_average;
  if (!best.server.is_identity()) {
    out << " --server-optimizer " << ServerOptimizerName(best.server.kind) << " --server-lr "
        << best.server.learning_rate;
    if (best.server.kind != ServerOptimizerKind::kFedAvg) {
      out << " --server-beta1 " << best.server.beta1;
    }
  }
  out << " --epochs " << best.epochs << "   (validation " << std::fixed << std::setprecision(2)
      << Percent(tuned.accuracy) << " %, score " << Percent(tuned.score) << " %)\n"
      << std::defaultfloat << std::setprecision(6);
  if (!o.out.empty()) AppendOut(o.out, run->RecordLines());
  (void)err;
  return 0;
}

}  // namespace fedldp::cli
