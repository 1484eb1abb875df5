// fedldp ldpfl: one LDP-FL training run (Algorithm 1 of Sun, Qian & Chen),
// with the privacy statement, the accuracy per round beside the majority
// class and the noise-free federated model, and where the time went.

#include <optional>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/sim/ldpfl_experiment.h"
#include "progress.h"

namespace fedldp::cli {

void SetupLdpFl(CLI::App& app, LdpFlOptions& o) {
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
  app.add_option("--model", o.model,
                 "Your own network, a TorchScript file (torch.jit.save): takes (batch, 784) "
                 "rows, returns (batch, classes) logits or log-probabilities; each parameter "
                 "tensor is a layer with its own range (default: the paper's CNN; VGG for "
                 "cifar10)");
  app.add_option("--range", o.range, "fixed (c, r) for every layer, or adaptive per layer")
      ->check(CLI::IsMember({"fixed", "adaptive"}))
      ->capture_default_str();
  app.add_option("--perturb", o.perturb,
                 "What clients perturb: their weights (Algorithm 2), or their update W - W_global "
                 "(fixed range only)")
      ->check(CLI::IsMember({"weights", "updates"}))
      ->capture_default_str();
  app.add_option("--center", o.center, "Fixed range: centre c")->capture_default_str();
  app.add_option("--radius", o.radius,
                 "Fixed range: radius r > 0 (default 0.075 mnist, 0.015 fmnist, 1 cifar10)");
  app.add_option("--epsilon", o.epsilon,
                 "Budget per weight (twopoint); per report (vector randomizers)")
      ->capture_default_str();
  app.add_option("--randomizer", o.randomizer,
                 "twopoint (the paper's, per weight), or a vector randomizer on the whole "
                 "update")
      ->check(CLI::IsMember(LdpFlRandomizerNames()))
      ->capture_default_str();
  app.add_option("--clip", o.clip, "Vector randomizers: l2 clip norm of a client's update")
      ->capture_default_str();
  app.add_option("--clients", o.clients, "Clients n (equal shards)")->capture_default_str();
  app.add_option("--fraction", o.fraction, "Fraction of clients per round")->capture_default_str();
  app.add_flag("--disjoint-rounds", o.disjoint_rounds,
               "Cut each epoch of floor(1 / fraction) rounds from one random order, so a client "
               "reports at most once per epoch (default: a fresh subset every round, and the "
               "privacy statement counts every round)");
  app.add_option("--rounds", o.rounds, "Communication rounds")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--local-epochs", o.local_epochs, "Local epochs E")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Local mini-batch size B")->capture_default_str();
  app.add_option("--lr", o.learning_rate, "Learning rate (default 0.03; 0.015 for cifar10)");
  app.add_option("--dirichlet", o.dirichlet, "Non-IID: Dirichlet alpha per class (0: IID)")
      ->capture_default_str();
  app.add_option("--schedule", o.schedule,
                 "Shuffler: permutation, or delay (Algorithm 3's random delays)")
      ->check(CLI::IsMember({"permutation", "delay"}))
      ->capture_default_str();
  app.add_flag("--raw-inputs", o.raw_inputs,
               "Feed [0, 1] pixels (default: standardised by the training set's mean and sd)");
  app.add_flag("--no-reference", o.no_reference, "Skip the noise-free federated reference");
  app.add_option("--threads", o.threads,
                 "Clients trained at once (0: one per core, shared among MPI processes)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--seed", o.seed, "Seed of the simulation")->capture_default_str();
  app.add_option("--train-rows", o.train_rows,
                 "Train on the first N rows of the training split only (0: all)");
  app.add_option("--test-rows", o.test_rows, "Test on the first N rows of the test split (0: all)");
  app.add_option("--out", o.out, "Append one JSON line of results to this file");
}

namespace {

// The options as the library's typed configuration.
LdpFlExperimentConfig ToConfig(const LdpFlOptions& o) {
  auto dataset = ParseImageDataset(o.dataset);
  if (!dataset.ok()) throw UsageError(dataset.error());
  LdpFlExperimentConfig c = DefaultLdpFlExperiment(*dataset);
  c.data_dir = o.data_dir;
  c.model = o.model;
  LdpFlConfig& t = c.training;
  t.clients = o.clients;
  t.fraction = o.fraction;
  t.rounds = o.rounds;
  t.local_epochs = o.local_epochs;
  t.batch = o.batch;
  if (o.learning_rate) t.learning_rate = *o.learning_rate;
  t.epsilon = o.epsilon;
  t.adaptive = o.range == "adaptive";
  t.perturb_updates = o.perturb == "updates";
  t.fixed_range.center = o.center;
  if (o.radius) t.fixed_range.radius = *o.radius;
  t.dirichlet_alpha = o.dirichlet;
  t.standardize_inputs = !o.raw_inputs;
  t.schedule =
      o.schedule == "delay" ? ShuffleSchedule::kRandomDelay : ShuffleSchedule::kPermutation;
  auto randomizer = ParseLdpFlRandomizer(o.randomizer);
  if (!randomizer.ok()) throw UsageError(randomizer.error());
  t.vector = *randomizer;
  t.clip = o.clip;
  t.disjoint_rounds = o.disjoint_rounds;
  c.train_rows = o.train_rows;
  c.test_rows = o.test_rows;
  c.reference = !o.no_reference;
  c.threads = o.threads;
  c.seed = o.seed;
  return c;
}

void PrintHeader(const LdpFlExperiment& e, std::ostream& out) {
  const LdpFlConfig& c = e.config.training;
  out << "fedldp ldpfl: " << ImageDatasetName(e.config.dataset) << " (" << e.train_rows
      << " train, " << e.test_rows << " test), " << c.arch << ", n = " << c.clients << " clients ("
      << (c.dirichlet_alpha > 0 ? "Dirichlet non-IID" : "IID") << "), fraction " << c.fraction
      << (c.disjoint_rounds ? " (disjoint rounds)" : "") << ", " << c.rounds
      << " rounds, E = " << c.local_epochs << ", B = " << c.batch << ", lr " << c.learning_rate
      << (c.standardize_inputs ? ", standardised inputs" : ", raw [0, 1] inputs") << ", seed "
      << e.config.seed;
  if (e.processes > 1) out << ", clients spread over " << e.processes << " MPI processes";
  out << "\n";
  if (c.vector) {
    out << "randomizer: " << LdpFlRandomizerName(c) << " on the whole update W - W_global, l2 clip "
        << c.clip << ", eps " << c.epsilon << " per report\n";
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
    out << "model: " << run.parameters << " parameters; report " << run.report_bytes
        << " bytes (one double per weight)\n";
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

  out << std::fixed;
  out.precision(2);
  double train_s = 0, perturb_s = 0, shuffle_s = 0, aggregate_s = 0;
  for (const auto& r : run.rounds) {
    out << "  round " << r.round << ": accuracy " << Percent(r.accuracy) << " %\n";
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

int RunLdpFl(const LdpFlOptions& o, std::ostream& out, std::ostream& err, Cluster& cluster) {
  CheckOut(o.out);
  const LdpFlExperimentConfig config = ToConfig(o);
  if (Status s = config.Validate(); !s.ok()) throw UsageError(s.error());
  // Ctrl-C (or SIGTERM) stops after the current round; what ran is printed
  // and recorded. A second one ends the process.
  StopOnSignal stop;
  std::optional<ProgressBar> bar;
  LdpFlObserver observer;
  observer.started = [&](const LdpFlExperiment& e) { PrintHeader(e, out); };
  observer.round = [&](bool reference, const LdpFlRound& r, int rounds) {
    if (r.round == 1 || !bar) {
      bar.reset();
      bar.emplace(reference                ? "noise-free"
                  : config.training.vector ? LdpFlRandomizerName(config.training)
                                           : "ldp-fl");
    }
    bar->Update(static_cast<std::size_t>(r.round), static_cast<std::size_t>(rounds));
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
