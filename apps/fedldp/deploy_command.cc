// fedldp enrol / serve / client: the FedSel deployment as separate processes.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <numeric>
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
#include "fedldp/fl/fedsel_options.h"
#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/model/linear.h"
#include "fedldp/net/services.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/store/token_requests.h"

namespace fedldp::cli {

std::atomic<bool> g_stop{false};
namespace {
std::atomic<int> g_signal{0};
extern "C" void OnSignal(int signo) {
  g_signal.store(signo);
  g_stop.store(true);
}

// The stop was not heard within `grace`: end now, saying why (write(2) and
// _Exit: another thread may hold the streams).
[[noreturn]] void EndUnstopped(std::chrono::seconds grace) {
  const int signo = g_signal.load() == SIGINT ? SIGINT : SIGTERM;
  const std::string line = "fedldp: still running " + std::to_string(grace.count()) + " s after " +
                           (signo == SIGINT ? "SIGINT" : "SIGTERM") +
                           " (a model's forward that does not return, or a call that hangs?); "
                           "ending now, without the work in progress\n";
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line.data(), line.size());
  std::_Exit(128 + signo);
}
}  // namespace

// SIGTERM and SIGINT end the process cleanly: the loops below poll g_stop.
void CatchSignals() {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

StopOnSignal::StopOnSignal(std::optional<std::chrono::seconds> grace) {
  CatchSignals();
  watcher_ = std::jthread([this, grace](std::stop_token done) {
    constexpr auto kPoll = std::chrono::milliseconds(50);
    while (!g_stop.load()) {
      if (done.stop_requested()) return;
      std::this_thread::sleep_for(kPoll);
    }
    source_.request_stop();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    if (!grace) return;
    const auto deadline = std::chrono::steady_clock::now() + *grace;
    while (!done.stop_requested()) {
      if (std::chrono::steady_clock::now() >= deadline) EndUnstopped(*grace);
      std::this_thread::sleep_for(kPoll);
    }
  });
}

void CheckTlsOptions(const std::string& address, const TlsFiles& tls, const char* flag,
                     std::ostream& err) {
  if (Status why = CheckTransport(address, tls, flag); !why.ok()) throw UsageError(why.error());
  if (Status why = CheckTlsFiles(tls); !why.ok()) throw UsageError(why.error());
  if (!tls.enabled() && !IsLoopbackAddress(address)) {
    err << Stamp() << " warning: plaintext on " << address
        << " (--insecure): tokens and reports cross the network in clear" << std::endl;
  }
}

std::vector<std::size_t> ParseRows(const std::string& spec, std::size_t n, const char* flag) {
  std::size_t a = 0, b = n;
  if (!spec.empty()) {
    const auto colon = spec.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("");
      a = colon == 0 ? 0 : std::stoul(spec.substr(0, colon));
      b = colon + 1 == spec.size() ? n : std::stoul(spec.substr(colon + 1));
    } catch (const std::exception&) {
      throw UsageError(std::string(flag) + " must be FIRST:END (half-open), not '" + spec + "'");
    }
  }
  if (a >= b || b > n) {
    throw UsageError(std::string(flag) + " " + spec + " is empty or outside the dataset's " +
                     std::to_string(n) + " rows");
  }
  std::vector<std::size_t> rows(b - a);
  std::iota(rows.begin(), rows.end(), a);
  return rows;
}

// Part i of P ("i/P", i from 1): the i-th of P contiguous, near-equal chunks.
std::vector<std::size_t> TakePart(const std::vector<std::size_t>& rows, const std::string& spec) {
  if (spec.empty()) return rows;
  std::size_t i = 0, p = 0;
  const auto slash = spec.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    i = std::stoul(spec.substr(0, slash));
    p = std::stoul(spec.substr(slash + 1));
  } catch (const std::exception&) {
    throw UsageError("--part must be I/P, not '" + spec + "'");
  }
  if (p == 0 || i == 0 || i > p || p > rows.size()) {
    throw UsageError("--part " + spec + ": need 1 <= I <= P <= " + std::to_string(rows.size()));
  }
  const std::size_t first = (i - 1) * rows.size() / p, end = i * rows.size() / p;
  return {rows.begin() + static_cast<std::ptrdiff_t>(first),
          rows.begin() + static_cast<std::ptrdiff_t>(end)};
}

Dataset LoadClientFile(const ClientOptions& o) {
  auto data = LoadDataFile(o.data_file, o.label_column, FileLabels::kShare, o.features);
  if (!data.ok()) throw UsageError("--data: " + data.error());
  return std::move(data).value();
}

std::string FeaturesHint(const ClientOptions& o, const std::string& error) {
  const bool width =
      error.find("features") != std::string::npos || error.find("dimension") != std::string::npos;
  return !o.data_file.empty() && width ? " (--data: pass the task's feature count with --features)"
                                       : "";
}

// serve --data: the operator's own file, read as train --data reads one.
Dataset LoadServedFile(const ServeOptions& o) {
  auto data = LoadDataFile(o.data_file, o.label_column);
  if (!data.ok()) throw UsageError("--data: " + data.error());
  return std::move(data).value();
}

Dataset LoadData(const std::string& name, const std::string& dir) {
  auto data = LoadNamed(name, DataDir(dir));
  if (!data.ok()) throw UsageError(data.error() + DataDirHint(data.error()));
  return std::move(data).value();
}

std::string Stamp() { return LogStamp(); }

void AddServeCounts(const ServeSummary& s, std::uint64_t users, nlohmann::ordered_json& f) {
  f["users"] = users;
  f["accuracy"] = Percent(s.accuracy);
  f["majority"] = Percent(s.majority);
  f["rounds"] = s.rounds;
  f["rounds_without_update"] = s.rounds_without_update;
  f["reports_counted"] = s.reports_counted;
  f["accepted_here"] = s.accepted_here;
  f["batches"] = s.batches;
  f["pieces_rejected"] = s.pieces_rejected;
  f["training_seconds"] = s.training_seconds;
  f["training_cpu_seconds"] = s.training_cpu_seconds;
  f["privacy"] = PrivacyJson(s.privacy);
}

void AddLabelColumnOption(CLI::App& app, std::string& column, CLI::Option* data) {
  app.add_option("--label-column", column,
                 "With a CSV --data: the label's column, by header name or 0-based index "
                 "(default: the last)")
      ->needs(data);
}

void AddLogFormatOption(CLI::App& app, std::string& format) {
  app.add_option("--log-format", format,
                 "text: lines for people (HH:MM:SS component: ...); json: one JSON object a "
                 "line (time, component, message) for a log collector")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

LogLine LogTo(std::ostream& err, const std::string& format, const char* component) {
  const auto parsed = ParseLogFormat(format);
  const LogFormat f = parsed.ok() ? *parsed : LogFormat::kText;
  return [&err, f, component](const std::string& line) {
    err << FormatLog(f, component, line) << std::endl;
  };
}

std::string ReadToken(const std::string& path, const char* flag) {
  auto token = ReadTokenFile(path);
  if (!token.ok()) throw UsageError(std::string(flag) + ": " + token.error());
  return std::move(token).value();
}

void SetupEnrol(CLI::App& app, EnrolOptions& o) {
  app.description(
      "Issue client tokens for a server's state file. Each token lets one client process\n"
      "join; the server keeps only their hashes. Hand each client its own token.");
  app.add_option("--state", o.state, "The server's state file (SQLite)")->required();
  auto* count = app.add_option("--count", o.count, "How many tokens")
                    ->capture_default_str()
                    ->check(Within(kTokens));
  app.add_option("--replace-user", o.replace_user,
                 "A lost token: issue one token in place of the joined client's that hosts this "
                 "user (from the server's \"client joined: users F..L\" line). The old token "
                 "joins no more (its live session ends at once); the client's users, their "
                 "reports and the task stay as they were. Works with the server running (it "
                 "answers within a second) or stopped")
      ->excludes(count);
  auto* out = app.add_option("--out", o.out,
                             "Write the tokens here, one per line (mode 0600); else stdout");
  app.add_option("--out-dir", o.out_dir,
                 "Write each token to a file of its own in this folder (made if absent), "
                 "client-N.token (mode 0600), N after the files already there: one per client")
      ->excludes(out)
      ->excludes("--replace-user");
  app.add_flag("--force", o.force, "Replace an existing --out file");
}

namespace {

// Writes `text` (tokens, one per line) to --out, or to `out` without it.
void WriteTokens(const EnrolOptions& o, const std::string& text, std::size_t count,
                 std::ostream& out) {
  if (o.out.empty()) {
    out << text;
  } else if (Status s = WriteFileAtomically(o.out, text, 0600, o.force); !s.ok()) {
    throw std::runtime_error(s.error() + " (the " + std::to_string(count) +
                             " tokens just issued are lost; nobody can use them: enrol again)");
  }
}

// A lost token replaced: in `state` if this process holds it, else by the
// server running on it (token_requests.h).
int ReplaceToken(ServerState* state, const EnrolOptions& o, std::ostream& out, std::ostream& err) {
  const ServerState::DrawnToken drawn = ServerState::DrawToken();
  const auto replaced =
      state != nullptr
          ? state->ReplaceTokenHash(*o.replace_user, drawn.hash_hex)
          : AskRunningServer(o.state, *o.replace_user, drawn.hash_hex, std::chrono::seconds(10));
  if (!replaced.ok()) ThrowFailure(replaced.code(), replaced.error());
  WriteTokens(o, drawn.token + "\n", 1, out);
  err << "enrol: a new token for the client of users " << replaced->first << ".."
      << replaced->first + replaced->users - 1 << "; its old token joins no more"
      << (state != nullptr ? "" : " (the running server took it)") << "\n";
  return 0;
}

}  // namespace

int RunEnrol(const EnrolOptions& o, std::ostream& out, std::ostream& err) {
  // The output is checked before a token is issued.
  CheckOut(o.out);
  if (!o.out_dir.empty()) {
    if (Status s = CheckTokenDir(o.out_dir); !s.ok()) throw UsageError("--out-dir: " + s.error());
  }
  if (!o.out.empty() && !o.force && std::filesystem::exists(o.out)) {
    throw UsageError("--out: " + o.out + " exists; pass --force to replace it");
  }
  auto opened = ServerState::Open(o.state);
  if (o.replace_user && opened.code() == ErrorCode::kAlreadyExists) {
    return ReplaceToken(nullptr, o, out, err);  // the server holds the state: ask it
  }
  if (!opened.ok()) throw UsageError(opened.error());
  ServerState state = std::move(opened).value();
  if (o.replace_user) return ReplaceToken(&state, o, out, err);
  auto tokens = state.IssueTokens(o.count);
  if (!tokens.ok()) throw std::runtime_error(tokens.error());
  if (!o.out_dir.empty()) {
    const auto written = WriteTokenFiles(o.out_dir, *tokens);
    if (!written.ok()) {
      throw std::runtime_error(written.error() + " (the " + std::to_string(tokens->size()) +
                               " tokens just issued are lost: enrol again)");
    }
    err << "enrol: wrote " << written->front() << (written->size() > 1 ? " .. " : "")
        << (written->size() > 1 ? written->back() : "") << "\n";
  } else {
    std::string lines;
    for (const auto& t : *tokens) lines += t + "\n";
    WriteTokens(o, lines, tokens->size(), out);
  }
  err << "enrol: " << tokens->size() << " tokens issued (" << state.tokens() << " in all for "
      << o.state << ")\n";
  return 0;
}

namespace {

// serve's options, in the order --help lists them: the task and its data,
// FedSel's, LDP-FL's, then rounds and transport.
void AddServeTaskOptions(CLI::App& app, ServeOptions& o) {
  app.description(
      "Run a FedSel or LDP-FL task as the server of a deployment: clients (fedldp client)\n"
      "join with tokens from fedldp enrol, and rounds run until the task is done. The state\n"
      "file keeps the model, the round and the open round's reports: kill the server at any\n"
      "time and start it again with the same options to resume. LDP-FL reports, and FedSel's\n"
      "with --shuffle, reach the server only through the shuffler (fedldp shuffle), sealed\n"
      "to the server's key.");
  app.add_option("--protocol", o.protocol, "fedsel or ldpfl")
      ->check(CLI::IsMember({"fedsel", "ldpfl"}))
      ->capture_default_str();
  app.add_option("--state", o.state, "State file (SQLite) that fedldp enrol made")->required();
  app.add_option("--address", o.address, "host:port to listen on")->capture_default_str();
  app.add_option("--threads", o.threads,
                 "Threads answering calls: 1 is the fastest on a machine shared with the "
                 "clients; more where the server has cores of its own")
      ->check(Within(kServiceThreads))
      ->capture_default_str();
  app.add_option("--users", o.users, "N: users in the task (all must join)")
      ->required()
      ->check(Within(kUsers));
  app.add_option(
      "--dataset", o.dataset,
      "Dataset, for its dimension and the evaluation rows (default adult; LDP-FL: mnist)");
  app.add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  auto* file = app.add_option("--data", o.data_file,
                              "Your own file instead of --dataset, CSV (.csv, .csv.gz) or LIBSVM: "
                              "the task's features and classes, the evaluation rows (LDP-FL: and "
                              "the input standardisation's); clients bring theirs (client --data)");
  AddLabelColumnOption(app, o.label_column, file);
  app.add_option("--eval-rows", o.eval_rows,
                 "Rows FIRST:END the server evaluates the model on (default 32561:, adult.test; "
                 "--data: all; LDP-FL: of the test split, default all)");
  app.add_option("--task", o.task, "Task name in every client's ledger (default fedsel-DATASET)");
}

// The protocols' options: FedSel's variant and statement, the deployed
// rows of both configurations (fl/fedsel_options.h, fl/ldpfl_options.h),
// then LDP-FL's pieces and the shuffled tasks' keys.
void AddServeProtocolOptions(CLI::App& app, ServeOptions& o) {
  app.add_option("--variant", o.variant,
                 "FedSel: a two-stage variant, or privunitg, fastprojunit, twopoint (the whole "
                 "gradient; the served model is the last iterate)")
      ->capture_default_str();
  app.add_option("--central-delta", o.central_delta,
                 "FedSel --shuffle: the statement's total delta per user, in [1e-12, 1)")
      ->check(CLI::Range(1e-12, 0.999999))
      ->capture_default_str();
  BindServedOptions(app, FedSelOptions(), "FedSel", DefaultFedSelVariantConfig(), LdpFlOptions(),
                    "LDP-FL", LdpFlConfig{}, o.config);
  app.add_option("--chunk", o.chunk, "LDP-FL: weights per sealed piece, at most")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--train-rows", o.train_rows,
                 "LDP-FL: training rows FIRST:END whose pixel mean and sd standardise inputs "
                 "(default all; with --data, rows of that file)");
  app.add_option("--shuffler-token-file", o.shuffler_token_file,
                 "LDP-FL, FedSel --shuffle: the shuffler's secret token (created, mode 0600, if "
                 "absent)");
  app.add_option("--key-file", o.key_file,
                 "LDP-FL, FedSel --shuffle: the server's secret key file (default STATE.key; "
                 "public key in KEY.pub; created if absent)");
}

void AddServeRoundOptions(CLI::App& app, ServeOptions& o) {
  app.add_option("--deadline-ms", o.deadline_ms, "Round deadline")->capture_default_str();
  app.add_option("--stale-ms", o.stale_ms, "A client silent this long counts as dropped out")
      ->capture_default_str();
  app.add_option("--poll-ms", o.poll_ms,
                 "How often clients poll when a reply cannot be held (the reply says;\n"
                 "FedSel clients' waiting polls are held until a round opens)")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  app.add_option("--min-participation", o.min_participation,
                 "Share of a round's users that must report for an update")
      ->capture_default_str();
  app.add_option("--min-users", o.min_users,
                 "Start training once this many users have joined (default: all --users); "
                 "later ones take part once they join, and no round waits for users whose "
                 "client has not joined (unshuffled FedSel tasks)");
  app.add_option("--monitor", o.monitor,
                 "Serve a status page (/) and Prometheus metrics (/metrics) over HTTP on this "
                 "host:port, e.g. 127.0.0.1:9464 (default: none; keep it on loopback or behind "
                 "a proxy: it has no TLS or login)");
  app.add_option("--tls-cert", o.tls_cert, "Certificate chain (PEM): serve over TLS");
  app.add_option("--tls-key", o.tls_key, "Private key (PEM) of --tls-cert");
  app.add_flag("--insecure", o.insecure,
               "Allow plaintext on a non-loopback address (tokens and reports cross the network "
               "in clear)");
  app.add_option("--out", o.out, "Append one JSON line with the result to this file");
  AddLogFormatOption(app, o.log_format);
}

}  // namespace

void SetupServe(CLI::App& app, ServeOptions& o) {
  AddServeTaskOptions(app, o);
  AddServeProtocolOptions(app, o);
  AddServeRoundOptions(app, o);
}

// The options both protocols' servers share, into the library's config.
ServeConfig ServeCommon(const ServeOptions& o, const std::string& default_task) {
  ServeConfig s;
  s.state = o.state;
  s.address = o.address;
  s.threads = o.threads;
  s.tls.certificate = o.tls_cert;
  s.tls.key = o.tls_key;
  s.tls.insecure = o.insecure;
  s.task = o.task.empty() ? default_task : o.task;
  s.users = o.users;
  s.policy.deadline = std::chrono::milliseconds(o.deadline_ms);
  s.policy.stale_after = std::chrono::milliseconds(o.stale_ms);
  s.policy.retry = std::chrono::milliseconds(o.poll_ms);
  s.policy.min_participation = o.min_participation;
  s.policy.min_users = o.min_users;
  s.monitor = o.monitor;
  s.key_file = o.key_file;
  s.shuffler_token_file = o.shuffler_token_file;
  return s;
}

ServeObserver ServeLog(std::ostream& err, const std::string& log_format) {
  ServeObserver observer;
  observer.log = LogTo(err, log_format, "serve");
  if (log_format == "json") {
    observer.privacy = observer.log;  // the statement as one message
  } else {
    observer.privacy = [&err](const std::string& statement) { err << statement; };
  }
  return observer;
}

namespace {

// serve --protocol fedsel's options into the library's config: the
// variant's defaults (vector variants: the tuned lr, m / N and clip), then
// the options given. The deployment serves the last iterate.
FedSelServeConfig FedSelServeFrom(const ServeOptions& o) {
  FedSelServeConfig config;
  config.serve = ServeCommon(o, "fedsel-" + o.dataset);
  config.central_delta = o.central_delta;
  const auto variant = ParseFedSelVariant(o.variant);
  if (!variant.ok()) throw UsageError(variant.error());
  FedSelConfig& c = config.config;
  c = DefaultFedSelConfig(*variant);
  c.tail_average = 0;
  const auto given = ServedOptions(FedSelOptions(), o.config, "fedsel");
  if (Status s = ApplyOptions(FedSelOptions(), given, c); !s.ok()) throw UsageError(s.error());
  return config;
}

// serve's JSON record of a finished FedSel task.
std::string ServeRecord(const ServeOptions& o, const FedSelServeConfig& config,
                        const ServeSummary& s) {
  const FedSelConfig& c = config.config;
  nlohmann::ordered_json f;
  f["command"] = "serve";
  StartRecord(f);
  f["dataset"] = o.data_file.empty() ? o.dataset : o.data_file;
  f["variant"] = FedSelVariantName(c.variant);
  f["epsilon"] = c.epsilon;
  f["epochs"] = c.epochs;
  AddServeCounts(s, config.serve.users, f);
  return f.dump();
}

}  // namespace

int RunServe(const ServeOptions& given, std::ostream& out, std::ostream& err) {
  CheckOut(given.out);
  if (given.tls_cert.empty() != given.tls_key.empty()) {
    throw UsageError("--tls-cert and --tls-key go together");
  }
  CheckTlsOptions(given.address, {given.tls_cert, given.tls_key, "", given.insecure},
                  "--tls-cert and --tls-key", err);
  if (given.protocol == "ldpfl") return RunServeLdpFl(given, out, err);
  ServeOptions o = given;
  if (!o.data_file.empty() && !o.dataset.empty()) throw UsageError("give --data or --dataset");
  if (o.dataset.empty()) o.dataset = o.data_file.empty() ? "adult" : "file";
  if (o.eval_rows.empty() && o.data_file.empty()) o.eval_rows = "32561:";
  const FedSelServeConfig config = FedSelServeFrom(o);
  // Bad options are refused before the data are read.
  if (Status why = config.Validate(); !why.ok()) ThrowFailure(why.code(), why.error());
  const Dataset data = o.data_file.empty() ? LoadData(o.dataset, o.data_dir) : LoadServedFile(o);
  const std::vector<std::size_t> eval = ParseRows(o.eval_rows, data.size(), "--eval-rows");

  StopOnSignal stop(kStopGrace);
  auto served = ServeFedSel(config, data, eval, ServeLog(err, o.log_format), stop.token());
  if (!served.ok()) ThrowFailure(served.code(), served.error());
  const ServeSummary& s = *served;
  if (!s.finished) return 0;
  const FedSelConfig& c = config.config;
  out << "deployed FedSel " << FedSelVariantName(c.variant) << " on "
      << (o.data_file.empty() ? o.dataset : o.data_file) << ": accuracy " << PercentText(s.accuracy)
      << " % (majority class " << PercentText(s.majority) << " %), " << s.rounds << " rounds, "
      << s.rounds_without_update << " without update, " << s.reports_counted
      << " reports counted\n";
  if (!o.out.empty()) AppendOut(o.out, ServeRecord(o, config, s) + "\n");
  return 0;
}

void SetupClient(CLI::App& app, ClientOptions& o) {
  app.description(
      "Take part in a deployed task. FedSel: each local row is one user with its own\n"
      "privacy budget on this client's ledger. LDP-FL (with --shuffler): the rows are\n"
      "split into --users equal shards, one user each, whose sealed reports go to the\n"
      "shuffler. Noise comes from the secure generator; every report is charged to the\n"
      "ledger before it is sent.");
  app.add_option("--server", o.server, "Server address host:port")->capture_default_str();
  app.add_option("--protocol", o.protocol,
                 "fedsel or ldpfl (default: ldpfl with --shuffler, else fedsel); a FedSel task "
                 "served with --shuffle takes --protocol fedsel --shuffler")
      ->check(CLI::IsMember({"fedsel", "ldpfl"}));
  app.add_option("--shuffler", o.shuffler,
                 "The shuffler's address host:port (LDP-FL; FedSel tasks served with --shuffle)");
  app.add_option("--users", o.users, "LDP-FL: users hosted (equal shards of the rows)")
      ->check(Within(kHostedUsers))
      ->capture_default_str();
  app.add_option("--shuffler-ca", o.shuffler_ca, "Trust this certificate for the shuffler");
  app.add_option("--threads", o.threads, "LDP-FL: Torch threads for local training")
      ->check(Within(kServiceThreads))
      ->capture_default_str();
  app.add_option("--token", o.token, "Token from fedldp enrol");
  app.add_option("--token-file", o.token_file, "Read the token from this file (first line)");
  auto* dataset =
      app.add_option("--dataset", o.dataset, "Local data: a dataset name")->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  auto* file =
      app.add_option("--data", o.data_file,
                     "Local data instead of --dataset: CSV (.csv, .csv.gz; a label column and "
                     "numeric features) or LIBSVM (label index:value ..., 1-based indices; plain "
                     "or .gz), with the task's features (one-hot Adult: 123; LDP-FL's CNN: 784 "
                     "pixel values in [0, 1]). Labels: as the server's file writes them (its "
                     "task names its classes), or class numbers (0/1 or -1/+1; 0-9) for a "
                     "built-in dataset's task; a file may hold some classes only")
          ->excludes(dataset)
          ->check(CLI::ExistingFile);
  AddLabelColumnOption(app, o.label_column, file);
  app.add_option("--features", o.features,
                 "With a LIBSVM --data: the task's feature count (default: the file's largest "
                 "index, which falls short when the last features are zero in every local row)")
      ->check(Within(kDimension));
  app.add_option("--rows", o.rows,
                 "Rows FIRST:END of the local data that are used (default 0:32561 for adult; "
                 "LDP-FL: of the training split, default all; --data: the whole file)");
  app.add_option("--part", o.part, "I/P: the I-th of P equal chunks of --rows");
  app.add_option("--ledger", o.ledger, "Privacy ledger (SQLite)")->capture_default_str();
  app.add_option("--give-up", o.give_up_seconds,
                 "Seconds to keep retrying an unreachable server (or one that refuses the "
                 "token's session while another is live) before exiting; retries back off to once "
                 "a second")
      ->check(CLI::Range(1.0, 365.0 * 86400))
      ->capture_default_str();
  app.add_option("--budget", o.budget,
                 "Each user's total epsilon on the ledger (default: the task's epsilon)");
  app.add_option("--tls-ca", o.tls_ca, "Trust this certificate (PEM): connect over TLS");
  app.add_flag("--insecure", o.insecure,
               "Allow plaintext on a non-loopback address (tokens and reports cross the network "
               "in clear)");
  AddLogFormatOption(app, o.log_format);
}

FedSelClientOptions ToClientOptions(const ClientOptions& o, const std::string& token,
                                    std::ostream& err) {
  FedSelClientOptions c;
  c.address = o.server;
  c.token = token;
  c.ledger = o.ledger;
  c.budget = o.budget;
  c.tls.ca = o.tls_ca;
  c.tls.insecure = o.insecure;
  c.shuffler = o.shuffler;
  c.shuffler_tls.ca = o.shuffler_ca;
  c.shuffler_tls.insecure = o.insecure;
  c.give_up = std::chrono::milliseconds(std::llround(o.give_up_seconds * 1000));
  c.log = LogTo(err, o.log_format, "client");
  return c;
}

int RunClient(const ClientOptions& o, std::ostream& out, std::ostream& err) {
  std::string token = o.token;
  if (!o.token_file.empty()) token = ReadToken(o.token_file, "--token-file");
  if (token.empty()) throw UsageError("give --token or --token-file");
  CheckTlsOptions(o.server, {"", "", o.tls_ca, o.insecure}, "--tls-ca", err);
  const std::string protocol = !o.protocol.empty()  ? o.protocol
                               : o.shuffler.empty() ? "fedsel"
                                                    : "ldpfl";
  if (!o.shuffler.empty())
    CheckTlsOptions(o.shuffler, {"", "", o.shuffler_ca, o.insecure}, "--shuffler-ca", err);
  if (protocol == "ldpfl") {
    if (o.shuffler.empty())
      throw UsageError("LDP-FL's reports go through the shuffler: give --shuffler");
    return RunClientLdpFl(o, token, out, err);
  }
  const Dataset data = o.data_file.empty() ? LoadData(o.dataset, o.data_dir) : LoadClientFile(o);
  const bool adult = o.data_file.empty() && o.dataset == "adult";
  const auto rows = TakePart(
      ParseRows(o.rows.empty() && adult ? "0:32561" : o.rows, data.size(), "--rows"), o.part);
  const FedSelClientOptions c = ToClientOptions(o, token, err);
  StopOnSignal stop(kStopGrace);
  c.log("hosting " + std::to_string(rows.size()) + " users (rows " + std::to_string(rows.front()) +
        ".." + std::to_string(rows.back()) + " of " +
        (o.data_file.empty() ? o.dataset : o.data_file) + "); server " + o.server +
        (o.shuffler.empty() ? "" : ", shuffler " + o.shuffler));
  auto summary = RunFedSelClient(c, data, rows, stop.token());
  if (!summary.ok()) {
    err << "client: failed: " << summary.error() << FeaturesHint(o, summary.error()) << "\n";
    return 1;
  }
  out << "client: " << (summary->finished ? "task finished" : "stopped") << "; " << summary->rounds
      << " rounds, " << summary->reports
      << (o.shuffler.empty() ? " reports accepted, " : " reports handed to the shuffler, ")
      << summary->refused << " refused\n";
  return 0;
}

}  // namespace fedldp::cli
