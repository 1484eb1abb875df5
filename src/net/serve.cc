#include "fedldp/net/serve.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "fedldp/base/files.h"
#include "fedldp/model/linear.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/ldpfl_deploy.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/random/secure_rng.h"
#include "ldpfl_method.h"

namespace fedldp {
namespace {

using Clock = std::chrono::steady_clock;

Error Invalid(std::string message) { return {std::move(message), ErrorCode::kInvalidArgument}; }

// CPU time (user + system) this process has used so far, in seconds.
double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string Pct(double x) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100 * x << " %";
  return s.str();
}

// Models a coordinator hands over when a round closes, evaluated later by the
// serving loop. The coordinator's callback runs under its lock, where every
// poll waits: evaluating there (9 s per round under ASan on MNIST) left the
// clients unheard for that long, and the next round judged them all quiet.
class PendingModels {
 public:
  void Push(std::uint64_t round, std::span<const double> w) {
    std::lock_guard lock(mu_);
    queue_.emplace_back(round, std::vector<double>(w.begin(), w.end()));
  }
  // Calls fn on every model pushed since the last call, oldest first.
  template <typename Fn>
  void Drain(const Fn& fn) {
    std::deque<std::pair<std::uint64_t, std::vector<double>>> taken;
    {
      std::lock_guard lock(mu_);
      taken.swap(queue_);
    }
    for (const auto& [round, w] : taken) fn(round, w);
  }

 private:
  std::mutex mu_;
  std::deque<std::pair<std::uint64_t, std::vector<double>>> queue_;
};

void Say(const ServeObserver& observer, const std::string& line) {
  if (observer.log) observer.log(line);
}

Status CheckServe(const ServeConfig& s, bool shuffled) {
  if (s.state.empty()) return Invalid("the server needs a state file (--state)");
  if (s.address.empty()) return Invalid("the server needs an address host:port");
  if (s.task.empty()) return Invalid("the task needs a name");
  if (s.users == 0) return Invalid("the task needs at least one user (--users)");
  if (s.threads < 1 || s.threads > 256) {
    return Invalid("the server answers calls on 1 to 256 threads (--threads)");
  }
  if (s.tls.certificate.empty() != s.tls.key.empty()) {
    return Invalid("a TLS certificate and its key go together (--tls-cert, --tls-key)");
  }
  FEDLDP_RETURN_IF_ERROR(CheckRoundPolicy(s.policy));
  if (shuffled && s.shuffler_token_file.empty()) {
    return Invalid(
        "a shuffled task needs the shuffler's token file (--shuffler-token-file, created if "
        "absent)");
  }
  if (!shuffled && (!s.shuffler_token_file.empty() || !s.key_file.empty())) {
    return Invalid("a shuffler token file and a key file go with a shuffled task (--shuffle)");
  }
  return Status::Ok();
}

// The state file, opened and bound to `task_bytes`, with at least one
// enrolled client.
Result<ServerState> OpenBound(const ServeConfig& s, std::string& deployment,
                              const std::function<std::string()>& encode, const char* bound_hint) {
  auto opened = ServerState::Open(s.state);
  if (!opened.ok()) return Error{opened.error(), opened.code()};
  ServerState state = std::move(opened).value();
  deployment = state.deployment();
  if (Status bound = state.BindTask(encode()); !bound.ok()) {
    return Error{bound.error() + bound_hint, bound.code()};
  }
  if (state.tokens() == 0) {
    return Error{"no client is enrolled in " + s.state + ": run fedldp enrol --state " + s.state +
                     " --count N first",
                 ErrorCode::kFailedPrecondition};
  }
  return state;
}

// The serving loop both protocols share: until the task finishes, the
// server fails or a stop is requested; the pending models are evaluated as
// they come. Fills the summary's timing and what both coordinators count;
// an error if the state could not be saved.
template <typename Coordinator>
Status RunRounds(Coordinator& coord, CoordinatorServer& server, PendingModels& pending,
                 const std::function<void(std::uint64_t, const std::vector<double>&)>& evaluate,
                 const std::function<void(const typename Coordinator::Stats&)>& progress,
                 const RoundPolicy& policy, std::stop_token stop, ServeSummary& summary) {
  std::optional<Clock::time_point> training_start;
  double cpu_at_start = 0;
  auto last_show = Clock::now();
  while (!stop.stop_requested() && !server.failed() && !coord.stats().finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pending.Drain(evaluate);
    const auto s = coord.stats();
    const auto now = Clock::now();
    if (s.started && !training_start) {
      training_start = now;
      cpu_at_start = ProcessCpuSeconds();
    }
    if (s.started && now - last_show > std::chrono::seconds(5)) {
      progress(s);
      last_show = now;
    }
  }
  pending.Drain(evaluate);
  if (training_start) {
    summary.training_seconds =
        std::chrono::duration<double>(Clock::now() - *training_start).count();
    summary.training_cpu_seconds = ProcessCpuSeconds() - cpu_at_start;
  }
  const auto st = coord.stats();
  summary.finished = st.finished;
  summary.rounds = st.round;
  summary.rounds_without_update = st.rounds_without_update;
  summary.reports_counted = st.counted;
  summary.batches = st.batches;
  // Let the clients (and the shuffler) hear that the task is over before
  // the server goes: until all have, or for stale_after.
  if (summary.finished) {
    const auto until = Clock::now() + policy.stale_after;
    while (Clock::now() < until && !coord.EveryoneKnowsItIsOver()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  server.Shutdown();
  if (server.failed()) {
    return Error{"the state could not be saved; start again to resume", ErrorCode::kIo};
  }
  return Status::Ok();
}

std::string Listening(const ServeConfig& s, int port, bool started) {
  return "listening on " + BoundAddress(s.address, port) + (s.tls.enabled() ? " (TLS)" : "") +
         (started ? "" : "; waiting for " + std::to_string(s.users) + " users");
}

bool IsVectorVariant(const FedSelConfig& c) {
  return c.variant.kind == FedSelVariant::Kind::kVector;
}

std::vector<std::size_t> AllRows(std::size_t n) {
  std::vector<std::size_t> rows(n);
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  return rows;
}

}  // namespace

std::string LogStamp() {
  const auto t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::ostringstream s;
  s << std::put_time(&tm, "%H:%M:%S");
  return s.str();
}

Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream f(path);
  std::string token;
  if (!f || !std::getline(f, token) || token.empty()) {
    return Error{"cannot read a token from " + path, ErrorCode::kIo};
  }
  return token;
}

Result<std::string> LoadOrCreateShufflerToken(const std::string& path, const LogLine& log) {
  if (path.empty()) return Invalid("the shuffler's token needs a file (created if absent)");
  if (std::filesystem::exists(path)) return ReadTokenFile(path);
  SecureRng rng;
  std::ostringstream hex;
  for (int i = 0; i < 4; ++i) hex << std::hex << std::setw(16) << std::setfill('0') << rng();
  if (Status s = WriteFileAtomically(path, hex.str() + "\n", 0600); !s.ok()) {
    return Error{s.error(), s.code()};
  }
  if (log) {
    log("created the shuffler's token in " + path + " (give it to fedldp shuffle --token-file)");
  }
  return hex.str();
}

Result<ServerKeys> LoadOrCreateServerKeys(const std::string& secret_path, const LogLine& log) {
  const std::string public_path = secret_path + ".pub";
  if (std::filesystem::exists(secret_path)) return ServerKeys::Load(public_path, secret_path);
  ServerKeys keys = ServerKeys::Generate();
  if (Status s = keys.Save(public_path, secret_path); !s.ok()) return Error{s.error(), s.code()};
  if (log) {
    log("created the server's key pair: " + secret_path + " (secret, 0600) and " + public_path);
  }
  return keys;
}

Status FedSelServeConfig::Validate() const {
  FEDLDP_RETURN_IF_ERROR(CheckServe(serve, config.shuffle));
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  if (config.tail_average != 0) {
    return Invalid("the deployment serves the last iterate: tail_average must be 0");
  }
  if (config.shuffle && config.sample_clients) {
    return Invalid(
        "--shuffle with --sample-clients: the server would draw the sample, and amplification "
        "by sampling needs it hidden from the server; use one or the other");
  }
  if (!(central_delta >= 1e-12 && central_delta < 1)) {
    return Invalid("the central delta must lie in [1e-12, 1)");
  }
  return Status::Ok();
}

Status LdpFlServeConfig::Validate() const {
  FEDLDP_RETURN_IF_ERROR(CheckServe(serve, true));
  if (chunk == 0) return Invalid("a sealed piece holds at least one weight");
  // Then the simulator's rules, the task's users as its clients.
  LdpFlConfig run = config;
  run.clients = serve.users;
  return run.Validate();
}

namespace {

// Says what the task is and what it spends (shuffled: the accountant's
// statement, as train --shuffle prints it, on the same plan).
Status AnnounceFedSel(const FedSelServeConfig& config, const FedSelTaskSpec& spec,
                      const FedSelPlan& plan, const ServeObserver& observer) {
  const FedSelConfig& c = config.config;
  if (c.shuffle) {
    const RunPrivacyConfig account = FedSelRunPrivacy(plan, c, config.central_delta);
    auto accounted = AccountRun(account);
    if (!accounted.ok()) return Invalid("the accountant: " + accounted.error());
    Say(observer, "task " + spec.id + ": " + FedSelVariantName(c.variant) +
                      ", each report sealed whole to the server's key and handed to the "
                      "shuffler; rounds of at least " +
                      std::to_string(plan.smallest_round) + " reports");
    if (observer.privacy) {
      observer.privacy("privacy (fedldp account run " +
                       AccountRunArguments(account, FedSelVariantName(c.variant)) +
                       "; one report per user and round):\n" +
                       DescribeRunPrivacy(*accounted, FloatingPointStatement(c.variant)));
    }
  } else if (IsVectorVariant(c)) {
    std::ostringstream line;
    line << "task " << spec.id << ": " << FedSelVariantName(c.variant)
         << " on the whole gradient (l2 clip " << c.clip << "), eps " << plan.ReportEpsilon()
         << " per report, " << c.epochs << " report(s) per user: eps " << c.epsilon << " in all";
    Say(observer, line.str());
  } else {
    Say(observer,
        "task " + spec.id + ": " + FedSelVariantName(c.variant) + ", " + plan.budget.Statement());
  }
  // Shuffled, the line ends the accountant's statement above.
  if (c.variant.is_private() && !c.shuffle) Say(observer, FloatingPointStatement(c.variant));
  return Status::Ok();
}

}  // namespace

Result<ServeSummary> ServeFedSel(const FedSelServeConfig& config, const Dataset& data,
                                 std::span<const std::size_t> eval_rows,
                                 const ServeObserver& observer, std::stop_token stop) {
  if (Status why = config.Validate(); !why.ok()) return Error{why.error(), why.code()};
  const ServeConfig& s = config.serve;
  const FedSelConfig& c = config.config;
  const std::vector<std::size_t> eval =
      eval_rows.empty() ? AllRows(data.size())
                        : std::vector<std::size_t>(eval_rows.begin(), eval_rows.end());
  if (eval.empty()) return Invalid("no rows to evaluate the model on");
  FedSelTaskSpec spec;
  spec.id = s.task;
  spec.config = c;
  spec.users = s.users;
  spec.dimension = data.dimension;
  const LogLine log = [&observer](const std::string& line) { Say(observer, line); };
  // Checked with the key's place held, before any key file is made: a bad
  // config must not bind a state to a task it cannot serve.
  if (c.shuffle) spec.public_key.assign(32, '\0');
  FEDLDP_RETURN_IF_ERROR(FedSelCoordinator::Check(spec, s.policy));
  ServerKeys keys;
  std::string shuffler_token;
  if (c.shuffle) {
    FEDLDP_ASSIGN_OR_RETURN(keys, LoadOrCreateServerKeys(s.KeyFile(), log));
    FEDLDP_ASSIGN_OR_RETURN(shuffler_token, LoadOrCreateShufflerToken(s.shuffler_token_file, log));
    spec.public_key = keys.public_key;
  }
  FEDLDP_ASSIGN_OR_RETURN(auto state,
                          OpenBound(
                              s, spec.deployment, [&] { return EncodeTask(spec); }, ""));

  ServeSummary summary;
  summary.majority = data.Subset(eval).MajorityRate();
  PendingModels pending;
  const auto evaluate = [&](std::uint64_t epoch, const std::vector<double>& w) {
    Say(observer, "epoch " + std::to_string(epoch) + ": accuracy " +
                      Pct(LinearModel::Accuracy(w, data, eval)) + " on " +
                      std::to_string(eval.size()) + " evaluation rows (majority class " +
                      Pct(summary.majority) + ")");
  };
  FEDLDP_ASSIGN_OR_RETURN(
      const auto coordinator,
      FedSelCoordinator::Create(
          spec, s.policy, std::move(state), log,
          [&](std::uint64_t epoch, std::span<const double> w) { pending.Push(epoch, w); }, keys));
  FedSelCoordinator& coord = *coordinator;
  // Started before anything is said of the task: a port in use is one line.
  FEDLDP_ASSIGN_OR_RETURN(const auto server, CoordinatorServer::Start(coord, s.address, s.tls,
                                                                      shuffler_token, s.threads));
  if (Status said = AnnounceFedSel(config, spec, coord.plan(), observer); !said.ok()) {
    server->Shutdown();
    return Error{said.error(), said.code()};
  }
  if (observer.listening) observer.listening(server->port());
  Say(observer, Listening(s, server->port(), coord.stats().started));
  std::uint64_t shown_round = 0;
  const auto progress = [&](const FedSelCoordinator::Stats& st) {
    if (st.round == shown_round) return;
    shown_round = st.round;
    Say(observer, "round " + std::to_string(st.round) + " (epoch " + std::to_string(st.epoch + 1) +
                      "), " + std::to_string(st.accepted) + " reports accepted, " +
                      std::to_string(st.rejected) + " rejected");
  };
  if (Status ran = RunRounds(coord, *server, pending, evaluate, progress, s.policy, stop, summary);
      !ran.ok()) {
    return Error{ran.error(), ran.code()};
  }
  const auto st = coord.stats();
  summary.accepted_here = st.accepted;
  if (summary.finished) {
    summary.accuracy = LinearModel::Accuracy(coord.weights(), data, eval);
  } else {
    Say(observer, "stopped at round " + std::to_string(st.round) + "; start again to resume");
  }
  return summary;
}

namespace {

double NetAccuracy(const LdpFlTaskSpec& spec, std::span<const double> w, const Dataset& test) {
  auto net = NeuralNet::Create(spec.config.arch, 0).value();
  net.SetInputStandardization(spec.input_mean, spec.input_sd);
  const std::vector<float> f(w.begin(), w.end());
  net.SetWeights(f);
  return net.Accuracy(test);
}

// Says what the task is; returns what it spends (the simulator's statement,
// as TrainLdpFl makes it: rounds of per_round shuffled reports).
Result<std::string> AnnounceLdpFl(const LdpFlTaskSpec& spec, const ServeObserver& observer) {
  // The task was checked (LdpFlCoordinator::Create): it has a method.
  const auto method = net_internal::LdpFlMethod::Make(spec).value();
  FEDLDP_ASSIGN_OR_RETURN(auto announced, method->Announce());
  Say(observer, announced.line);
  return announced.privacy;
}

}  // namespace

Result<ServeSummary> ServeLdpFl(const LdpFlServeConfig& config, const Dataset& train,
                                std::span<const std::size_t> train_rows, const Dataset& test,
                                const ServeObserver& observer, std::stop_token stop) {
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  if (test.size() == 0) return Invalid("no test rows to evaluate the model on");
  const ServeConfig& s = config.serve;
  const LdpFlConfig& c = config.config;
  const std::vector<std::size_t> rows =
      train_rows.empty() ? AllRows(train.size())
                         : std::vector<std::size_t>(train_rows.begin(), train_rows.end());
  const LogLine log = [&observer](const std::string& line) { Say(observer, line); };
  // The task is checked (with a stand-in key) before the key pair and the
  // shuffler's token are created: a refused serve leaves no files behind.
  {
    FEDLDP_ASSIGN_OR_RETURN(
        const LdpFlTaskSpec check,
        MakeLdpFlTask(s.task, c, s.users, train, rows, std::string(32, '\0'), config.chunk));
    FEDLDP_RETURN_IF_ERROR(LdpFlCoordinator::Check(check, s.policy));
  }
  FEDLDP_ASSIGN_OR_RETURN(const ServerKeys keys, LoadOrCreateServerKeys(s.KeyFile(), log));
  FEDLDP_ASSIGN_OR_RETURN(const std::string shuffler_token,
                          LoadOrCreateShufflerToken(s.shuffler_token_file, log));
  FEDLDP_ASSIGN_OR_RETURN(LdpFlTaskSpec spec, MakeLdpFlTask(s.task, c, s.users, train, rows,
                                                            keys.public_key, config.chunk));
  SecureRng rng;
  FEDLDP_ASSIGN_OR_RETURN(NeuralNet net, NeuralNet::Create(c.arch, rng()));
  const std::vector<float> init = net.GetWeights();
  FEDLDP_ASSIGN_OR_RETURN(auto state, OpenBound(
                                          s, spec.deployment, [&] { return EncodeLdpFlTask(spec); },
                                          " (the state file was made for another task or key)"));

  ServeSummary summary;
  summary.majority = test.MajorityRate();
  PendingModels pending;
  std::uint64_t evaluated_round = 0;
  double last_accuracy = 0;
  const auto evaluate = [&](std::uint64_t round, const std::vector<double>& w) {
    last_accuracy = NetAccuracy(spec, w, test);
    evaluated_round = round;
    Say(observer, "round " + std::to_string(round) + " of " + std::to_string(c.rounds) +
                      ": accuracy " + Pct(last_accuracy) + " on " + std::to_string(test.size()) +
                      " test rows (majority class " + Pct(summary.majority) + ")");
  };
  FEDLDP_ASSIGN_OR_RETURN(
      const auto coordinator,
      LdpFlCoordinator::Create(
          spec, s.policy, std::move(state), keys, std::vector<double>(init.begin(), init.end()),
          log, [&](std::uint64_t round, std::span<const double> w) { pending.Push(round, w); }));
  LdpFlCoordinator& coord = *coordinator;
  // Started before anything is said of the task: a port in use is one line.
  FEDLDP_ASSIGN_OR_RETURN(const auto server, CoordinatorServer::Start(coord, s.address, s.tls,
                                                                      shuffler_token, s.threads));
  auto privacy = AnnounceLdpFl(spec, observer);
  if (!privacy.ok()) {
    server->Shutdown();
    return Error{privacy.error(), privacy.code()};
  }
  if (observer.privacy) observer.privacy(*privacy);
  if (observer.listening) observer.listening(server->port());
  Say(observer, Listening(s, server->port(), coord.stats().started));
  const auto progress = [](const LdpFlCoordinator::Stats&) {};  // each round says its accuracy
  if (Status ran = RunRounds(coord, *server, pending, evaluate, progress, s.policy, stop, summary);
      !ran.ok()) {
    return Error{ran.error(), ran.code()};
  }
  const auto st = coord.stats();
  summary.pieces_rejected = st.pieces_rejected;
  if (summary.finished) {
    // The last round's model was evaluated as it closed, unless this start
    // found the task already finished.
    summary.accuracy =
        evaluated_round == st.round ? last_accuracy : NetAccuracy(spec, coord.weights(), test);
  } else {
    Say(observer, "stopped after " + std::to_string(st.round) + " rounds; start again to resume");
  }
  return summary;
}

}  // namespace fedldp
