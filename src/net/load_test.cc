#include "fedldp/net/load_test.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>
#include <type_traits>
#include <vector>

#include "fedldp/base/limits.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/services.h"
#include "load_clients.h"

namespace fedldp {
namespace {

namespace fs = std::filesystem;

// What the server's child process tells its parent through a pipe: the port
// it listens on ('P'), then its summary ('S') or its error ('E').
static_assert(std::is_trivially_copyable_v<ServeCounts>);

bool WriteAll(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* data, std::size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

void SendError(int fd, const Error& e) {
  const char tag = 'E';
  const auto code = static_cast<std::int32_t>(e.code);
  const auto size = static_cast<std::uint32_t>(e.message.size());
  (void)(WriteAll(fd, &tag, 1) && WriteAll(fd, &code, sizeof code) &&
         WriteAll(fd, &size, sizeof size) && WriteAll(fd, e.message.data(), size));
}

// One message from the child: its port, its summary, or its error. An
// error too if the child ended without a word.
struct ChildMessage {
  char tag = 0;
  std::int32_t port = 0;
  ServeCounts summary;
  Error error;
};
ChildMessage Receive(int fd) {
  ChildMessage m;
  if (!ReadAll(fd, &m.tag, 1)) {
    m.tag = 'E';
    m.error = {"the server ended without a word", ErrorCode::kFailedPrecondition};
    return m;
  }
  bool ok = true;
  if (m.tag == 'P') {
    ok = ReadAll(fd, &m.port, sizeof m.port);
  } else if (m.tag == 'S') {
    ok = ReadAll(fd, &m.summary, sizeof m.summary);
  } else {
    std::int32_t code = 0;
    std::uint32_t size = 0;
    ok = ReadAll(fd, &code, sizeof code) && ReadAll(fd, &size, sizeof size) && size < (1u << 20);
    m.error.message.resize(ok ? size : 0);
    ok = ok && ReadAll(fd, m.error.message.data(), size);
    m.error.code = static_cast<ErrorCode>(code);
  }
  if (!ok) {
    m.tag = 'E';
    m.error = {"the server's message was cut short", ErrorCode::kFailedPrecondition};
  }
  return m;
}

// The child: ServeFedSel until the task is done or SIGTERM / SIGINT; its
// log in `log_path`, its port, summary or error down `fd`. Never returns.
[[noreturn]] void ServeInChild(const FedSelServeConfig& config, const Dataset& data, int fd,
                               const std::string& log_path) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::thread([&stop, signals] {
    int signal = 0;
    sigwait(&signals, &signal);
    stop.request_stop();
  }).detach();
  std::ofstream log(log_path);
  std::mutex log_mu;
  ServeObserver observer;
  observer.log = [&](const std::string& line) {
    std::lock_guard lock(log_mu);
    log << LogStamp() << " serve: " << line << std::endl;
  };
  observer.privacy = [&](const std::string& statement) {
    std::lock_guard lock(log_mu);
    log << statement << std::flush;
  };
  observer.listening = [fd](int port) {
    const char tag = 'P';
    const auto p = static_cast<std::int32_t>(port);
    (void)(WriteAll(fd, &tag, 1) && WriteAll(fd, &p, sizeof p));
  };
  const auto served = ServeFedSel(config, data, {}, observer, stop.get_token());
  if (served.ok()) {
    const char tag = 'S';
    const ServeCounts& counts = *served;
    (void)(WriteAll(fd, &tag, 1) && WriteAll(fd, &counts, sizeof counts));
  } else {
    observer.log("failed: " + served.error());
    SendError(fd, {served.error(), served.code()});
  }
  log.close();
  ::_exit(served.ok() && !stop.stop_requested() ? 0 : 1);
}

// Raises the soft limit on open files to at least `needed`, within the
// hard limit (or the hard limit too, when privileged); the error names the
// fixes, `memory_ledgers` whether ledgers in memory is one.
Status AllowOpenFiles(std::size_t needed, bool memory_ledgers) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return Status::Ok();
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= needed) return Status::Ok();
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    // A privileged process (CAP_SYS_RESOURCE) may raise the hard limit too.
    const rlimit raised{needed, needed};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return Status::Ok();
    return Error{
        "this many clients need about " + std::to_string(needed) +
            " open files, but the limit is " + std::to_string(limit.rlim_max) +
            " (ulimit -Hn): fewer clients, a higher limit" +
            (memory_ledgers ? "" : ", or ledgers in memory (one file per client, not three)"),
        ErrorCode::kInvalidArgument};
  }
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? needed : limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Error{"cannot raise the limit on open files to " + std::to_string(needed),
                 ErrorCode::kIo};
  }
  return Status::Ok();
}

double PeakMib(const rusage& u) { return static_cast<double>(u.ru_maxrss) / 1024.0; }

// The file's size in MiB, and its write-ahead log's (0 if absent).
double FileMib(const std::string& path) {
  double bytes = 0;
  for (const std::string& f : {path, path + "-wal"}) {
    std::error_code e;
    const auto size = fs::file_size(f, e);
    if (!e) bytes += static_cast<double>(size);
  }
  return bytes / (1 << 20);
}

// OK if the server counted every report a client saw accepted, and no more
// than those and the ones in flight when a client vanished.
Status CheckCountedOnce(const LoadTestSummary& s) {
  if (s.reports >= s.reports_seen_accepted &&
      s.reports <= s.reports_seen_accepted + s.reports_in_flight) {
    return {};
  }
  return Error{"the server counted " + std::to_string(s.reports) +
               " reports, but the clients saw " + std::to_string(s.reports_seen_accepted) +
               " accepted and had " + std::to_string(s.reports_in_flight) +
               " in flight: a report was lost or counted twice"};
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Status LoadTestConfig::Validate() const {
  const auto invalid = [](const std::string& why) {
    return Error{why, ErrorCode::kInvalidArgument};
  };
  if (clients == 0) return invalid("a load test needs at least one client");
  if (Status bad = CheckCount(kEpochs, epochs); !bad.ok()) return invalid(bad.error());
  if (!(batch_fraction > 0 && batch_fraction <= 1)) {
    return invalid("batch fraction must be in (0, 1]");
  }
  if (poll_ms < 1) return invalid("clients poll every 1 ms at most often");
  if (server_threads < 1 || server_threads > 256) {
    return invalid("the server answers calls on 1 to 256 threads");
  }
  if (!(drop_out >= 0 && drop_out <= 0.9)) return invalid("the drop-out fraction is in [0, 0.9]");
  if ((drop_out > 0 || memory_ledgers) && driver != LoadDriver::kCallback) {
    return invalid("clients drop out, and keep ledgers in memory, with the callback driver only");
  }
  if (drop_round < 1) return invalid("rounds count from 1");
  if (stale_ms < 1000 || stale_ms > 600000) return invalid("stale-ms is in [1000, 600000]");
  if (users != 0 && users < clients) return invalid("fewer users than clients");
  if (enrolled > (std::size_t{1} << 24)) return invalid("at most 16,777,216 enrolled clients");
  return Status::Ok();
}

namespace {

// The task the server child serves, checked here before anything starts:
// the child only serves.
Result<FedSelServeConfig> LoadTestTask(const LoadTestConfig& config, const Dataset& data,
                                       std::size_t users, const fs::path& dir) {
  FedSelServeConfig serve;
  serve.serve.state = (dir / "server.sqlite").string();
  serve.serve.address = "127.0.0.1:0";
  serve.serve.threads = config.server_threads;
  serve.serve.task = "load-test";
  serve.serve.users = users;
  serve.serve.policy.retry = std::chrono::milliseconds(config.poll_ms);
  serve.serve.policy.stale_after = std::chrono::milliseconds(config.stale_ms);
  serve.serve.policy.deadline = std::chrono::milliseconds(120000);
  FEDLDP_ASSIGN_OR_RETURN(const FedSelVariant variant, ParseFedSelVariant(config.variant));
  serve.config = DefaultFedSelConfig(variant);
  serve.config.tail_average = 0;
  serve.config.epsilon = 8;
  serve.config.epochs = config.epochs;
  serve.config.batch_fraction = config.batch_fraction;
  FEDLDP_RETURN_IF_ERROR(serve.Validate());
  FedSelTaskSpec spec;
  spec.id = serve.serve.task;
  spec.config = serve.config;
  spec.users = users;
  spec.dimension = data.dimension;
  FEDLDP_RETURN_IF_ERROR(FedSelCoordinator::Check(spec, serve.serve.policy));
  return serve;
}

// One client each: its token, its ledger, its share of the users' rows.
Result<std::vector<net_internal::LoadClientSpec>> LoadTestClients(const LoadTestConfig& config,
                                                                  std::span<const std::size_t> rows,
                                                                  const std::string& state,
                                                                  const fs::path& dir) {
  FEDLDP_ASSIGN_OR_RETURN(ServerState opened, ServerState::Open(state));
  auto tokens = opened.IssueTokens(std::max(config.clients, config.enrolled));
  if (!tokens.ok()) return Error{tokens.error(), tokens.code()};
  std::vector<net_internal::LoadClientSpec> specs(config.clients);
  for (std::size_t i = 0; i < config.clients; ++i) {
    const std::size_t a = i * rows.size() / config.clients;
    const std::size_t b = (i + 1) * rows.size() / config.clients;
    specs[i].token = (*tokens)[i];
    if (!config.memory_ledgers) {
      specs[i].ledger = (dir / ("ledger" + std::to_string(i) + ".sqlite")).string();
    }
    specs[i].rows.assign(rows.begin() + static_cast<std::ptrdiff_t>(a),
                         rows.begin() + static_cast<std::ptrdiff_t>(b));
    // Evenly spread: client i drops when floor((i + 1) p) > floor(i p).
    const auto dropped = [&](std::size_t k) {
      return static_cast<std::size_t>(std::floor(static_cast<double>(k) * config.drop_out));
    };
    if (dropped(i + 1) > dropped(i)) {
      specs[i].drop_out = net_internal::LoadDropOut{config.drop_round, dropped(i) % 2 == 1};
    }
  }
  return specs;
}

// The clients, on threads of this process: one thread each, or one thread
// driving them all (LoadDriver::kCallback).
std::vector<std::thread> StartLoadClients(const LoadTestConfig& config, const std::string& address,
                                          const Dataset& data,
                                          const std::vector<net_internal::LoadClientSpec>& specs,
                                          net_internal::LoadClientsProgress& progress,
                                          std::stop_token stop) {
  std::vector<std::thread> threads;
  if (config.driver == LoadDriver::kCallback) {
    threads.emplace_back(
        [&, stop] { net_internal::RunCallbackClients(address, data, specs, progress, stop); });
    return threads;
  }
  threads.reserve(config.clients);
  for (std::size_t i = 0; i < config.clients; ++i) {
    threads.emplace_back([&, i, stop] {
      FedSelClientOptions c;
      c.address = address;
      c.token = specs[i].token;
      c.ledger = specs[i].ledger;
      c.give_up = std::chrono::milliseconds(120000);
      auto done = RunFedSelClient(c, data, specs[i].rows, stop);
      if (!done.ok()) {
        ++progress.failed;
        std::lock_guard lock(progress.mu);
        if (progress.first_error.empty()) progress.first_error = done.error();
        return;
      }
      progress.accepted += done->reports;  // accepted by the server, resends counted once
      ++progress.finished;
    });
  }
  return threads;
}

// How the server child ended.
struct ChildEnd {
  int status = 0;
  rusage usage{};
  bool stopped = false;        // a stop was asked for, and passed on to the child
  bool client_failed = false;  // a client failed, and the child was stopped
};

// Waits for the server child, saying every 5 s how the clients are doing,
// and passes a stop on to it (SIGTERM). A client that failed stops it too:
// the run can no longer be measured as asked, and one that failed before
// it joined left the server waiting for its users without end (the run
// stalled, saying "4 failed" every 5 s).
ChildEnd WaitForServer(pid_t child, const LoadTestConfig& config,
                       const net_internal::LoadClientsProgress& progress, const LogLine& say,
                       std::stop_token stop) {
  ChildEnd end;
  auto last_show = std::chrono::steady_clock::now();
  for (;;) {
    const pid_t got = ::wait4(child, &end.status, WNOHANG, &end.usage);
    if (got == child || (got < 0 && errno != EINTR)) return end;
    const bool failed = progress.failed.load() > 0;
    if ((stop.stop_requested() || failed) && !end.stopped) {
      ::kill(child, SIGTERM);
      end.stopped = true;
      end.client_failed = failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::chrono::steady_clock::now() - last_show > std::chrono::seconds(5)) {
      if (say) {
        say(std::to_string(progress.finished.load()) + " of " + std::to_string(config.clients) +
            " clients finished, " + std::to_string(progress.dropped.load()) + " dropped out, " +
            std::to_string(progress.failed.load()) + " failed; " +
            std::to_string(progress.accepted.load()) + " reports accepted");
      }
      last_show = std::chrono::steady_clock::now();
    }
  }
}

// The server in a child process, listening on `port`; `from` reads what it
// sends. A child that could not start is waited for, and its reason given.
struct ServerChild {
  pid_t pid = 0;
  int from = -1, port = 0;
};
Result<ServerChild> ForkServer(const FedSelServeConfig& serve, const Dataset& data,
                               const std::string& serve_log,
                               const std::function<Error(const Error&, int)>& failed) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return Error{"cannot make a pipe", ErrorCode::kIo};
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return Error{"cannot start the server process", ErrorCode::kIo};
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    ServeInChild(serve, data, pipe_fds[1], serve_log);
  }
  ::close(pipe_fds[1]);
  const ChildMessage first = Receive(pipe_fds[0]);
  if (first.tag != 'P') {
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(pipe_fds[0]);
    return failed(first.error, status);
  }
  return ServerChild{child, pipe_fds[0], first.port};
}

// What the run measured: the server's summary and peak memory, the clients'.
LoadTestSummary Summarize(const LoadTestConfig& config, const ServeCounts& s, const ChildEnd& end,
                          const net_internal::LoadClientsProgress& progress) {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  LoadTestSummary summary;
  summary.clients = config.clients;
  summary.enrolled = std::max(config.clients, config.enrolled);
  summary.driver = config.driver;
  summary.rounds = s.rounds;
  summary.reports = s.accepted_here;
  summary.seconds = s.training_seconds;
  summary.reports_per_second = s.training_seconds > 0 ? s.accepted_here / s.training_seconds : 0;
  summary.server_cpu_seconds = s.training_cpu_seconds;
  summary.server_peak_mib = PeakMib(end.usage);
  summary.clients_peak_mib = PeakMib(self);
  summary.finished_clients = progress.finished.load();
  summary.failed_clients = progress.failed.load();
  summary.dropped_clients = progress.dropped.load();
  summary.reports_seen_accepted = progress.accepted.load();
  summary.reports_in_flight = progress.in_flight.load();
  summary.calls = progress.calls.load();
  summary.retried_calls = progress.retries.load();
  const std::uint64_t submitted = progress.submitted.load();
  if (submitted > 0) {
    summary.bytes_per_report =
        static_cast<double>(progress.report_bytes.load()) / static_cast<double>(submitted);
  }
  summary.first_error = progress.first_error;
  return summary;
}

// OK if the run ended with the server's summary; else why not: a client
// failed, the run was stopped, or the server failed.
Status EndedWell(const ChildEnd& end, const ChildMessage& last,
                 net_internal::LoadClientsProgress& progress, const std::string& kept,
                 const std::function<Error(const Error&, int)>& child_failed) {
  if (end.client_failed) {
    std::lock_guard lock(progress.mu);
    return Error{"a client failed, so the run stopped: " + progress.first_error + kept,
                 ErrorCode::kFailedPrecondition};
  }
  if (last.tag == 'S' && WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0) return {};
  if (end.stopped) return Error{"stopped" + kept, ErrorCode::kFailedPrecondition};
  return child_failed(last.tag == 'E' ? last.error : Error{"it did not finish the task"},
                      end.status);
}

// The working folder: config.dir, or a fresh one in /dev/shm (the temporary
// folder without it).
fs::path LoadTestDir(const LoadTestConfig& config) {
  if (!config.dir.empty()) return config.dir;
  const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  return base / ("fedldp-load-" + std::to_string(::getpid()));
}

// The rows the clients share: `given`, or every row of `data`; at least one
// per client.
Result<std::vector<std::size_t>> LoadTestRows(const LoadTestConfig& config, const Dataset& data,
                                              std::span<const std::size_t> given) {
  std::vector<std::size_t> rows(given.begin(), given.end());
  if (rows.empty()) {
    rows.resize(data.size());
    std::iota(rows.begin(), rows.end(), std::size_t{0});
  }
  if (config.users != 0) {
    std::vector<std::size_t> cycled(config.users);
    for (std::size_t u = 0; u < cycled.size(); ++u) cycled[u] = rows[u % rows.size()];
    rows = std::move(cycled);
  }
  if (config.clients > rows.size()) {
    return Error{"there are more clients (" + std::to_string(config.clients) + ") than rows (" +
                     std::to_string(rows.size()) + ")",
                 ErrorCode::kInvalidArgument};
  }
  return rows;
}

// What a run serves and who takes part: the task, the clients (enrolled
// into the state file, timed), the limit on open files raised for them.
struct Prepared {
  FedSelServeConfig serve;
  std::vector<net_internal::LoadClientSpec> specs;
  double enrol_seconds = 0, state_mib = 0;
};
Result<Prepared> Prepare(const LoadTestConfig& config, const Dataset& data,
                         std::span<const std::size_t> rows, const fs::path& dir) {
  Prepared p;
  FEDLDP_ASSIGN_OR_RETURN(p.serve, LoadTestTask(config, data, rows.size(), dir));
  // Each client holds a connection and its ledger open (and the server
  // one connection per client): raise the soft limit on open files.
  FEDLDP_RETURN_IF_ERROR(AllowOpenFiles((config.memory_ledgers ? 1 : 3) * config.clients + 256,
                                        config.memory_ledgers));
  const auto enrol_start = std::chrono::steady_clock::now();
  FEDLDP_ASSIGN_OR_RETURN(p.specs, LoadTestClients(config, rows, p.serve.serve.state, dir));
  p.enrol_seconds = SecondsSince(enrol_start);
  p.state_mib = FileMib(p.serve.serve.state);
  return p;
}

}  // namespace

Result<LoadTestSummary> RunLoadTest(const LoadTestConfig& config, const Dataset& data,
                                    std::span<const std::size_t> rows_given, const LogLine& log,
                                    std::stop_token stop) {
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  FEDLDP_ASSIGN_OR_RETURN(const std::vector<std::size_t> rows,
                          LoadTestRows(config, data, rows_given));
  const auto say = [&log](const std::string& line) {
    if (log) log(line);
  };
  const fs::path dir = LoadTestDir(config);
  std::error_code made;
  fs::create_directories(dir, made);
  if (made) return Error{"cannot make " + dir.string() + ": " + made.message(), ErrorCode::kIo};
  FEDLDP_ASSIGN_OR_RETURN(const Prepared prepared, Prepare(config, data, rows, dir));
  const FedSelServeConfig& serve = prepared.serve;
  const auto& specs = prepared.specs;
  const std::string serve_log = (dir / "serve.err").string();
  // Its failure: the reason it sent, with its log's place; the folder stays.
  const auto child_failed = [&](const Error& e, int status) -> Error {
    return Error{"the server failed (status " + std::to_string(status) + "): " + e.message +
                     " (its log and state are kept in " + dir.string() + ")",
                 ErrorCode::kFailedPrecondition};
  };
  const auto fork_start = std::chrono::steady_clock::now();
  FEDLDP_ASSIGN_OR_RETURN(const ServerChild server,
                          ForkServer(serve, data, serve_log, child_failed));
  const double server_start_seconds = SecondsSince(fork_start);
  const std::string address = "127.0.0.1:" + std::to_string(server.port);
  say("server on " + address + " (log " + serve_log + "); starting " +
      std::to_string(config.clients) + " clients over " + std::to_string(rows.size()) + " users");
  net_internal::LoadClientsProgress progress;
  std::stop_source stop_clients;
  std::vector<std::thread> threads =
      StartLoadClients(config, address, data, specs, progress, stop_clients.get_token());
  const ChildEnd end = WaitForServer(server.pid, config, progress, say, stop);
  // The server is gone: its clients would retry it until they give up
  // (minutes); they stop now.
  stop_clients.request_stop();
  for (auto& t : threads) t.join();
  const ChildMessage last = Receive(server.from);
  ::close(server.from);
  const std::string kept = " (the server's log and state are kept in " + dir.string() + ")";
  FEDLDP_RETURN_IF_ERROR(EndedWell(end, last, progress, kept, child_failed));
  LoadTestSummary summary = Summarize(config, last.summary, end, progress);
  summary.users = rows.size();
  summary.dir = dir.string();
  summary.enrol_seconds = prepared.enrol_seconds;
  summary.state_mib = prepared.state_mib;
  summary.server_start_seconds = server_start_seconds;
  // The statement serve made of the same task (its plan, its delta).
  FEDLDP_ASSIGN_OR_RETURN(const FedSelPlan plan,
                          PlanFedSel(serve.config, rows.size(), data.dimension));
  summary.privacy = FedSelPrivacyRecordOf(plan, serve.config, serve.central_delta);
  if (Status counted = CheckCountedOnce(summary); !counted.ok()) {
    return Error{counted.error() + kept, ErrorCode::kFailedPrecondition};
  }
  if (config.dir.empty()) fs::remove_all(dir, made);
  return summary;
}

}  // namespace fedldp
