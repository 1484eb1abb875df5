// fedldp train: one FedSel configuration, cross-validated, beside its two
// references (majority class, non-private model) on the same folds.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/sim/cross_validation.h"
#include "fedldp/sim/tuning.h"
#include "progress.h"

namespace fedldp::cli {

namespace {

// The options that describe one configuration, shared by `train` and `tune`.
void AddConfigOptions(CLI::App& app, TrainOptions& o) {
  app.add_option("--dataset", o.dataset,
                 "adult, adult-train, adult-test, a9a, bank, kdd, kdd-full, syn-L-C1-C2[-entry], "
                 "syn-H-C1-C2, or mnist, fmnist (10 classes, softmax; their standard split: "
                 "--repeats runs, no folds)")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir,
                 "Folder of the dataset files (default $FEDLDP_DATA_DIR, else the repository's data/)");
  app.add_option("--pool", o.pool,
                 "mnist, fmnist: average each F x F block of pixels (2: 14 x 14 pixels, 1,960 "
                 "weights), a smaller model for private training")
      ->capture_default_str()
      ->check(CLI::Range(1, 28));
  app.add_option("--data", o.data,
                 "Your own data instead of --dataset: a CSV file (.csv, .csv.gz; numeric "
                 "features scaled to about [-1, 1], one label column) or LIBSVM text");
  app.add_option("--label-column", o.label_column,
                 "With --data FILE.csv: the label column's header name or 0-based index "
                 "(default: the last column)");
  app.add_option("--clients", o.clients,
                 "Split the training rows among N clients, each reporting the mean gradient of "
                 "its rows (default: one client per row, as in the papers)");
  app.add_option("--dirichlet-alpha", o.dirichlet_alpha,
                 "With --clients: 0 gives equal IID shards; alpha > 0 a Dirichlet(alpha) label "
                 "skew per client (small alpha: few classes each)")
      ->capture_default_str();
  app.add_option("--model", o.model, "logistic or svm")->capture_default_str();
  app.add_option("--variant", o.variant, "FedSel variant or baseline")->capture_default_str();
  app.add_option("--epsilon", o.epsilon, "Total budget per client (default 2)");
  app.add_option("--epochs", o.epochs, "Epochs E")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--batch-fraction", o.batch_fraction,
                 "m / N (default 0.01; vector variants: their tuned default)");
  app.add_option("--mu", o.mu, "Share of eps' for selection, or 'auto' (theta-capped rule)")
      ->capture_default_str();
  app.add_option("--theta", o.theta, "Cap of the automatic mu")->capture_default_str();
  app.add_option("--k-fraction", o.k_fraction, "k / d for the Top-k set")->capture_default_str();
  app.add_option("--lr", o.learning_rate,
                 "Learning rate alpha (default 4; vector variants: their tuned default)");
  app.add_option("--momentum", o.momentum,
                 "Momentum eta in [0, 1) of FedSel's two-stage clients (ps-pm, exp-hm...); the "
                 "flat, compressed, vector, np and np-rs variants have none")
      ->capture_default_str();
  app.add_option("--lambda", o.lambda, "l2 regularisation")->capture_default_str();
  app.add_option("--gradient-scaling", o.gradient_scaling,
                 "clip (coordinate-wise to [-1, 1]) or normalize (to max |g_j| = 1)")
      ->capture_default_str();
  app.add_option("--clip", o.clip,
                 "Vector variants (privunitg, fastprojunit, gaussian...): l2 clip norm C of a "
                 "gradient (default: the variant's tuned value)");
  app.add_option("--delta", o.delta, "Vector gaussian variants: delta per report (default 1e-6)");
  app.add_flag("--shuffle", o.shuffle,
               "Private variants with pure eps-LDP reports: each round's reports pass a "
               "shuffler (rounds of at least m); the statement adds the per-round central and "
               "total (eps, delta) of `fedldp account run`. The variants' defaults are tuned "
               "for local eps 2: shuffled, use --tune, or on Adult the frontier's choice "
               "(privunitg: --epochs 4 --batch-fraction 0.2 --lr 8 --clip 1)");
  app.add_flag("--sample-clients", o.sample_clients,
               "Each round samples m = (m / N) N clients uniformly, for E N / m rounds, instead of "
               "epochs of disjoint rounds; with --shuffle, the shuffler draws them in secret "
               "from the server and each round is amplified by sampling; without it, a client "
               "declines after E reports");
  app.add_option("--central-delta", o.central_delta,
                 "With --shuffle: the total delta per client, in [1e-12, 1)")
      ->capture_default_str();
  app.add_option("--central-epsilon", o.central_epsilon,
                 "With --shuffle, instead of --epsilon: the total central eps per client; each "
                 "fold runs at the largest local eps the accountant allows for it");
  app.add_option("--validation-fraction", o.validation_fraction,
                 "With --tune: the share of a fold's training rows held out for validation")
      ->capture_default_str();
  app.add_option("--tuning-splits", o.tuning_splits,
                 "With --tune: validation splits averaged per grid point")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--tail-average", o.tail_average,
                 "Return the mean of the server's iterates over this final share of the "
                 "iterations, in [0, 1) (0: the last iterate; post-processing, no privacy cost)")
      ->capture_default_str();
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
  app.add_option("--grid-epochs", o.grid_epochs,
                 "With --tune / tune: the epochs tried (default: --epochs only)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1000));
  app.add_option("--seed", o.seed, "Seed of the whole run")->capture_default_str();
  app.add_option("--threads", o.threads, "Threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
}

}  // namespace

void SetupTrain(CLI::App& app, TrainOptions& o) {
  app.description(
      "Cross-validated FedSel training (Algorithm 1 of the paper) of an l2-regularised\n"
      "linear model, one record per client. Prints the privacy statement and the\n"
      "accuracy beside the majority-class and non-private references on the same folds.\n"
      "Variants: np, np-rs, np-k, pm, hm, duchi, pm-rp, {exp,pe,ps}-{pm,hm,duchi}[-c][-o],\n"
      "and the control uniform-{pm,hm,duchi}[-o] (uniform selection, not enlarged by d);\n"
      "beyond the paper: privunitg, fastprojunit, fastprojunit-corr, gaussian,\n"
      "gaussian-classic privatise the whole l2-clipped gradient (docs/frontier.md).\n"
      "Options may also come from a TOML/INI file given before the subcommand:\n"
      "  fedldp --config run.toml train   with the options under a [train] section.");
  AddConfigOptions(app, o);
  app.add_flag("--tune", o.tune,
               "Nested cross-validation: each fold chooses lr, m / N, clip (vector variants) on "
               "a validation share of its training rows (DefaultGrid), never its test rows");
  app.add_option("--repeats", o.repeats, "Cross-validation repeats")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--folds", o.folds, "Cross-validation folds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  app.add_flag("--no-reference", o.no_reference, "Skip the non-private reference run");
  app.add_option("--reference-lr", o.reference_lr,
                 "Learning rate of the non-private reference (the private default diverges "
                 "on Bank without noise)")
      ->capture_default_str();
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
  s << std::fixed << std::setprecision(2) << 100 * mean << " +- " << 100 * sd
    << " %   (misclassification " << 100 * (1 - mean) << " %)";
  return s.str();
}

// What `fedldp account run` states for a run of `plan` (FedSelRunPrivacy).
RunPrivacyConfig Accounted(const TrainOptions& o, const FedSelConfig& config,
                           const FedSelPlan& plan) {
  return FedSelRunPrivacy(plan, config, o.central_delta);
}

// The configuration the options describe, checked whole, with the data it
// runs on; throws UsageError.
struct TrainSetup {
  FedSelVariant variant;
  FedSelConfig config;
  Dataset data;
  TuningOptions tuning;
  PreparePoint prepare;  // a grid point as it runs on n clients (--central-epsilon)
  // > 0: data holds an image dataset's training rows, then its test rows
  // from here (CrossValidationOptions::test_from).
  std::size_t test_from = 0;
  // The rows tuning may read: all (empty), or a fixed split's training rows.
  std::vector<std::size_t> TuningRows() const {
    std::vector<std::size_t> rows(test_from);
    std::iota(rows.begin(), rows.end(), std::size_t{0});
    return rows;
  }
};

// The grid --tune and `tune` search: DefaultGrid, with the lists given
// replacing its own (a batch fraction or epochs list also drops the shuffled
// grid's extra schedule: the product asked for is what runs); values are
// checked when a point is planned.
FedSelGrid GridFor(const TrainOptions& o, const FedSelVariant& variant) {
  FedSelGrid grid = DefaultGrid(variant, o.shuffle);
  if (!o.grid_batch_fraction.empty() || !o.grid_epochs.empty()) grid.extra_schedules.clear();
  if (!o.grid_lr.empty()) grid.learning_rates = o.grid_lr;
  if (!o.grid_batch_fraction.empty()) grid.batch_fractions = o.grid_batch_fraction;
  if (!o.grid_clip.empty()) {
    if (variant.kind != FedSelVariant::Kind::kVector) {
      throw UsageError("--grid-clip applies to the vector variants only");
    }
    grid.clips = o.grid_clip;
  }
  if (!o.grid_epochs.empty()) grid.epochs = o.grid_epochs;
  return grid;
}

// The dataset as the headers name it: "mnist pooled 2 x 2" with --pool 2.
std::string DatasetLabel(const TrainOptions& o) {
  if (!o.data.empty()) return o.data;
  if (o.pool <= 1) return o.dataset;
  const std::string f = std::to_string(o.pool);
  return o.dataset + " pooled " + f + " x " + f;
}

// Datasets that come with their test set: train on it, test on it.
bool IsImageDataset(const std::string& name) { return name == "mnist" || name == "fmnist"; }

TrainSetup MakeTrainSetup(const TrainOptions& o) {
  auto parsed = ParseFedSelVariant(o.variant);
  if (!parsed.ok()) throw UsageError(parsed.error());
  TrainSetup setup;
  setup.variant = *parsed;
  const FedSelVariant* variant = &setup.variant;
  FedSelConfig& config = setup.config;
  config = DefaultFedSelConfig(o.variant);
  auto loss = ParseLoss(o.model);
  if (!loss.ok()) throw UsageError(loss.error());
  config.loss = *loss;
  if (o.central_epsilon && o.epsilon) {
    throw UsageError("--central-epsilon sets the local budget: give it or --epsilon, not both");
  }
  if (o.central_epsilon && !o.shuffle) throw UsageError("--central-epsilon needs --shuffle");
  if (o.epsilon) {
    if (auto e = CheckEpsilon(*o.epsilon, "--epsilon"); !e.empty()) throw UsageError(e);
    config.epsilon = *o.epsilon;
  }
  if (o.central_epsilon) {
    if (auto e = CheckEpsilon(*o.central_epsilon, "--central-epsilon"); !e.empty()) {
      throw UsageError(e);
    }
  }
  config.epochs = o.epochs;
  if (o.batch_fraction) config.batch_fraction = *o.batch_fraction;
  config.mu = ParseMu(o.mu);
  config.theta = o.theta;
  config.k_fraction = o.k_fraction;
  if (o.learning_rate) config.learning_rate = *o.learning_rate;
  config.momentum = o.momentum;
  config.lambda = o.lambda;
  if (o.tail_average) config.tail_average = *o.tail_average;
  auto scaling = ParseGradientScaling(o.gradient_scaling);
  if (!scaling.ok()) throw UsageError(scaling.error());
  config.gradient_scaling = *scaling;
  const bool vector = variant->kind == FedSelVariant::Kind::kVector;
  const bool gaussian = vector && variant->vector_mechanism.starts_with("gaussian");
  if (o.clip && !vector) throw UsageError("--clip applies to the vector variants only");
  if (o.delta && !gaussian) throw UsageError("--delta applies to the gaussian variants only");
  if (o.clip) config.clip = *o.clip;
  if (o.delta) config.delta = *o.delta;
  if (o.shuffle) {
    if (!variant->is_private())
      throw UsageError("--shuffle: variant " + o.variant + " is not private");
    if (gaussian) {
      throw UsageError("--shuffle: no amplification is proven for the Gaussian's reports");
    }
  }
  config.shuffle = o.shuffle;
  config.sample_clients = o.sample_clients;
  if (o.dirichlet_alpha != 0 && o.clients == 0) {
    throw UsageError("--dirichlet-alpha needs --clients (the rows are split among them)");
  }
  config.clients = o.clients;
  config.dirichlet_alpha = o.dirichlet_alpha;
  TuningOptions& tuning = setup.tuning;
  tuning.validation_fraction = o.validation_fraction;
  tuning.splits = o.tuning_splits;
  tuning.seed = o.seed;
  if (const Status s = tuning.Validate(); !s.ok()) throw UsageError(s.error());
  if (!o.data.empty()) {
    if (o.pool > 1) throw UsageError("--pool applies to the image datasets (mnist, fmnist) only");
    auto loaded = LoadDataFile(o.data, o.label_column);
    if (!loaded.ok()) throw UsageError("--data: " + loaded.error());
    setup.data = std::move(loaded).value();
  } else if (!o.label_column.empty()) {
    throw UsageError("--label-column applies to --data FILE.csv only");
  } else if (IsImageDataset(o.dataset)) {
    // One dataset, the training rows first, then the test rows.
    auto split = LoadImageSplit(o.dataset, o.data_dir);
    if (!split.ok()) throw UsageError(split.error());
    TrainTest parts = std::move(split).value();
    if (o.pool > 1) {
      for (Dataset* part : {&parts.train, &parts.test}) {
        auto pooled = AveragePool(*part, static_cast<std::size_t>(o.pool));
        if (!pooled.ok()) throw UsageError("--pool: " + pooled.error());
        *part = std::move(pooled).value();
      }
    }
    setup.data = std::move(parts.train);
    setup.data.name = o.dataset;
    setup.test_from = setup.data.size();
    for (std::size_t i = 0; i < parts.test.size(); ++i) {
      setup.data.Append(parts.test.row(i), parts.test.labels[i]);
    }
  } else {
    if (o.pool > 1) throw UsageError("--pool applies to the image datasets (mnist, fmnist) only");
    auto loaded = LoadNamed(o.dataset, DataDir(o.data_dir));
    if (!loaded.ok()) throw UsageError(loaded.error() + DataDirHint(loaded.error()));
    setup.data = std::move(loaded).value();
  }
  const Dataset* data = &setup.data;
  // The whole configuration is checked before the header is printed: a
  // refusal is one line on stderr and nothing on stdout.
  const std::size_t fold_rows =
      setup.test_from > 0 ? setup.test_from
                          : data->size() - data->size() / static_cast<std::size_t>(o.folds);
  setup.prepare = [d = LinearParameters(*data), central = o.central_epsilon,
                   delta = o.central_delta](const FedSelConfig& c,
                                            std::size_t clients) -> Result<FedSelConfig> {
    if (!central) return c;
    return CalibrateToCentral(c, clients, d, *central, delta);
  };
  auto prepared = setup.prepare(config, fold_rows);
  if (!prepared.ok()) throw UsageError(prepared.error());
  auto plan = PlanFedSel(*prepared, fold_rows, LinearParameters(*data));
  if (!plan.ok()) throw UsageError(plan.error());
  // With the shuffler: what `fedldp account run` states for the plan
  // (checked here, stated after the runs with the rounds they used).
  if (o.shuffle) {
    if (auto p = AccountRun(Accounted(o, *prepared, *plan)); !p.ok()) {
      throw UsageError("--shuffle: " + p.error());
    }
  }
  return setup;
}

}  // namespace

int RunTrain(const TrainOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.tune && !(o.grid_lr.empty() && o.grid_batch_fraction.empty() && o.grid_clip.empty() &&
                   o.grid_epochs.empty())) {
    throw UsageError("--grid-lr, --grid-batch-fraction, --grid-clip, --grid-epochs need --tune");
  }
  CheckOut(o.out);
  TrainSetup setup = MakeTrainSetup(o);
  const FedSelVariant* variant = &setup.variant;
  FedSelConfig config = setup.config;
  const Dataset* data = &setup.data;
  const TuningOptions& tuning = setup.tuning;
  const PreparePoint& prepare = setup.prepare;
  const bool vector = variant->kind == FedSelVariant::Kind::kVector;
  const bool gaussian = vector && variant->vector_mechanism.starts_with("gaussian");

  ThreadPool pool(o.threads);
  CrossValidationOptions cv{o.repeats, o.folds, o.seed};
  cv.test_from = setup.test_from;
  out << "fedldp train: " << DatasetLabel(o) << " (" << data->size()
      << " records, d = " << data->dimension;
  if (data->classes > 2) {
    out << ", " << data->classes << " classes: " << LinearParameters(*data) << " weights";
  }
  out << "), " << LossName(config.loss) << ", variant " << o.variant << ", ";
  if (cv.test_from > 0) {
    out << o.repeats << " run(s) on the standard split (" << cv.test_from << " training rows, "
        << data->size() - cv.test_from << " test rows)";
  } else {
    out << o.repeats << " x " << o.folds << "-fold CV";
  }
  out << ", seed " << o.seed << ", " << pool.size() << " threads\n";
  out.flush();
  CrossValidationResult result;
  std::vector<FedSelConfig> chosen;  // per fold, with --tune or --central-epsilon
  if (o.tune || o.central_epsilon) {
    ProgressBar bar(o.tune ? o.variant + " (tuning)" : o.variant);
    const FedSelGrid grid = o.tune ? GridFor(o, *variant) : FedSelGrid{};
    auto tuned =
        CrossValidateTuned(config, grid, *data, cv, tuning, pool, prepare,
                           [&](std::size_t done, std::size_t total) { bar.Update(done, total); });
    if (!tuned.ok()) throw UsageError(tuned.error());
    result = std::move(tuned->result);
    chosen = std::move(tuned->chosen);
    config = chosen.back();
  } else {
    result = RunCrossValidation(config, *data, cv, pool, o.variant);
  }
  const FedSelRun& run = result.last;
  if (vector) {
    out << "privacy: " << variant->mechanism << " on the whole gradient (l2 clip " << config.clip
        << "), eps " << run.budget.value_epsilon << " per report";
    if (gaussian) out << ", delta " << config.delta << " per report";
    out << ", " << config.epochs << " epoch(s), ";
    if (config.sample_clients && o.shuffle) {
      out << "sampled rounds: " << config.epochs << " reports per client in expectation\n";
    } else {
      out << (config.sample_clients ? "sampled rounds, at most " + std::to_string(config.epochs) +
                                          " reports per client: total "
                                    : std::string("one report per epoch: total "));
      if (gaussian) {
        out << "(" << run.budget.TotalPerClient() << ", " << config.epochs * config.delta << ")";
      } else {
        out << run.budget.TotalPerClient();
      }
      out << " per client (basic composition)\n";
    }
  } else {
    out << "privacy: "
        << (variant->is_private() ? run.budget.Statement() : std::string("none (non-private)"))
        << "\n";
  }
  if (config.sample_clients) {
    out << "sampled rounds: " << run.plan.batch << " of " << run.plan.batch / run.plan.sampling_rate
        << " clients per round, " << run.plan.rounds
        << " rounds; the most reports one client sent: " << run.most_reports;
    if (o.shuffle) {
      out << " (locally " << run.most_reports << " x " << run.plan.ReportEpsilon()
          << " without the shuffler's help)";
    } else {
      out << ", " << run.declined << " sampled clients declined (budget spent)";
    }
    out << "\n";
  }
  if (o.shuffle) {
    const RunPrivacyConfig accounted = Accounted(o, config, run.plan);
    out << "shuffled, each round's reports (at least " << run.smallest_round
        << ") through the shuffler (fedldp account run " << AccountRunArguments(accounted) << "):\n"
        << DescribeRunPrivacy(AccountRun(accounted).value());
    if (o.central_epsilon) {
      out << "(the last " << (cv.test_from > 0 ? "run" : "fold")
          << "'s figures; every one ran at the largest local eps within central "
          << *o.central_epsilon << ")\n";
    }
  }
  if (!chosen.empty() && o.tune) {
    out << "chosen on validation rows, per " << (cv.test_from > 0 ? "run" : "fold")
        << " (lr, m / N, clip, tail, epochs):";
    for (const FedSelConfig& c : chosen) {
      out << " (" << c.learning_rate << ", " << c.batch_fraction << ", " << c.clip << ", "
          << c.tail_average << ", " << c.epochs << ")";
    }
    out << "\n";
  }
  if (config.clients > 0) {
    out << "clients: " << config.clients << ", each the mean gradient of its share of a fold's "
        << "training rows (";
    if (config.dirichlet_alpha > 0) {
      out << "Dirichlet(" << config.dirichlet_alpha << ") label skew";
    } else {
      out << "equal IID shards";
    }
    out << "); privacy is per client\n";
  }
  if (vector) {
    out << "clients per iteration m = " << run.batch << ", " << run.iterations
        << " iterations per run\n";
  } else {
    out << "clients per iteration m = " << run.batch << ", Top-k k = " << run.k << ", "
        << run.iterations << " iterations per run, mu = " << run.budget.mu << "\n";
  }
  if (!run.selector.empty() && run.selector != variant->selector) {
    out << "note: mu = 0 leaves no budget for selection, so dimensions are sampled uniformly\n";
  }
  if (run.rejected > 0) out << "warning: the server rejected " << run.rejected << " reports\n";
  out << "  " << std::left << std::setw(24) << o.variant
      << MeanSd(result.MeanAccuracy(), result.StdAccuracy()) << "\n";
  CrossValidationResult reference;
  if (!o.no_reference && o.variant != "np") {
    // The non-private model as FedSel's paper trains it (m = 0.01 N, the
    // last iterate), whatever the private variant's batch and averaging:
    // a reference weakened by a private run's settings would flatter it.
    FedSelConfig np = DefaultFedSelConfig("np");
    np.loss = config.loss;
    np.epochs = config.epochs;
    np.lambda = config.lambda;
    np.gradient_scaling = config.gradient_scaling;
    if (o.batch_fraction) np.batch_fraction = *o.batch_fraction;
    np.learning_rate = o.reference_lr;
    reference = RunCrossValidation(np, *data, cv, pool, "np reference");
    out << "  " << std::setw(24) << "np (non-private)"
        << MeanSd(reference.MeanAccuracy(), reference.StdAccuracy()) << "\n";
  }
  out << "  " << std::setw(24) << "majority class" << MeanSd(result.MeanMajority(), 0) << "\n";
  const bool learned =
      result.MeanAccuracy() - 2 * result.StdAccuracy() / std::sqrt(result.folds.size()) >
      result.MeanMajority();
  if (!learned) {
    out << "note: " << o.variant
        << " is not better than the majority class: it has learned nothing\n";
  }
  const double rate = static_cast<double>(result.updates) / result.seconds;
  out << "time: " << std::fixed << std::setprecision(2) << result.seconds << " s, "
      << std::setprecision(0) << rate << " client updates/s\n";
  AppendOut(o.out, CrossValidationRecord(
                       o.data.empty() ? o.dataset : o.data, *data, config, cv, result,
                       reference.folds.empty() ? std::nullopt
                                               : std::optional<double>(reference.MeanAccuracy()))
                           .dump() +
                       "\n");
  (void)err;
  return 0;
}

int RunTune(const TrainOptions& o, std::ostream& out, std::ostream& err) {
  CheckOut(o.out);
  TrainSetup setup = MakeTrainSetup(o);
  const FedSelGrid grid = GridFor(o, setup.variant);
  const std::size_t points = grid.Points(setup.config).size();
  ThreadPool pool(o.threads);
  out << "fedldp tune: " << DatasetLabel(o) << " ("
      << (setup.test_from > 0 ? setup.test_from : setup.data.size())
      << " training records, d = " << setup.data.dimension << ", " << LinearParameters(setup.data)
      << " weights), variant " << o.variant << ", ";
  if (o.central_epsilon) {
    out << "shuffled, central eps " << *o.central_epsilon << " (delta " << o.central_delta
        << ") per client";
  } else if (setup.variant.is_private()) {
    out << "eps " << setup.config.epsilon << " per client";
  } else {
    out << "non-private";
  }
  out << ", " << points << " grid points x " << setup.tuning.splits << " splits holding out "
      << 100 * setup.tuning.validation_fraction << " % of the rows, seed " << o.seed << ", "
      << pool.size() << " threads\n";
  out.flush();
  const std::vector<std::size_t> rows = setup.TuningRows();
  std::optional<ProgressBar> bar(std::in_place, o.variant + " (tuning)");
  auto tuned = TuneFedSel(setup.config, grid, setup.data, rows, setup.tuning, pool, setup.prepare,
                          [&](std::size_t done, std::size_t total) { bar->Update(done, total); });
  bar.reset();  // cleared before the table
  if (!tuned.ok()) throw UsageError(tuned.error());
  std::vector<const TuningTrial*> ranked;
  std::size_t refused = 0;
  std::string why;
  for (const TuningTrial& t : tuned->trials) {
    if (t.refused.empty()) {
      ranked.push_back(&t);
    } else if (refused++ == 0) {
      why = t.refused;
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const TuningTrial* a, const TuningTrial* b) { return a->score > b->score; });
  const bool vector = setup.variant.kind == FedSelVariant::Kind::kVector;
  out << "  rank        lr     m / N      clip      tail    epochs   local eps   validation "
         "accuracy (sd)   score = accuracy - sd\n";
  for (std::size_t i = 0; i < ranked.size() && i < 10; ++i) {
    const FedSelConfig& c = ranked[i]->config;
    out << std::right << std::setw(6) << i + 1 << std::setw(10) << c.learning_rate << std::setw(10)
        << c.batch_fraction << std::setw(10) << (vector ? std::to_string(c.clip).substr(0, 4) : "-")
        << std::setw(10) << c.tail_average << std::setw(10) << c.epochs << std::setw(12)
        << std::setprecision(4);
    if (setup.variant.is_private()) {
      out << c.epsilon / c.epochs;
    } else {
      out << "-";
    }
    out << std::setw(17) << std::fixed << std::setprecision(2) << 100 * ranked[i]->accuracy
        << " % (" << 100 * ranked[i]->sd << ")" << std::setw(17) << 100 * ranked[i]->score << " %\n"
        << std::defaultfloat << std::setprecision(6);
  }
  if (refused > 0) out << refused << " grid points refused (" << why << ")\n";
  const FedSelConfig& best = tuned->best;
  out << "winner: --lr " << best.learning_rate << " --batch-fraction " << best.batch_fraction;
  if (vector) out << " --clip " << best.clip;
  out << " --tail-average " << best.tail_average << " --epochs " << best.epochs << "   (validation "
      << std::fixed << std::setprecision(2) << 100 * tuned->accuracy << " %, score "
      << 100 * tuned->score << " %)\n"
      << std::defaultfloat << std::setprecision(6);
  if (!o.out.empty()) {
    std::string lines;
    for (const TuningTrial& t : tuned->trials) {
      nlohmann::ordered_json j;
      StartRecord(j);
      j["dataset"] = o.data.empty() ? o.dataset : o.data;
      j["pool"] = o.pool;
      AddFedSelConfigFields(j, t.config);
      j["validation_fraction"] = setup.tuning.validation_fraction;
      j["splits"] = setup.tuning.splits;
      j["seed"] = o.seed;
      const bool ran = t.refused.empty();
      j["validation_accuracy"] = ran ? nlohmann::json(Percent(t.accuracy)) : nlohmann::json();
      j["validation_sd"] = ran ? nlohmann::json(Percent(t.sd)) : nlohmann::json();
      j["score"] = ran ? nlohmann::json(Percent(t.score)) : nlohmann::json();
      // Why the point was refused, or null when it ran.
      j["refused"] = ran ? nlohmann::json() : nlohmann::json(t.refused);
      lines += j.dump() + "\n";
    }
    AppendOut(o.out, lines);
  }
  (void)err;
  return 0;
}

}  // namespace fedldp::cli
