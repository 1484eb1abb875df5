// fedldp train: one FedSel configuration, cross-validated, beside its two
// references (majority class, non-private model) on the same folds.
#include <fstream>
#include <iomanip>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/data/loaders.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/sim/cross_validation.h"

namespace fedldp::cli {

void SetupTrain(CLI::App& app, TrainOptions& o) {
  app.description(
      "Cross-validated FedSel training (Algorithm 1 of the paper) of an l2-regularised\n"
      "linear model, one record per client. Prints the privacy statement and the\n"
      "accuracy beside the majority-class and non-private references on the same folds.\n"
      "Variants: np, np-rs, np-k, pm, hm, duchi, pm-rp, {exp,pe,ps}-{pm,hm,duchi}[-c][-o],\n"
      "and the control uniform-{pm,hm,duchi}[-o] (uniform selection, not enlarged by d).\n"
      "Options may also come from a TOML/INI file given before the subcommand:\n"
      "  fedldp --config run.toml train   with the options under a [train] section.");
  app.add_option("--dataset", o.dataset,
                 "adult, adult-train, adult-test, a9a, bank, kdd, kdd-full, syn-L-C1-C2[-entry], "
                 "syn-H-C1-C2")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir,
                 "Folder of the dataset files (default $FEDLDP_DATA_DIR, else the repository's data/)");
  app.add_option("--model", o.model, "logistic or svm")->capture_default_str();
  app.add_option("--variant", o.variant, "FedSel variant or baseline")->capture_default_str();
  app.add_option("--epsilon", o.epsilon, "Total budget per client")->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs E")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--batch-fraction", o.batch_fraction, "m / N")->capture_default_str();
  app.add_option("--mu", o.mu, "Share of eps' for selection, or 'auto' (theta-capped rule)")
      ->capture_default_str();
  app.add_option("--theta", o.theta, "Cap of the automatic mu")->capture_default_str();
  app.add_option("--k-fraction", o.k_fraction, "k / d for the Top-k set")->capture_default_str();
  app.add_option("--lr", o.learning_rate, "Learning rate alpha")->capture_default_str();
  app.add_option("--momentum", o.momentum, "Momentum eta in [0, 1)")->capture_default_str();
  app.add_option("--lambda", o.lambda, "l2 regularisation")->capture_default_str();
  app.add_option("--gradient-scaling", o.gradient_scaling,
                 "clip (coordinate-wise to [-1, 1]) or normalize (to max |g_j| = 1)")
      ->capture_default_str();
  app.add_option("--clip", o.clip,
                 "Vector variants (privunitg, fastprojunit, gaussian...): l2 clip norm C of a "
                 "gradient (default 1)");
  app.add_option("--delta", o.delta, "Vector gaussian variants: delta per report (default 1e-6)");
  app.add_flag("--shuffle", o.shuffle,
               "Vector variants: each round's reports pass a shuffler; the statement adds the "
               "per-round central and total (eps, delta) of `fedldp account run`");
  app.add_option("--central-delta", o.central_delta,
                 "With --shuffle: the total delta per client, in [1e-12, 1)")
      ->capture_default_str();
  app.add_option("--tail-average", o.tail_average,
                 "Return the mean of the server's iterates over this final share of the "
                 "iterations, in [0, 1) (0: the last iterate; post-processing, no privacy cost)")
      ->capture_default_str();
  app.add_option("--repeats", o.repeats, "Cross-validation repeats")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--folds", o.folds, "Cross-validation folds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  app.add_option("--seed", o.seed, "Seed of the whole run")->capture_default_str();
  app.add_option("--threads", o.threads, "Threads (0: all cores)")->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_flag("--no-reference", o.no_reference, "Skip the non-private reference run");
  app.add_option("--reference-lr", o.reference_lr,
                 "Learning rate of the non-private reference (the private default diverges "
                 "on Bank without noise)")
      ->capture_default_str();
  app.add_option("--out", o.out, "Append one JSON line of results to this file");
}

namespace {

// "accuracy +- sd %   (misclassification m %)".
std::string Percent(double mean, double sd) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100 * mean << " +- " << 100 * sd
    << " %   (misclassification " << 100 * (1 - mean) << " %)";
  return s.str();
}

}  // namespace

int RunTrain(const TrainOptions& o, std::ostream& out, std::ostream& err) {
  CheckOut(o.out);
  FedSelConfig config;
  auto loss = ParseLoss(o.model);
  if (!loss.ok()) throw UsageError(loss.error());
  config.loss = *loss;
  auto variant = ParseFedSelVariant(o.variant);
  if (!variant.ok()) throw UsageError(variant.error());
  config.variant = o.variant;
  if (auto e = CheckEpsilon(o.epsilon, "--epsilon"); !e.empty()) throw UsageError(e);
  config.epsilon = o.epsilon;
  config.epochs = o.epochs;
  config.batch_fraction = o.batch_fraction;
  config.mu = ParseMu(o.mu);
  config.theta = o.theta;
  config.k_fraction = o.k_fraction;
  config.learning_rate = o.learning_rate;
  config.momentum = o.momentum;
  config.lambda = o.lambda;
  config.tail_average = o.tail_average;
  config.shuffle = o.shuffle;
  auto scaling = ParseGradientScaling(o.gradient_scaling);
  if (!scaling.ok()) throw UsageError(scaling.error());
  config.gradient_scaling = *scaling;
  const bool vector = variant->kind == FedSelVariant::Kind::kVector;
  const bool gaussian = vector && variant->vector_mechanism.starts_with("gaussian");
  if (o.clip && !vector) throw UsageError("--clip applies to the vector variants only");
  if (o.delta && !gaussian) throw UsageError("--delta applies to the gaussian variants only");
  config.clip = o.clip.value_or(1.0);
  config.delta = o.delta.value_or(1e-6);
  if (o.shuffle && !vector) throw UsageError("--shuffle applies to the vector variants only");
  auto data = LoadNamed(o.dataset, DataDir(o.data_dir));
  if (!data.ok()) throw UsageError(data.error() + DataDirHint(data.error()));
  if (data->classes != 2) throw UsageError("dataset " + o.dataset + " is not a binary task");
  // The whole configuration is checked before the header is printed: a
  // refusal is one line on stderr and nothing on stdout.
  auto plan = PlanFedSel(config, data->size(), data->dimension);
  if (!plan.ok()) throw UsageError(plan.error());
  // With the shuffler: what `fedldp account run` states for m reports per
  // round and one report per epoch (checked here, stated after the runs
  // with the m they used).
  const auto shuffled = [&](std::size_t m) {
    RunPrivacyConfig c;
    c.local_epsilon = plan->budget.value_epsilon;
    c.rounds = static_cast<std::uint64_t>(config.epochs);
    c.shuffle = true;
    c.reports_per_round = m;
    c.delta = o.central_delta;
    return AccountRun(c);
  };
  if (o.shuffle) {
    if (gaussian)
      throw UsageError("--shuffle: no amplification is proven for the Gaussian's reports");
    if (auto p = shuffled(plan->smallest_round); !p.ok())
      throw UsageError("--shuffle: " + p.error());
  }

  ThreadPool pool(o.threads);
  const CrossValidationOptions cv{o.repeats, o.folds, o.seed};
  out << "fedldp train: " << o.dataset << " (" << data->size()
      << " records, d = " << data->dimension << "), " << LossName(config.loss) << ", variant "
      << o.variant << ", " << o.repeats << " x " << o.folds << "-fold CV, seed " << o.seed << ", "
      << pool.size() << " threads\n";
  out.flush();
  const CrossValidationResult result = RunCrossValidation(config, *data, cv, pool, o.variant);
  const FedSelRun& run = result.last;
  if (vector) {
    out << "privacy: " << variant->vector_mechanism << " on the whole gradient (l2 clip "
        << config.clip << "), eps " << run.budget.value_epsilon << " per report";
    if (gaussian) out << ", delta " << config.delta << " per report";
    out << ", " << config.epochs << " epoch(s), one report per epoch: total ";
    if (gaussian) {
      out << "(" << run.budget.TotalPerClient() << ", " << config.epochs * config.delta << ")";
    } else {
      out << run.budget.TotalPerClient();
    }
    out << " per client (basic composition)\n";
    if (o.shuffle) {
      out << "shuffled, each round's reports (at least " << run.smallest_round
          << ") through the shuffler (fedldp account run --local-epsilon "
          << run.budget.value_epsilon << " --rounds " << config.epochs
          << " --shuffle --reports-per-round " << run.smallest_round << " --delta "
          << o.central_delta << "):\n"
          << DescribeRunPrivacy(shuffled(run.smallest_round).value());
    }
  } else {
    out << "privacy: "
        << (variant->is_private() ? run.budget.Statement() : std::string("none (non-private)"))
        << "\n";
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
      << Percent(result.MeanAccuracy(), result.StdAccuracy()) << "\n";
  CrossValidationResult reference;
  if (!o.no_reference && o.variant != "np") {
    FedSelConfig np = config;
    np.variant = "np";
    np.learning_rate = o.reference_lr;
    reference = RunCrossValidation(np, *data, cv, pool, "np reference");
    out << "  " << std::setw(24) << "np (non-private)"
        << Percent(reference.MeanAccuracy(), reference.StdAccuracy()) << "\n";
  }
  out << "  " << std::setw(24) << "majority class" << Percent(result.MeanMajority(), 0) << "\n";
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
  AppendOut(o.out, ResultJson(o.dataset, *data, config, cv, result,
                              reference.folds.empty() ? -1 : reference.MeanAccuracy()) +
                       "\n");
  (void)err;
  return 0;
}

}  // namespace fedldp::cli
