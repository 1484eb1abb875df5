// fedldp ldpfl: one LDP-FL training run (Algorithm 1 of Sun, Qian & Chen),
// with the privacy statement, the accuracy per round beside the majority
// class and the noise-free federated model, and where the time went.

#include <cmath>
#include <optional>

#include "cli.h"
#include "commands.h"
#include "config_options.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/sim/ldpfl_experiment.h"
#include "progress.h"

namespace fedldp::cli {

void SetupLdpFl(CLI::App& app, LdpFlRunOptions& o) {
  app.description(
      "LDP-FL (Sun, Qian & Chen, IJCAI 2021): every selected client trains locally,\n"
      "perturbs every weight with the two-point mechanism over its layer's range and\n"
      "reports one bit per weight through the parameter shuffler; the server averages.\n"
      "Prints the privacy statement (per weight, plain composition, shuffle model),\n"
      "the test accuracy per round beside the majority class and the noise-free\n"
      "federated model (same seed), the report size and the time per stage.\n"
      "--randomizer privunitg (fastprojunit, gaussian, ...) instead privatises each\n"
      "client's whole update, l2-clipped to --clip, at --epsilon per report.");
  app.add_option("--dataset", o.dataset, "An image dataset")
      ->check(CLI::IsMember(DatasetNames(true)))
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir,
                 "Folder of the dataset (default: data/mnist, /usr/share/datasets/fashion-mnist)");
  BindOptions(app, LdpFlOptions(), LdpFlConfig{}, o.config);
  app.add_flag("--no-reference", o.no_reference, "Skip the noise-free federated reference");
  app.add_option("--threads", o.threads,
                 "Clients trained at once (0: one per core, shared among MPI processes)")
      ->capture_default_str()
      ->check(Within(kWorkerThreads));
  app.add_option("--seed", o.seed, "Seed of the simulation")->capture_default_str();
  app.add_option("--train-rows", o.train_rows,
                 "Train on the first N rows of the training split only (0: all)");
  app.add_option("--test-rows", o.test_rows, "Test on the first N rows of the test split (0: all)");
  app.add_option("--validation-rows", o.validation_rows,
                 "Hold N of the training rows out (drawn with --seed) and score on them instead "
                 "of the test split: choose hyper-parameters here, then run without it (0: off)");
  app.add_option("--out", o.out, "Append one JSON line of results to this file");
}

namespace {

// The options as the library's typed configuration: the dataset's
// defaults, then the options given.
LdpFlExperimentConfig ToConfig(const LdpFlRunOptions& o) {
  auto dataset = ParseImageDataset(o.dataset);
  if (!dataset.ok()) throw UsageError(dataset.error());
  LdpFlExperimentConfig c = DefaultLdpFlExperiment(*dataset);
  c.data_dir = o.data_dir;
  auto training = LdpFlConfigWith(c.training, GivenOptions(o.config));
  if (!training.ok()) throw UsageError(training.error());
  c.training = std::move(training).value();
  c.train_rows = o.train_rows;
  c.test_rows = o.test_rows;
  c.validation_rows = o.validation_rows;
  c.reference = !o.no_reference;
  c.threads = o.threads;
  c.seed = o.seed;
  return c;
}

void PrintHeader(const LdpFlExperiment& e, std::ostream& out) {
  const LdpFlConfig& c = e.config.training;
  out << "fedldp ldpfl: " << ImageDatasetName(e.config.dataset) << " (" << e.train_rows
      << " train, " << e.test_rows
      << (e.validation() ? " validation held out of the training split, scored instead of the test"
                         : " test")
      << "), " << c.arch << ", n = " << c.clients << " clients (" << c.partition().Describe()
      << "), fraction " << c.fraction << (c.disjoint_rounds ? " (disjoint rounds)" : "") << ", "
      << c.rounds << " rounds, E = " << c.local_epochs << ", B = " << c.batch << ", lr "
      << c.learning_rate << (c.standardize_inputs ? ", standardised inputs" : ", raw [0, 1] inputs")
      << ", seed " << e.config.seed;
  if (e.processes > 1) out << ", clients spread over " << e.processes << " MPI processes";
  out << "\n";
  out << DescribeServer(c.server, c.averaging, c.rounds) << "\n";
  if (c.vector) {
    out << "randomizer: " << LdpFlRandomizerName(c) << " on the whole update W - W_global, l2 clip "
        << c.clip << ", eps " << c.epsilon << " per report";
    if (c.central_epsilon > 0) {
      out << " (the largest whose run meets central eps " << c.central_epsilon << ", delta "
          << c.delta << ")";
    }
    out << "\n";
  } else {
    out << "ranges: "
        << (c.adaptive ? std::string("adaptive per layer")
                       : "fixed (c, r) = (" + std::to_string(c.fixed_range.center) + ", " +
                             std::to_string(c.fixed_range.radius) + ")")
        << (c.perturb_updates ? ", on the update W - W_global" : ", on the weights") << "\n";
  }
  out.flush();
}

void PrintResults(const LdpFlExperiment& e, std::ostream& out) {
  const LdpFlConfig& config = e.config.training;
  const LdpFlRun& run = e.run;
  const bool vector = config.vector.has_value();
  const std::string name = vector ? LdpFlRandomizerName(config) : "ldp-fl";
  if (run.vector_privacy) {
    out << "privacy (fedldp account run "
        << AccountRunArguments(run.vector_privacy->config, VectorMechanismName(*config.vector))
        << "; at most " << LdpFlReportsPerClient(config) << " report(s) per client):\n"
        << DescribeRunPrivacy(*run.vector_privacy, FloatingPointStatement(config.vector));
    out << "model: " << run.parameters << " parameters"
        << (config.freeze.empty() ? ""
                                  : ", " + std::to_string(run.trained) + " trained (" +
                                        config.freeze + " frozen at initialisation)")
        << "; report " << run.report_bytes << " bytes (one double per trained weight)\n";
  } else {
    out << DescribeLdpFlPrivacy(run.privacy);
    out << "model: " << run.parameters << " parameters; report " << run.report_bytes
        << " bytes (1 bit per weight + (c, r) per layer) vs " << run.float32_bytes
        << " as float32 (" << std::fixed;
    out.precision(1);
    out << static_cast<double>(run.float32_bytes) / static_cast<double>(run.report_bytes)
        << "x smaller)\n";
    out << FloatingPointStatement(config.vector) << "\n";
  }

  out << "clients: " << run.client_step << "\n";
  out << std::fixed;
  out.precision(2);
  double train_s = 0, perturb_s = 0, shuffle_s = 0, aggregate_s = 0;
  for (const auto& r : run.rounds) {
    if (!std::isnan(r.accuracy)) {
      out << "  round " << r.round << ": accuracy " << Percent(r.accuracy) << " %\n";
    }
    train_s += r.train_seconds, perturb_s += r.perturb_seconds, shuffle_s += r.shuffle_seconds;
    aggregate_s += r.aggregate_seconds;
  }
  if (e.stopped()) {
    out << "stopped after " << run.rounds.size() << " of " << config.rounds
        << " rounds (the privacy statement covers all " << config.rounds << ")\n";
  }
  out << "  " << name << " (eps " << config.epsilon << ")   " << Percent(run.final_accuracy())
      << " %\n";
  if (e.reference)
    out << "  noise-free FL      " << Percent(e.reference->final_accuracy()) << " %\n";
  out << "  majority class     " << Percent(run.majority) << " %\n";
  if (run.final_accuracy() <= run.majority) {
    out << "  the private model is not better than the majority class: it learned nothing\n";
  }
  const double total = train_s + perturb_s + shuffle_s + aggregate_s;
  if (!run.rounds.empty()) {
    out << "time: " << total << " s, " << total / static_cast<double>(run.rounds.size())
        << " s per round; local training " << 100 * train_s / total << " %, perturbation "
        << 100 * perturb_s / total << " %, shuffling " << 100 * shuffle_s / total
        << " %, aggregation " << 100 * aggregate_s / total << " %\n";
  }
}

}  // namespace

int RunLdpFl(const LdpFlRunOptions& o, std::ostream& out, std::ostream& err, Cluster& cluster) {
  CheckOut(o.out);
  const LdpFlExperimentConfig config = ToConfig(o);
  if (Status s = config.Validate(); !s.ok()) throw UsageError(s.error());
  // Ctrl-C (or SIGTERM) stops after the current round; what ran is printed
  // and recorded. A second one ends the process, and so does the first
  // after kStopGrace when the network is the user's (its forward may never
  // return).
  StopOnSignal stop(IsTorchScriptFile(config.training.arch) ? std::optional(kStopGrace)
                                                            : std::nullopt);
  std::optional<ProgressBar> bar;
  std::string tested;  // the latest tested round's accuracy, shown while the run goes on
  LdpFlObserver observer;
  observer.started = [&](const LdpFlExperiment& e) { PrintHeader(e, out); };
  observer.round = [&](bool reference, const LdpFlRound& r, int rounds) {
    if (r.round == 1 || !bar) {
      bar.reset();
      tested.clear();
      bar.emplace(reference                ? "noise-free"
                  : config.training.vector ? LdpFlRandomizerName(config.training)
                                           : "ldp-fl",
                  "rounds");
    }
    if (!std::isnan(r.accuracy)) {
      tested = "round " + std::to_string(r.round) + ": " + PercentText(r.accuracy) + " %";
    }
    bar->Update(static_cast<std::size_t>(r.round), static_cast<std::size_t>(rounds), tested);
  };
  auto experiment = RunLdpFlExperiment(config, observer, stop.token(), cluster);
  bar.reset();
  if (!experiment.ok()) throw UsageError(experiment.error());
  PrintResults(*experiment, out);
  if (!o.out.empty() && cluster.rank() == 0) AppendOut(o.out, experiment->RecordJson() + "\n");
  (void)err;
  return experiment->stopped() ? 1 : 0;
}

}  // namespace fedldp::cli
