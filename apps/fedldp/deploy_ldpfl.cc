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
#include "config_options.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/base/files.h"
#include "fedldp/base/format.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/services.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/sim/ldpfl_experiment.h"

namespace fedldp::cli {
namespace {

// The served data's name: mnist or fmnist, or the operator's own file
// (--data), whose rows give both the standardisation and the evaluation.
std::string ServedName(const ServeOptions& o) {
  if (!o.data_file.empty()) {
    if (!o.dataset.empty()) throw UsageError("give --data or --dataset");
    return o.data_file;
  }
  const std::string name = o.dataset.empty() ? "mnist" : o.dataset;
  if (name != "mnist" && name != "fmnist") {
    throw UsageError("LDP-FL deployments run on mnist, fmnist or --data FILE, not " + name);
  }
  return name;
}

// The server's rows: the training split (for the standardisation) and the
// test split, or the operator's file as both.
std::pair<Dataset, Dataset> ServedRows(const ServeOptions& o, const std::string& name) {
  if (!o.data_file.empty()) {
    Dataset data = LoadServedFile(o);
    return {data, data};
  }
  auto split = LoadImageSplit(name, o.data_dir);
  if (!split.ok()) throw UsageError(split.error());
  return {std::move(split->train), std::move(split->test)};
}

std::string LdpFlServeRecord(const LdpFlServeConfig& config, const std::string& name,
                             const ServeSummary& s) {
  nlohmann::ordered_json f;
  f["command"] = "serve";
  StartRecord(f);
  f["protocol"] = "ldpfl";
  f["dataset"] = name;
  f["randomizer"] = LdpFlRandomizerName(config.config);
  f["epsilon"] = config.config.epsilon;
  AddServeCounts(s, config.serve.users, f);
  return f.dump();
}

}  // namespace

int RunServeLdpFl(const ServeOptions& o, std::ostream& out, std::ostream& err) {
  const std::string name = ServedName(o);
  LdpFlServeConfig config;
  config.serve = ServeCommon(o, "ldpfl-" + (o.data_file.empty() ? name : std::string("file")));
  config.chunk = o.chunk;
  // The dataset's defaults (the paper's CNN and range; a file: MNIST's), then the options.
  const ImageDataset defaults = ParseImageDataset(o.data_file.empty() ? name : "mnist").value();
  auto c = LdpFlConfigWith(DefaultLdpFlExperiment(defaults).training,
                           ServedOptions(LdpFlOptions(), o.config, "ldpfl"));
  if (!c.ok()) throw UsageError(c.error());
  config.config = std::move(c).value();
  // Bad options are refused before the images are read.
  if (Status why = config.Validate(); !why.ok()) ThrowFailure(why.code(), why.error());
  const auto [train, all_test] = ServedRows(o, name);
  const Dataset test = all_test.Subset(ParseRows(o.eval_rows, all_test.size(), "--eval-rows"));
  const auto train_rows = ParseRows(o.train_rows, train.size(), "--train-rows");

  StopOnSignal stop(kStopGrace);
  auto served =
      ServeLdpFl(config, train, train_rows, test, ServeLog(err, o.log_format), stop.token());
  if (!served.ok()) ThrowFailure(served.code(), served.error());
  const ServeSummary& s = *served;
  if (!s.finished) return 0;
  out << "deployed LDP-FL on " << name << ": accuracy " << PercentText(s.accuracy)
      << " % (majority class " << PercentText(s.majority) << " %), " << s.rounds << " rounds, "
      << s.rounds_without_update << " without update, " << s.reports_counted << " reports counted, "
      << s.pieces_rejected << " pieces rejected\n";
  if (!o.out.empty()) AppendOut(o.out, LdpFlServeRecord(config, name, s) + "\n");
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
    data = LoadClientFile(o);
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
  static_cast<FedSelClientOptions&>(c) = ToClientOptions(o, token, err);
  StopOnSignal stop(kStopGrace);
  c.log("hosting " + std::to_string(o.users) + " users on rows " + std::to_string(rows.front()) +
        ".." + std::to_string(rows.back()) + " of " +
        (o.data_file.empty() ? dataset + " (training split)" : o.data_file) + "; server " +
        o.server + ", shuffler " + o.shuffler);
  auto summary = RunLdpFlClient(c, data, std::move(shards), stop.token());
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
      "Stand between clients and the server, run by a party other than the server.\n"
      "Clients hand over their reports as pieces sealed to the server's key (the shuffler\n"
      "cannot read them). The shuffler keeps one submission per user and round (the server\n"
      "vouches for each), and forwards a batch only when it holds at least --min-batch users\n"
      "and the task's shuffle batch (its statement's n), and everyone the server still waits\n"
      "for is held here or by another shuffler, or the deadline nears: contributors sorted,\n"
      "every chunk's pieces in an order of its own, so no piece can be linked to a client.\n"
      "Several shufflers may serve one task; each runs until the server says it is over.");
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
  AddLogFormatOption(app, o.log_format);
}

int RunShuffle(const ShuffleOptions& o, std::ostream& out, std::ostream& err) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    throw UsageError("--tls-cert and --tls-key go together");
  }
  const LogLine log = LogTo(err, o.log_format, "shuffle");
  ShufflerServerOptions s;
  s.address = o.address;
  CheckTlsOptions(o.address, {o.tls_cert, o.tls_key, "", o.insecure}, "--tls-cert and --tls-key",
                  err);
  CheckTlsOptions(o.server, {"", "", o.server_ca, o.insecure}, "--server-ca", err);
  s.tls.certificate = o.tls_cert;
  s.tls.key = o.tls_key;
  s.tls.insecure = o.insecure;
  s.server = o.server;
  s.server_tls.ca = o.server_ca;
  s.server_tls.insecure = o.insecure;
  s.shuffler_token = ReadToken(o.token_file, "--token-file");
  s.log = log;
  // Ctrl-C (or SIGTERM) shuts the shuffler down; it says what it forwarded.
  StopOnSignal stop(kStopGrace);
  auto summary = RunShuffler(
      s, {.min_batch = o.min_batch, .flush_before = std::chrono::milliseconds(o.flush_before_ms)},
      stop.token());
  if (!summary.ok()) throw UsageError(summary.error());
  const auto& stats = summary->stats;
  out << "shuffle: " << (summary->finished ? "task finished" : "stopped") << "; " << stats.forwarded
      << " users' reports forwarded in " << stats.batches << " batches, " << stats.dropped
      << " dropped (round closed first), " << stats.refused << " refused; the server vouched "
      << summary->vouches_asked << " reports in " << summary->vouch_calls << " calls\n";
  return 0;
}

}  // namespace fedldp::cli
