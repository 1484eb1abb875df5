// fedldp ldpfl: one LDP-FL training run (Algorithm 1 of Sun, Qian & Chen),
// with the privacy statement, the accuracy per round beside the majority
// class and the noise-free federated model, and where the time went.
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/model/neural_net.h"
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
  app.add_option("--dataset", o.dataset, "mnist, fmnist or cifar10")
      ->check(CLI::IsMember({"mnist", "fmnist", "cifar10"}))
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
                 "twopoint (the paper's, per weight), or privunitg, fastprojunit, "
                 "fastprojunit-corr, gaussian, gaussian-classic on the whole update")
      ->check(CLI::IsMember({"twopoint", "privunitg", "fastprojunit", "fastprojunit-corr",
                             "gaussian", "gaussian-classic"}))
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
  app.add_option("--threads", o.threads, "Torch threads (0: all cores)")->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app.add_option("--seed", o.seed, "Seed of the simulation")->capture_default_str();
  app.add_option("--train-rows", o.train_rows,
                 "Train on the first N rows of the training split only (0: all)");
  app.add_option("--test-rows", o.test_rows, "Test on the first N rows of the test split (0: all)");
  app.add_option("--out", o.out, "Append one JSON line of results to this file");
}

int RunLdpFl(const LdpFlOptions& o, std::ostream& out, std::ostream& err) {
  CheckOut(o.out);
  if (!(o.epsilon > 0 && o.epsilon <= 500)) throw UsageError("--epsilon must be in (0, 500]");
  if (o.radius && !(*o.radius > 0)) throw UsageError("--radius must be > 0");
  if (!(o.fraction > 0 && o.fraction <= 1)) throw UsageError("--fraction must be in (0, 1]");
  if (o.batch < 1) throw UsageError("--batch must be >= 1");
  if (o.threads < 0) throw UsageError("--threads must be >= 0");
  if (o.perturb == "updates" && o.range != "fixed") {
    throw UsageError("--perturb updates takes --range fixed");
  }
  auto loaded = LoadImageSplit(o.dataset, o.data_dir);
  if (!loaded.ok()) throw UsageError(loaded.error());
  TrainTest data = std::move(loaded).value();
  TrainTest* split = &data;
  auto first = [](Dataset& d, std::size_t n) {
    if (n == 0 || n >= d.size()) return;
    std::vector<std::size_t> rows(n);
    std::iota(rows.begin(), rows.end(), std::size_t{0});
    d = d.Subset(rows);
  };
  first(split->train, o.train_rows);
  first(split->test, o.test_rows);
  if (o.threads > 0) NeuralNet::SetThreads(o.threads);

  LdpFlConfig config;
  config.arch = o.dataset == "cifar10" ? "vgg" : "cnn";
  if (!o.model.empty()) {
    // A bare file name would read as an architecture: name it as a path.
    config.arch = o.model.find('/') == std::string::npos ? "./" + o.model : o.model;
    auto net = NeuralNet::Create(config.arch, 0);
    if (!net.ok()) throw UsageError("--model: " + net.error());
    if (const Status s = net->CheckInput(split->train); !s.ok()) {
      throw UsageError("--model: " + s.error());
    }
  }
  config.clients = o.clients;
  config.fraction = o.fraction;
  config.rounds = o.rounds;
  config.local_epochs = o.local_epochs;
  config.batch = o.batch;
  config.learning_rate = o.learning_rate.value_or(o.dataset == "cifar10" ? 0.015 : 0.03);
  config.epsilon = o.epsilon;
  config.adaptive = o.range == "adaptive";
  config.perturb_updates = o.perturb == "updates";
  config.fixed_range = {o.center, o.radius.value_or(o.dataset == "mnist"    ? 0.075
                                                    : o.dataset == "fmnist" ? 0.015
                                                                            : 1.0)};
  config.dirichlet_alpha = o.dirichlet;
  config.standardize_inputs = !o.raw_inputs;
  config.schedule =
      o.schedule == "delay" ? ShuffleSchedule::kRandomDelay : ShuffleSchedule::kPermutation;
  config.randomizer = o.randomizer;
  config.clip = o.clip;
  config.disjoint_rounds = o.disjoint_rounds;
  const bool vector = o.randomizer != "twopoint";

  if (Status s = CheckLdpFlConfig(config, split->train.size()); !s.ok()) {
    throw UsageError(s.error());
  }
  out << "fedldp ldpfl: " << o.dataset << " (" << split->train.size() << " train, "
      << split->test.size() << " test), " << config.arch << ", n = " << config.clients
      << " clients (" << (config.dirichlet_alpha > 0 ? "Dirichlet non-IID" : "IID")
      << "), fraction " << config.fraction << (config.disjoint_rounds ? " (disjoint rounds)" : "")
      << ", " << config.rounds << " rounds, E = " << config.local_epochs << ", B = " << config.batch
      << ", lr " << config.learning_rate
      << (o.raw_inputs ? ", raw [0, 1] inputs" : ", standardised inputs") << ", seed " << o.seed
      << "\n";
  if (vector) {
    out << "randomizer: " << o.randomizer << " on the whole update W - W_global, l2 clip "
        << config.clip << ", eps " << config.epsilon << " per report\n";
  } else {
    out << "ranges: "
        << (config.adaptive ? std::string("adaptive per layer")
                            : "fixed (c, r) = (" + std::to_string(config.fixed_range.center) +
                                  ", " + std::to_string(config.fixed_range.radius) + ")")
        << (config.perturb_updates ? ", on the update W - W_global" : ", on the weights") << "\n";
  }
  out.flush();

  auto train_once = [&](bool is_private, const std::string& label) {
    LdpFlConfig c = config;
    c.is_private = is_private;
    ProgressBar bar(label);
    auto run = TrainLdpFl(c, split->train, split->test, o.seed, [&](const LdpFlRound& r) {
      bar.Update(static_cast<std::size_t>(r.round), static_cast<std::size_t>(c.rounds));
    });
    if (!run.ok()) throw UsageError(run.error());
    return std::move(run).value();
  };
  const LdpFlRun run = train_once(true, vector ? o.randomizer : "ldp-fl");
  if (run.vector_privacy) {
    out << "privacy (fedldp account run " << AccountRunArguments(run.vector_privacy->config)
        << "; at most " << LdpFlReportsPerClient(config) << " report(s) per client):\n"
        << DescribeRunPrivacy(*run.vector_privacy);
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
  }
  out << std::fixed;
  double train_s = 0, perturb_s = 0, shuffle_s = 0, aggregate_s = 0;
  out.precision(2);
  for (const auto& r : run.rounds) {
    out << "  round " << r.round << ": accuracy " << 100 * r.accuracy << " %\n";
    train_s += r.train_seconds, perturb_s += r.perturb_seconds, shuffle_s += r.shuffle_seconds;
    aggregate_s += r.aggregate_seconds;
  }
  std::optional<LdpFlRun> reference;
  if (!o.no_reference) reference = train_once(false, "noise-free");
  out << "  " << (vector ? o.randomizer : std::string("ldp-fl")) << " (eps " << o.epsilon << ")   "
      << 100 * run.final_accuracy() << " %\n";
  if (reference) out << "  noise-free FL      " << 100 * reference->final_accuracy() << " %\n";
  out << "  majority class     " << 100 * run.majority << " %\n";
  if (run.final_accuracy() <= run.majority) {
    out << "  the private model is not better than the majority class: it learned nothing\n";
  }
  const double total = train_s + perturb_s + shuffle_s + aggregate_s;
  out << "time: " << total << " s, " << total / run.rounds.size() << " s per round; local training "
      << 100 * train_s / total << " %, perturbation " << 100 * perturb_s / total << " %, shuffling "
      << 100 * shuffle_s / total << " %, aggregation " << 100 * aggregate_s / total << " %\n";
  if (!o.out.empty()) {
    nlohmann::ordered_json j;
    StartRecord(j);
    j["dataset"] = o.dataset;
    j["arch"] = config.arch;  // cnn, vgg, or the --model file
    j["range"] = o.range;
    j["perturb"] = o.perturb;
    j["randomizer"] = o.randomizer;
    j["clip"] = o.clip;
    j["epsilon"] = o.epsilon;
    j["clients"] = config.clients;
    j["fraction"] = config.fraction;
    j["dirichlet_alpha"] = config.dirichlet_alpha;
    j["disjoint_rounds"] = config.disjoint_rounds;
    j["rounds"] = config.rounds;
    j["local_epochs"] = config.local_epochs;
    j["batch"] = config.batch;
    j["lr"] = config.learning_rate;
    j["standardized"] = !o.raw_inputs;
    j["train_rows"] = split->train.size();
    j["test_rows"] = split->test.size();
    j["seed"] = o.seed;
    j["accuracy"] = Percent(run.final_accuracy());
    j["accuracy_per_round"] = nlohmann::json::array();
    j["per_round"] = nlohmann::json::array();
    for (const LdpFlRound& r : run.rounds) {
      j["accuracy_per_round"].push_back(Percent(r.accuracy));
      j["per_round"].push_back({{"round", r.round},
                                {"accuracy", Percent(r.accuracy)},
                                {"train_seconds", r.train_seconds},
                                {"perturb_seconds", r.perturb_seconds},
                                {"shuffle_seconds", r.shuffle_seconds},
                                {"aggregate_seconds", r.aggregate_seconds}});
    }
    j["majority"] = Percent(run.majority);
    // Absent (not run) is null.
    j["noise_free"] =
        reference ? nlohmann::json(Percent(reference->final_accuracy())) : nlohmann::json();
    j["per_round_ldp"] = run.privacy.per_round_ldp;
    j["plain_composition"] = run.privacy.plain_composition;
    j["shuffle_bound_applies"] = run.privacy.shuffle_applies;
    if (run.vector_privacy) {
      j["total_epsilon"] = run.vector_privacy->total.epsilon;
      j["total_delta"] = run.vector_privacy->total.delta;
    } else if (run.privacy.shuffle_applies) {
      j["total_epsilon"] = run.privacy.shuffled.epsilon;
      j["total_delta"] = run.privacy.shuffled.delta;
    } else {
      j["total_epsilon"] = run.privacy.plain_composition;
      j["total_delta"] = 0;
    }
    j["seconds"] = total;
    AppendOut(o.out, j.dump() + "\n");
  }

  (void)err;
  return 0;
}

}  // namespace fedldp::cli
