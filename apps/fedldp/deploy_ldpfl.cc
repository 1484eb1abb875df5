// fedldp serve --protocol ldpfl / client --shuffler / shuffle: the LDP-FL
// deployment as separate processes.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/base/files.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/services.h"
#include "fedldp/random/secure_rng.h"

namespace fedldp::cli {
namespace {

double Accuracy(const LdpFlTaskSpec& spec, std::span<const double> w, const Dataset& test) {
  auto net = NeuralNet::Create(spec.config.arch, 0).value();
  net.SetInputStandardization(spec.input_mean, spec.input_sd);
  const std::vector<float> f(w.begin(), w.end());
  net.SetWeights(f);
  return net.Accuracy(test);
}

}  // namespace

int RunServeLdpFl(const ServeOptions& o, std::ostream& out, std::ostream& err) {
  const std::string dataset = o.dataset.empty() ? "mnist" : o.dataset;
  if (dataset != "mnist" && dataset != "fmnist") {
    throw UsageError("LDP-FL deployments run on mnist or fmnist, not " + dataset);
  }
  if (o.perturb == "updates" && o.range != "fixed") {
    throw UsageError("--perturb updates takes --range fixed");
  }
  auto log = [&err](const std::string& line) { err << Stamp() << " serve: " << line << std::endl; };
  auto split = LoadImageSplit(dataset, o.data_dir);
  if (!split.ok()) throw UsageError(split.error());
  const Dataset test =
      split->test.Subset(ParseRows(o.eval_rows, split->test.size(), "--eval-rows"));
  const auto train_rows = ParseRows(o.train_rows, split->train.size(), "--train-rows");
  if (o.shuffler_token_file.empty()) {
    throw UsageError("LDP-FL needs --shuffler-token-file (created if absent)");
  }
  LdpFlConfig c;
  c.arch = "cnn";
  c.epsilon = o.epsilon.value_or(1.0);
  c.rounds = o.rounds;
  c.local_epochs = o.local_epochs;
  c.batch = o.batch;
  c.learning_rate = o.learning_rate.value_or(0.03);
  c.fraction = o.fraction;
  c.adaptive = o.range == "adaptive";
  c.perturb_updates = o.perturb == "updates";
  c.fixed_range = {o.center, o.radius.value_or(dataset == "mnist" ? 0.075 : 0.015)};
  c.randomizer = o.randomizer;
  c.disjoint_rounds = o.disjoint_rounds;
  if (o.clip && c.randomizer == "twopoint") {
    throw UsageError("--clip applies to the vector randomizers (--randomizer privunitg, ...)");
  }
  if (o.clip) c.clip = *o.clip;
  if (c.randomizer != "twopoint" && o.perturb == "weights" && o.range == "adaptive") {
    throw UsageError("a vector randomizer privatises the update: no --range adaptive");
  }
  // The inputs' standardisation over the training rows: public constants of
  // the dataset, announced with the task (the simulator's, for those rows).
  RoundPolicy policy;
  policy.deadline = std::chrono::milliseconds(o.deadline_ms);
  policy.stale_after = std::chrono::milliseconds(o.stale_ms);
  policy.min_participation = o.min_participation;
  const std::string task_id = o.task.empty() ? "ldpfl-" + dataset : o.task;
  // The task is checked (with a stand-in key) before the key pair and the
  // shuffler's token are created: a refused serve leaves no files behind.
  {
    auto check = MakeLdpFlTask(task_id, c, o.users, split->train, train_rows,
                               std::string(32, '\0'), o.chunk);
    if (!check.ok()) throw UsageError(check.error());
    if (Status why = LdpFlCoordinator::Check(*check, policy); !why.ok())
      throw UsageError(why.error());
  }
  const std::string key_file = o.key_file.empty() ? o.state + ".key" : o.key_file;
  ServerKeys keys = Keys(key_file, log);
  const std::string shuffler_token = ShufflerToken(o.shuffler_token_file, log);
  auto made = MakeLdpFlTask(task_id, c, o.users, split->train, train_rows, keys.public_key,
                            o.chunk);
  if (!made.ok()) throw UsageError(made.error());
  LdpFlTaskSpec spec = std::move(made).value();
  SecureRng rng;
  auto net = NeuralNet::Create(c.arch, rng());
  if (!net.ok()) throw UsageError(net.error());
  const std::vector<float> init = net->GetWeights();

  auto opened = ServerState::Open(o.state);
  if (!opened.ok()) throw UsageError(opened.error());
  ServerState state = std::move(opened).value();
  spec.deployment = state.deployment();
  if (Status s = state.BindTask(EncodeLdpFlTask(spec)); !s.ok()) {
    throw UsageError(s.error() + " (the state file was made for another task or key)");
  }
  if (state.tokens() == 0) {
    throw UsageError("no client is enrolled in " + o.state + ": run fedldp enrol --state " +
                     o.state + " --count N first");
  }
  const double majority = test.MajorityRate();
  PendingModels pending;
  std::uint64_t evaluated_round = 0;
  double last_accuracy = 0;
  const auto evaluate = [&](std::uint64_t round, const std::vector<double>& w) {
    last_accuracy = Accuracy(spec, w, test);
    evaluated_round = round;
    log("round " + std::to_string(round) + " of " + std::to_string(c.rounds) + ": accuracy " +
        Pct(last_accuracy) + " on " + std::to_string(test.size()) + " test rows (majority class " +
        Pct(majority) + ")");
  };
  auto coordinator = LdpFlCoordinator::Create(
      spec, policy, std::move(state), keys, std::vector<double>(init.begin(), init.end()), log,
      [&](std::uint64_t round, std::span<const double> w) { pending.Push(round, w); });
  if (!coordinator.ok()) throw UsageError(coordinator.error());
  LdpFlCoordinator& coord = **coordinator;
  TlsFiles tls;
  tls.certificate = o.tls_cert;
  tls.key = o.tls_key;
  tls.insecure = o.insecure;
  CatchSignals();
  // Started before anything is said of the task: a port in use is one line.
  auto server = CoordinatorServer::Start(coord, o.address, tls, shuffler_token);
  if (!server.ok()) throw UsageError(server.error());
  if (spec.vector()) {
    // The simulator's statement (TrainLdpFl): rounds of per_round shuffled
    // reports; the server draws the users, so no amplification by sampling.
    RunPrivacyConfig account;
    account.local_epsilon = c.epsilon;
    account.rounds = spec.reports_per_user();
    account.shuffle = true;
    account.reports_per_round = spec.per_round();
    account.delta = c.delta;
    auto accounted = AccountRun(account);
    if (!accounted.ok()) throw UsageError("the accountant: " + accounted.error());
    std::ostringstream line;
    line << "task " << spec.id << ": " << c.randomizer << " on the whole update (l2 clip " << c.clip
         << "), " << spec.weights() << " weights in " << spec.chunks().size()
         << " sealed pieces per report; eps " << c.epsilon
         << " per report without trusting the shuffler";
    log(line.str());
    err << "privacy (fedldp account run " << AccountRunArguments(account) << "; at most "
        << spec.reports_per_user() << " report(s) per user)"
        << ":\n"
        << DescribeRunPrivacy(*accounted);
  } else {
    const auto privacy =
        AccountLdpFl(c.epsilon, spec.weights(), spec.reports_per_user(), spec.per_round());
    log("task " + spec.id + ": " + std::to_string(spec.weights()) + " weights in " +
        std::to_string(spec.chunks().size()) + " sealed pieces per report; eps " +
        std::to_string(c.epsilon) + " per weight, so d eps = " +
        std::to_string(spec.ReportEpsilon()) + " per report without trusting the shuffler");
    err << DescribeLdpFlPrivacy(privacy);
  }
  log("listening on " + o.address + (tls.enabled() ? " (TLS)" : "") +
      (coord.stats().started ? "" : "; waiting for " + std::to_string(spec.users) + " users"));
  while (!g_stop.load() && !(*server)->failed() && !coord.stats().finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pending.Drain(evaluate);
  }
  pending.Drain(evaluate);
  const auto s = coord.stats();
  if (s.finished) std::this_thread::sleep_for(policy.stale_after);  // let everyone hear it
  (*server)->Shutdown();
  if ((*server)->failed()) {
    err << "serve: failed: the state could not be saved; start again to resume\n";
    return 1;
  }
  if (!s.finished) {
    log("stopped after " + std::to_string(s.round) + " rounds; start again to resume");
    return 0;
  }
  // The last round's model was evaluated as it closed, unless this start
  // found the task already finished.
  const double accuracy =
      evaluated_round == s.round ? last_accuracy : Accuracy(spec, coord.weights(), test);
  out << "deployed LDP-FL on " << dataset << ": accuracy " << Pct(accuracy) << " (majority class "
      << Pct(majority) << "), " << s.round << " rounds, " << s.rounds_without_update
      << " without update, " << s.counted << " reports counted, " << s.pieces_rejected
      << " pieces rejected\n";
  if (!o.out.empty()) {
    nlohmann::ordered_json f;
    f["command"] = "serve";
    StartRecord(f);
    f["protocol"] = "ldpfl";
    f["dataset"] = dataset;
    f["randomizer"] = c.randomizer;
    f["epsilon"] = c.epsilon;
    f["rounds"] = s.round;
    f["users"] = spec.users;
    f["accuracy"] = Percent(accuracy);
    f["majority"] = Percent(majority);
    f["rounds_without_update"] = s.rounds_without_update;
    f["reports_counted"] = s.counted;
    f["batches"] = s.batches;
    f["pieces_rejected"] = s.pieces_rejected;
    AppendOut(o.out, f.dump() + "\n");
  }

  return 0;
}

int RunClientLdpFl(const ClientOptions& o, const std::string& token, std::ostream& out,
                   std::ostream& err) {
  const std::string dataset = o.dataset == "adult" ? "mnist" : o.dataset;
  Dataset data;
  if (o.data_file.empty()) {
    auto split = LoadImageSplit(dataset, o.data_dir);
    if (!split.ok()) throw UsageError(split.error());
    data = std::move(split->train);
  } else {
    data = LoadClientFile(o, LibsvmLabels::kClassNumbers);
  }
  const auto rows = TakePart(ParseRows(o.rows, data.size(), "--rows"), o.part);
  if (o.users > rows.size()) {
    throw UsageError("--users " + std::to_string(o.users) + " exceeds the " +
                     std::to_string(rows.size()) + " local rows");
  }
  std::vector<std::vector<std::size_t>> shards(o.users);
  for (std::size_t u = 0; u < o.users; ++u) {
    const std::size_t a = u * rows.size() / o.users, b = (u + 1) * rows.size() / o.users;
    shards[u].assign(rows.begin() + static_cast<std::ptrdiff_t>(a),
                     rows.begin() + static_cast<std::ptrdiff_t>(b));
  }
  NeuralNet::SetThreads(o.threads);
  LdpFlClientOptions c;
  c.address = o.server;
  c.shuffler = o.shuffler;
  c.token = token;
  c.ledger = o.ledger;
  c.budget = o.budget;
  c.tls.ca = o.tls_ca;
  c.tls.insecure = o.insecure;
  c.shuffler_tls.ca = o.shuffler_ca;
  c.shuffler_tls.insecure = o.insecure;
  c.stop = [] { return g_stop.load(); };
  c.log = [&err](const std::string& line) { err << Stamp() << " client: " << line << std::endl; };
  CatchSignals();
  c.log("hosting " + std::to_string(o.users) + " users on rows " + std::to_string(rows.front()) +
        ".." + std::to_string(rows.back()) + " of " +
        (o.data_file.empty() ? dataset + " (training split)" : o.data_file) + "; server " +
        o.server + ", shuffler " + o.shuffler);
  auto summary = RunLdpFlClient(c, data, std::move(shards));
  if (!summary.ok()) {
    err << "client: failed: " << summary.error() << FeaturesHint(o, summary.error()) << "\n";
    return 1;
  }
  out << "client: " << (summary->finished ? "task finished" : "stopped") << "; " << summary->rounds
      << " rounds, " << summary->reports << " reports handed to the shuffler, " << summary->refused
      << " refused\n";
  return 0;
}

void SetupShuffle(CLI::App& app, ShuffleOptions& o) {
  app.description(
      "Stand between LDP-FL clients and the server, run by a party other than the server.\n"
      "Clients hand over their reports as pieces sealed to the server's key (the shuffler\n"
      "cannot read them). The shuffler keeps one submission per user and round (the server\n"
      "vouches for each), and forwards a batch only when it holds at least --min-batch users\n"
      "and everyone the server still waits for, or the deadline nears: contributors sorted,\n"
      "every chunk's pieces in an order of its own, so no piece can be linked to a client.");
  app.add_option("--address", o.address, "host:port clients reach the shuffler on")
      ->capture_default_str();
  app.add_option("--server", o.server, "The server's address")->capture_default_str();
  app.add_option("--token-file", o.token_file, "The shuffler's token (serve --shuffler-token-file)")
      ->required();
  app.add_option("--min-batch", o.min_batch, "Users per forwarded batch, at least")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->capture_default_str();
  app.add_option("--flush-before-ms", o.flush_before_ms,
                 "Forward what is held this long before the round's deadline")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  app.add_option("--tls-cert", o.tls_cert, "Certificate chain (PEM): take clients over TLS");
  app.add_option("--tls-key", o.tls_key, "Private key (PEM) of --tls-cert");
  app.add_option("--server-ca", o.server_ca, "Trust this certificate for the server (TLS)");
  app.add_flag("--insecure", o.insecure,
               "Allow plaintext on a non-loopback address (tokens and reports cross the network "
               "in clear)");
}

int RunShuffle(const ShuffleOptions& o, std::ostream& out, std::ostream& err) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    throw UsageError("--tls-cert and --tls-key go together");
  }
  auto log = [&err](const std::string& line) {
    err << Stamp() << " shuffle: " << line << std::endl;
  };
  ShufflerServerOptions s;
  s.address = o.address;
  CheckPlaintext(o.address, o.tls_cert, o.insecure, "--tls-cert and --tls-key", err);
  CheckPlaintext(o.server, o.server_ca, o.insecure, "--server-ca", err);
  s.tls.certificate = o.tls_cert;
  s.tls.key = o.tls_key;
  s.tls.insecure = o.insecure;
  s.server = o.server;
  s.server_tls.ca = o.server_ca;
  s.server_tls.insecure = o.insecure;
  s.shuffler_token = ReadToken(o.token_file, "--token-file");
  s.log = log;
  // Ctrl-C (or SIGTERM) shuts the shuffler down; it says what it forwarded.
  StopOnSignal stop;
  auto summary = RunShuffler(
      s, {.min_batch = o.min_batch, .flush_before = std::chrono::milliseconds(o.flush_before_ms)},
      stop.token());
  if (!summary.ok()) throw UsageError(summary.error());
  const auto& stats = summary->stats;
  out << "shuffle: " << (summary->finished ? "task finished" : "stopped") << "; " << stats.forwarded
      << " users' reports forwarded in " << stats.batches << " batches, " << stats.dropped
      << " dropped (round closed first), " << stats.refused << " refused\n";
  return 0;
}

}  // namespace fedldp::cli
