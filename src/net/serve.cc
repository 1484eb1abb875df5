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
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "fedldp/base/files.h"
#include "fedldp/base/format.h"
#include "fedldp/base/limits.h"
#include "fedldp/model/linear.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/ldpfl_deploy.h"
#include "fedldp/net/monitor.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/store/token_requests.h"
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

// What the serving loop learns that the coordinator does not keep: the last
// evaluation and the last round's duration, for the monitor's thread.
class ServingStatus {
 public:
  void Evaluated(double accuracy) {
    std::lock_guard lock(mu_);
    accuracy_ = accuracy;
  }
  // Seen at `now`, the coordinator at round `round`.
  void Saw(std::uint64_t round, Clock::time_point now) {
    std::lock_guard lock(mu_);
    if (round != round_) {
      if (seen_ != Clock::time_point{})
        last_round_ = std::chrono::duration<double>(now - seen_).count();
      round_ = round;
      seen_ = now;
    }
  }
  void Fill(RunStatus& s) const {
    std::lock_guard lock(mu_);
    s.accuracy = accuracy_;
    s.last_round_seconds = last_round_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<double> accuracy_;
  std::uint64_t round_ = ~std::uint64_t{0};
  Clock::time_point seen_{};
  double last_round_ = 0;
};

// The status both protocols show (RunStatus): the coordinator's occupancy
// and counts, the serving loop's, and the privacy statement.
template <typename Coordinator>
RunStatus StatusOf(const Coordinator& coord, const ServingStatus& serving,
                   const std::optional<PrivacyRecord>& privacy) {
  RunStatus s;
  const auto st = coord.stats();
  const auto o = coord.occupancy();
  s.task = coord.spec().id;
  s.started = st.started;
  s.finished = st.finished;
  s.reports_counted = st.counted;
  s.joined = o.joined;
  s.withdrawn = o.withdrawn;
  s.away = o.away;
  s.sessions = o.sessions;
  s.enrolled = o.tokens;
  s.refused = o.refused;
  s.users_by_reports = o.users_by_reports;
  s.users = coord.spec().users;
  serving.Fill(s);
  if (privacy) {
    s.report_epsilon = s.local_epsilon = privacy->local.epsilon;
    s.total_epsilon = privacy->total.epsilon;
    s.total_delta = privacy->total.delta;
    s.privacy = DescribePrivacyRecord(*privacy);
  } else {
    s.privacy = "none: the task is not private";
  }
  return s;
}

void Say(const ServeObserver& observer, const std::string& line) {
  if (observer.log) observer.log(line);
}

Status CheckServe(const ServeConfig& s, bool shuffled) {
  if (s.state.empty()) return Invalid("the server needs a state file (--state)");
  if (s.address.empty()) return Invalid("the server needs an address host:port");
  if (s.task.empty()) return Invalid("the task needs a name");
  FEDLDP_RETURN_IF_ERROR(CheckCount(kUsers, s.users));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kServiceThreads, s.threads));
  if (!s.monitor.empty() && (s.monitor.find(':') == std::string::npos ||
                             (s.monitor == s.address && !s.address.ends_with(":0")))) {
    return Invalid("--monitor takes host:port, another port than the server's (" + s.address + ")");
  }
  if (s.tls.certificate.empty() != s.tls.key.empty()) {
    return Invalid("a TLS certificate and its key go together (--tls-cert, --tls-key)");
  }
  FEDLDP_RETURN_IF_ERROR(CheckRoundPolicy(s.policy));
  if (s.policy.min_users > s.users) {
    return Invalid("--min-users " + std::to_string(s.policy.min_users) + " exceeds the task's " +
                   std::to_string(s.users) + " users");
  }
  if (shuffled && s.policy.min_users != 0 && s.policy.min_users < s.users) {
    return Invalid(
        "--min-users with a shuffled task: its statement's shuffle bound counts every drawn "
        "user's report in each round, and users not yet joined would leave rounds smaller "
        "than stated; start with all users, or serve without the shuffler");
  }
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

// The state file enrol made, with at least one enrolled client: opened,
// never created (a refused serve leaves no file behind).
Result<ServerState> OpenEnrolled(const ServeConfig& s) {
  const auto nobody = [&] {
    return Error{"no client is enrolled in " + s.state + ": run fedldp enrol --state " + s.state +
                     " --count N first",
                 ErrorCode::kFailedPrecondition};
  };
  if (!std::filesystem::exists(s.state)) return nobody();
  auto opened = ServerState::Open(s.state);
  if (!opened.ok()) return Error{opened.error(), opened.code()};
  if (opened->tokens() == 0) return nobody();
  return std::move(opened).value();
}

// The serving loop both protocols share: until the task finishes, the
// server fails or a stop is requested; the pending models are evaluated as
// they come, and the operator's requests (a token to replace) are answered
// within a quarter second. Fills the summary's timing and what both
// coordinators count; an error if the state could not be saved.
template <typename Coordinator>
Status RunRounds(Coordinator& coord, CoordinatorServer& server, PendingModels& pending,
                 const std::function<void(std::uint64_t, const std::vector<double>&)>& evaluate,
                 const std::function<void(const typename Coordinator::Stats&)>& progress,
                 const std::function<void()>& answer_requests, const RoundPolicy& policy,
                 std::stop_token stop, ServingStatus& serving, ServeSummary& summary) {
  std::optional<Clock::time_point> training_start;
  double cpu_at_start = 0;
  auto last_show = Clock::now(), last_asked = Clock::time_point{};
  while (!stop.stop_requested() && !server.failed() && !coord.stats().finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pending.Drain(evaluate);
    const auto s = coord.stats();
    const auto now = Clock::now();
    serving.Saw(s.round, now);
    if (now - last_asked > std::chrono::milliseconds(250)) {
      answer_requests();
      last_asked = now;
    }
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

bool IsVectorVariant(const FedSelConfig& c) { return TraitsOf(c.variant).whole_vector; }

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

Result<LogFormat> ParseLogFormat(const std::string& name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return Invalid("no log format '" + name + "' (text, json)");
}

std::string FormatLog(LogFormat format, std::string_view component, std::string_view message) {
  if (format == LogFormat::kText) {
    return LogStamp() + " " + std::string(component) + ": " + std::string(message);
  }
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream time;
  time << std::put_time(&tm, "%Y-%m-%dT%H:%M:%S") << '.' << std::setw(3) << std::setfill('0')
       << ms.count() << 'Z';
  nlohmann::ordered_json j;
  j["time"] = time.str();
  j["component"] = component;
  j["message"] = message;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream f(path);
  std::string token;
  if (!f || !std::getline(f, token) || token.empty()) {
    return Error{"cannot read a token from " + path, ErrorCode::kIo};
  }
  return token;
}

Status CheckTokenDir(const std::string& dir) {
  if (dir.empty()) return Invalid("a token folder needs a name");
  std::error_code e;
  if (!std::filesystem::exists(dir, e)) return CheckOutputFile(dir);  // made in a writable folder
  if (!std::filesystem::is_directory(dir, e)) return Invalid(dir + " exists and is not a folder");
  return CheckOutputFile((std::filesystem::path(dir) / ".fedldp-token-check").string());
}

Result<std::vector<std::string>> WriteTokenFiles(const std::string& dir,
                                                 std::span<const std::string> tokens) {
  FEDLDP_RETURN_IF_ERROR(CheckTokenDir(dir));
  std::error_code e;
  if (std::filesystem::create_directory(dir, e)) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, e);
  }
  if (e) return Error{"cannot make " + dir + ": " + e.message(), ErrorCode::kIo};
  std::vector<std::string> paths;
  std::size_t n = 1;
  for (const std::string& token : tokens) {
    std::string path;
    do {
      path = (std::filesystem::path(dir) / ("client-" + std::to_string(n++) + ".token")).string();
    } while (std::filesystem::exists(path, e));
    FEDLDP_RETURN_IF_ERROR(WriteFileAtomically(path, token + "\n", 0600));
    paths.push_back(path);
  }
  return paths;
}

namespace {

// A shuffled task's secrets: the server's key pair and the shuffler's token,
// read from their files, or drawn anew when a file is absent (its place
// checked); new ones are written by SaveNewSecrets only once every other
// check has passed, so a refused serve leaves no file behind.
struct ServeSecrets {
  ServerKeys keys;
  std::string shuffler_token;
  bool new_keys = false, new_token = false;
};

Result<ServeSecrets> LoadOrDrawSecrets(const ServeConfig& s) {
  ServeSecrets out;
  const std::string secret = s.KeyFile(), pub = secret + ".pub";
  if (std::filesystem::exists(secret)) {
    FEDLDP_ASSIGN_OR_RETURN(out.keys, ServerKeys::Load(pub, secret));
  } else {
    FEDLDP_RETURN_IF_ERROR(CheckOutputFile(secret));
    FEDLDP_RETURN_IF_ERROR(CheckOutputFile(pub));
    out.keys = ServerKeys::Generate();
    out.new_keys = true;
  }
  const std::string& token = s.shuffler_token_file;
  if (token.empty()) return Invalid("the shuffler's token needs a file (created if absent)");
  if (std::filesystem::exists(token)) {
    FEDLDP_ASSIGN_OR_RETURN(out.shuffler_token, ReadTokenFile(token));
  } else {
    FEDLDP_RETURN_IF_ERROR(CheckOutputFile(token));
    SecureRng rng;
    std::ostringstream hex;
    for (int i = 0; i < 4; ++i) hex << std::hex << std::setw(16) << std::setfill('0') << rng();
    out.shuffler_token = hex.str();
    out.new_token = true;
  }
  return out;
}

Status SaveNewSecrets(const ServeConfig& s, const ServeSecrets& secrets, const LogLine& log) {
  const std::string secret = s.KeyFile(), pub = secret + ".pub";
  if (secrets.new_keys) {
    FEDLDP_RETURN_IF_ERROR(secrets.keys.Save(pub, secret));
    if (log) log("created the server's key pair: " + secret + " (secret, 0600) and " + pub);
  }
  if (secrets.new_token) {
    FEDLDP_RETURN_IF_ERROR(
        WriteFileAtomically(s.shuffler_token_file, secrets.shuffler_token + "\n", 0600));
    if (log) {
      log("created the shuffler's token in " + s.shuffler_token_file +
          " (give it to fedldp shuffle --token-file)");
    }
  }
  return {};
}

}  // namespace

Status FedSelServeConfig::Validate() const {
  FEDLDP_RETURN_IF_ERROR(CheckServe(serve, config.shuffle));
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  if (config.tail_average != 0) {
    return Invalid("the deployment serves the last iterate: tail_average must be 0");
  }
  if (!config.server.is_identity()) {
    return Invalid(
        "the deployment's FedSel server steps by the round's mean: server_optimizer must be "
        "fedavg at server_lr 1");
  }
  if (config.shuffle && config.sample_clients) {
    return Invalid(
        "--shuffle with --sample-clients: the server would draw the sample, and amplification "
        "by sampling needs it hidden from the server; use one or the other");
  }
  return CheckDelta(central_delta, "the central delta");
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
    Say(observer,
        "task " + spec.id + ": " + FedSelVariantName(c.variant) +
            ", each report sealed whole to the server's key and handed to the "
            "shuffler; rounds of at least " +
            std::to_string(plan.smallest_round) + " reports, each shuffled among at least " +
            std::to_string(account.reports_per_round) + " (the server refuses a smaller batch)");
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

// A task's privacy record, worked out once: the accountant (a shuffled
// task's numerical bound composed over rounds) ran on every status request,
// every 2 s for each open status page and every Prometheus scrape.
class StatedOnce {
 public:
  template <typename Compute>
  const std::optional<PrivacyRecord>& Get(Compute compute) const {
    std::call_once(once_, [&] { record_ = compute(); });
    return record_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::optional<PrivacyRecord> record_;
};

// One protocol's part in the serving lifecycle (Serve below): FedSel's.
class FedSelServing {
 public:
  using Coordinator = FedSelCoordinator;

  FedSelServing(const FedSelServeConfig& config, const Dataset& data, std::vector<std::size_t> eval)
      : config_(config), data_(data), eval_(std::move(eval)) {
    spec_.id = config.serve.task;
    spec_.config = config.config;
    spec_.users = config.serve.users;
    spec_.dimension = data.dimension;
    spec_.classes = data.class_names;
    if (config.config.shuffle) spec_.central_delta = config.central_delta;
  }
  bool shuffled() const { return config_.config.shuffle; }
  // The task with `key` (a stand-in, or the server's; none unshuffled).
  Status Make(const std::string& key) {
    spec_.public_key = shuffled() ? key : std::string();
    return FedSelCoordinator::Check(spec_, config_.serve.policy);
  }
  std::string& deployment() { return spec_.deployment; }
  std::string Encode() const { return EncodeTask(spec_); }
  const char* bound_hint() const { return ""; }
  double Majority() {
    majority_ = data_.Subset(eval_).MajorityRate();
    return majority_;
  }
  auto Create(ServerState state, const ServerKeys& keys, const LogLine& log,
              FedSelCoordinator::OnEpoch on_model) {
    return FedSelCoordinator::Create(spec_, config_.serve.policy, std::move(state), log,
                                     std::move(on_model), keys);
  }
  Status Announce(const FedSelCoordinator& coord, const ServeObserver& observer) const {
    return AnnounceFedSel(config_, spec_, coord.plan(), observer);
  }
  double Evaluate(std::uint64_t epoch, const std::vector<double>& w, double majority,
                  const ServeObserver& observer) {
    const double accuracy = LinearModel::Accuracy(w, data_, eval_);
    Say(observer, "epoch " + std::to_string(epoch) + ": accuracy " + PercentText(accuracy) +
                      " % on " + std::to_string(eval_.size()) +
                      " evaluation rows (majority class " + PercentText(majority) + " %)");
    return accuracy;
  }
  const std::optional<PrivacyRecord>& Privacy(const FedSelCoordinator& coord) const {
    return stated_.Get(
        [&] { return FedSelPrivacyRecordOf(coord.plan(), config_.config, config_.central_delta); });
  }
  RunStatus StatusNow(const FedSelCoordinator& coord, const ServingStatus& serving) const {
    RunStatus s = StatusOf(coord, serving, Privacy(coord));
    s.protocol = "fedsel";
    s.round = coord.stats().round;
    s.rounds = coord.plan().rounds;
    s.majority = majority_;
    return s;
  }
  void Progress(const FedSelCoordinator::Stats& st, const ServeObserver& observer) {
    if (st.round == shown_round_) return;
    shown_round_ = st.round;
    Say(observer, "round " + std::to_string(st.round) + " (epoch " + std::to_string(st.epoch + 1) +
                      "), " + std::to_string(st.accepted) + " reports accepted, " +
                      std::to_string(st.rejected) + " rejected");
  }
  void Finish(const FedSelCoordinator& coord, ServeSummary& summary,
              const ServeObserver& observer) const {
    const auto st = coord.stats();
    summary.accepted_here = st.accepted;
    summary.privacy = Privacy(coord);
    if (summary.finished) {
      summary.accuracy = LinearModel::Accuracy(coord.weights(), data_, eval_);
    } else {
      Say(observer, "stopped at round " + std::to_string(st.round) + "; start again to resume");
    }
  }

 private:
  const FedSelServeConfig& config_;
  const Dataset& data_;
  const std::vector<std::size_t> eval_;
  StatedOnce stated_;
  FedSelTaskSpec spec_;
  std::uint64_t shown_round_ = 0;
  double majority_ = 0;
};

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
  Say(observer, DescribeServer(spec.config.server, spec.config.averaging, spec.config.rounds));
  return announced.privacy;
}

// LDP-FL's part in the serving lifecycle: always shuffled; the model
// starts from the secure generator's draw and every round's is evaluated
// on the test rows.
class LdpFlServing {
 public:
  using Coordinator = LdpFlCoordinator;

  LdpFlServing(const LdpFlServeConfig& config, const Dataset& train, std::vector<std::size_t> rows,
               const Dataset& test)
      : config_(config), train_(train), rows_(std::move(rows)), test_(test) {}
  bool shuffled() const { return true; }
  Status Make(const std::string& key) {
    const ServeConfig& s = config_.serve;
    FEDLDP_ASSIGN_OR_RETURN(
        spec_, MakeLdpFlTask(s.task, config_.config, s.users, train_, rows_, key, config_.chunk));
    return LdpFlCoordinator::Check(spec_, s.policy);
  }
  std::string& deployment() { return spec_.deployment; }
  std::string Encode() const { return EncodeLdpFlTask(spec_); }
  const char* bound_hint() const { return " (the state file was made for another task or key)"; }
  double Majority() const { return test_.MajorityRate(); }
  const std::optional<PrivacyRecord>& Privacy(const LdpFlCoordinator&) const {
    return stated_.Get([&]() -> std::optional<PrivacyRecord> {
      // The task was checked (LdpFlCoordinator::Create): it has a method.
      auto announced = net_internal::LdpFlMethod::Make(spec_).value()->Announce();
      return announced.ok() ? announced->record : std::nullopt;
    });
  }
  RunStatus StatusNow(const LdpFlCoordinator& coord, const ServingStatus& serving) const {
    RunStatus s = StatusOf(coord, serving, Privacy(coord));
    s.protocol = "ldpfl";
    s.round = coord.stats().round;
    s.rounds = static_cast<std::uint64_t>(config_.config.rounds);
    s.majority = test_.MajorityRate();
    return s;
  }
  Result<std::unique_ptr<LdpFlCoordinator>> Create(ServerState state, const ServerKeys& keys,
                                                   const LogLine& log,
                                                   LdpFlCoordinator::OnRound on_model) {
    SecureRng rng;
    FEDLDP_ASSIGN_OR_RETURN(NeuralNet net, NeuralNet::Create(config_.config.arch, rng()));
    const std::vector<float> init = net.GetWeights();
    return LdpFlCoordinator::Create(spec_, config_.serve.policy, std::move(state), keys,
                                    std::vector<double>(init.begin(), init.end()), log,
                                    std::move(on_model));
  }
  Status Announce(const LdpFlCoordinator&, const ServeObserver& observer) const {
    FEDLDP_ASSIGN_OR_RETURN(const std::string privacy, AnnounceLdpFl(spec_, observer));
    if (observer.privacy) observer.privacy(privacy);
    return {};
  }
  double Evaluate(std::uint64_t round, const std::vector<double>& w, double majority,
                  const ServeObserver& observer) {
    last_accuracy_ = NetAccuracy(spec_, w, test_);
    evaluated_round_ = round;
    Say(observer, "round " + std::to_string(round) + " of " +
                      std::to_string(config_.config.rounds) + ": accuracy " +
                      PercentText(last_accuracy_) + " % on " + std::to_string(test_.size()) +
                      " test rows (majority class " + PercentText(majority) + " %)");
    return last_accuracy_;
  }
  void Progress(const LdpFlCoordinator::Stats&, const ServeObserver&) {}  // rounds say accuracy
  void Finish(const LdpFlCoordinator& coord, ServeSummary& summary,
              const ServeObserver& observer) const {
    const auto st = coord.stats();
    summary.pieces_rejected = st.pieces_rejected;
    summary.privacy = Privacy(coord);
    if (summary.finished) {
      // The last round's model was evaluated as it closed, unless this
      // start found the task already finished.
      summary.accuracy = evaluated_round_ == st.round ? last_accuracy_
                                                      : NetAccuracy(spec_, coord.released(), test_);
    } else {
      Say(observer, "stopped after " + std::to_string(st.round) + " rounds; start again to resume");
    }
  }

 private:
  const LdpFlServeConfig& config_;
  StatedOnce stated_;
  const Dataset& train_;
  const std::vector<std::size_t> rows_;
  const Dataset& test_;
  LdpFlTaskSpec spec_;
  std::uint64_t evaluated_round_ = 0;
  double last_accuracy_ = 0;
};

// OK if the server's port, and the monitor's if any, are free now (a port
// in use is refused before anything is written).
Status CheckPorts(const ServeConfig& s) {
  FEDLDP_RETURN_IF_ERROR(CheckListenable(s.address));
  if (s.monitor.empty()) return {};
  if (Status busy = CheckListenable(s.monitor); !busy.ok()) {
    return Error{"--monitor: " + busy.error()};
  }
  return {};
}

// The monitor (net/monitor.h) on s.monitor, if asked for, answering from
// `status`; said on the observer.
Result<std::unique_ptr<Monitor>> StartMonitor(const ServeConfig& s, const ServeObserver& observer,
                                              std::function<RunStatus()> status) {
  if (s.monitor.empty()) return std::unique_ptr<Monitor>();
  FEDLDP_ASSIGN_OR_RETURN(auto monitor, Monitor::Start(s.monitor, std::move(status)));
  const std::string at = "http://" + BoundAddress(s.monitor, monitor->port());
  Say(observer, "monitor: " + at + "/ (status page), " + at + "/metrics (Prometheus)");
  if (observer.monitoring) observer.monitoring(monitor->port());
  return monitor;
}

// The serving lifecycle both protocols share (serve.h): the task checked
// with a stand-in key before any file is made, the key pair and token
// loaded or created, the task bound, the server started, the privacy
// statement given, the rounds run.
template <typename Protocol>
Result<ServeSummary> Serve(const ServeConfig& s, Protocol& p, const ServeObserver& observer,
                           std::stop_token stop) {
  const LogLine log = [&observer](const std::string& line) { Say(observer, line); };
  FEDLDP_RETURN_IF_ERROR(p.Make(std::string(32, '\0')));
  FEDLDP_RETURN_IF_ERROR(CheckPorts(s));
  FEDLDP_ASSIGN_OR_RETURN(auto state, OpenEnrolled(s));
  p.deployment() = state.deployment();
  ServeSecrets secrets;
  if (p.shuffled()) {
    FEDLDP_ASSIGN_OR_RETURN(secrets, LoadOrDrawSecrets(s));
  }
  const ServerKeys& keys = secrets.keys;
  const std::string& shuffler_token = secrets.shuffler_token;
  FEDLDP_RETURN_IF_ERROR(p.Make(keys.public_key));
  const std::string task = p.Encode();
  // Every check passed before the first write: new secrets, then the task.
  if (Status can = state.CanBindTask(task); !can.ok()) {
    return Error{can.error() + p.bound_hint(), can.code()};
  }
  FEDLDP_RETURN_IF_ERROR(SaveNewSecrets(s, secrets, log));
  if (Status bound = state.BindTask(task); !bound.ok()) {
    return Error{bound.error() + p.bound_hint(), bound.code()};
  }
  ServeSummary summary;
  summary.majority = p.Majority();
  PendingModels pending;
  FEDLDP_ASSIGN_OR_RETURN(
      const auto coordinator,
      p.Create(std::move(state), keys, log,
               [&](std::uint64_t round, std::span<const double> w) { pending.Push(round, w); }));
  auto& coord = *coordinator;
  // Started before anything is said of the task: a port in use is one line.
  FEDLDP_ASSIGN_OR_RETURN(const auto server, CoordinatorServer::Start(coord, s.address, s.tls,
                                                                      shuffler_token, s.threads));
  if (Status said = p.Announce(coord, observer); !said.ok()) {
    server->Shutdown();
    return Error{said.error(), said.code()};
  }
  ServingStatus serving;
  // The monitor is up before the server says it listens: whoever waits for
  // that line (an operator's script, a test) may scrape it at once.
  FEDLDP_ASSIGN_OR_RETURN(const auto monitor,
                          StartMonitor(s, observer, [&] { return p.StatusNow(coord, serving); }));
  if (observer.listening) observer.listening(server->port());
  Say(observer, Listening(s, server->port(), coord.stats().started));
  const auto evaluate = [&](std::uint64_t round, const std::vector<double>& w) {
    serving.Evaluated(p.Evaluate(round, w, summary.majority, observer));
  };
  const auto answer_requests = [&] {
    AnswerTokenRequests(
        s.state,
        [&](std::uint64_t user, std::string_view hash) { return coord.ReplaceToken(user, hash); },
        log);
  };
  FEDLDP_RETURN_IF_ERROR(RunRounds(
      coord, *server, pending, evaluate, [&](const auto& st) { p.Progress(st, observer); },
      answer_requests, s.policy, stop, serving, summary));
  p.Finish(coord, summary, observer);
  return summary;
}

}  // namespace

Result<ServeSummary> ServeFedSel(const FedSelServeConfig& config, const Dataset& data,
                                 std::span<const std::size_t> eval_rows,
                                 const ServeObserver& observer, std::stop_token stop) {
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  if (data.classes != 2) {
    std::string names;
    for (const std::string& c : data.class_names) names += (names.empty() ? "" : ", ") + c;
    return Invalid("FedSel's linear models need two classes; " + data.name + " has " +
                   std::to_string(data.classes) + (names.empty() ? "" : " (" + names + ")") +
                   " (is the label column right? --label-column names it)");
  }
  std::vector<std::size_t> eval =
      eval_rows.empty() ? AllRows(data.size())
                        : std::vector<std::size_t>(eval_rows.begin(), eval_rows.end());
  if (eval.empty()) return Invalid("no rows to evaluate the model on");
  FedSelServing protocol(config, data, std::move(eval));
  return Serve(config.serve, protocol, observer, stop);
}

Result<ServeSummary> ServeLdpFl(const LdpFlServeConfig& config, const Dataset& train,
                                std::span<const std::size_t> train_rows, const Dataset& test,
                                const ServeObserver& observer, std::stop_token stop) {
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  if (test.size() == 0) return Invalid("no test rows to evaluate the model on");
  std::vector<std::size_t> rows =
      train_rows.empty() ? AllRows(train.size())
                         : std::vector<std::size_t>(train_rows.begin(), train_rows.end());
  LdpFlServing protocol(config, train, std::move(rows), test);
  return Serve(config.serve, protocol, observer, stop);
}

}  // namespace fedldp
