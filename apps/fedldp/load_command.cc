// fedldp load: a load test of the FedSel deployment on loopback. A real
// `fedldp serve` runs as a child process; this process hosts --clients
// concurrent clients (each its own thread, gRPC channel, token and ledger,
// running the deployed client's own loop, RunFedSelClient) over equal parts
// of the rows. Reports/s are the server's reports counted over its training
// time; peak memory is the server process's maximum resident set (wait4).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/base/version.h"
#include "fedldp/net/services.h"

extern char** environ;

namespace fedldp::cli {
namespace {

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(a);
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

// A number of the server's last --out record, or -1 if it has none.
double JsonField(const nlohmann::json& record, const std::string& key) {
  return record.is_object() && record.contains(key) && record[key].is_number()
             ? record[key].get<double>()
             : -1;
}

}  // namespace

void SetupLoad(CLI::App& app, LoadOptions& o) {
  app.description(
      "Load-test the FedSel deployment on loopback: start fedldp serve as a child process\n"
      "and --clients concurrent clients in this process (one thread, channel, token and\n"
      "ledger each), splitting --rows among them; print reports/s over the server's\n"
      "training time and the server's peak memory.");
  app.add_option("--clients", o.clients, "Concurrent clients")
      ->check(CLI::Range(std::size_t{1}, std::size_t{20000}))
      ->capture_default_str();
  app.add_option("--dataset", o.dataset, "Dataset whose rows the clients hold")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  app.add_option("--rows", o.rows, "Rows FIRST:END, one user each")->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--batch-fraction", o.batch_fraction, "m / N")->capture_default_str();
  app.add_option("--poll-ms", o.poll_ms,
                 "How often clients poll when the server does not hold the poll")->capture_default_str();
  app.add_option("--dir", o.dir, "Work folder (default: fresh in /dev/shm, removed after)");
  app.add_option("--out", o.out, "Append one JSON line with the result to this file");
}

int RunLoad(const LoadOptions& o, std::ostream& out, std::ostream& err) {
  CheckOut(o.out);
  namespace fs = std::filesystem;
  const Dataset data = LoadData(o.dataset, o.data_dir);
  const auto rows = ParseRows(o.rows, data.size(), "--rows");
  if (o.clients > rows.size()) throw UsageError("--clients exceeds the rows");
  const bool own_dir = o.dir.empty();
  const fs::path dir =
      own_dir ? (fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path()) /
                    ("fedldp-load-" + std::to_string(::getpid()))
              : fs::path(o.dir);
  fs::create_directories(dir);
  const std::string state_path = (dir / "server.sqlite").string();
  std::vector<std::string> tokens;
  {
    auto opened = ServerState::Open(state_path);
    if (!opened.ok()) throw UsageError(opened.error());
    ServerState state = std::move(opened).value();
    auto issued = state.IssueTokens(o.clients);
    if (!issued.ok()) throw std::runtime_error(issued.error());
    tokens = std::move(issued).value();
  }
  const int port = FreeLoopbackPort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const std::string result = (dir / "result.json").string();
  std::vector<std::string> args = {"/proc/self/exe",
                                   "serve",
                                   "--state",
                                   state_path,
                                   "--address",
                                   address,
                                   "--users",
                                   std::to_string(rows.size()),
                                   "--dataset",
                                   o.dataset,
                                   "--epsilon",
                                   "8",
                                   "--epochs",
                                   std::to_string(o.epochs),
                                   "--batch-fraction",
                                   std::to_string(o.batch_fraction),
                                   "--poll-ms",
                                   std::to_string(o.poll_ms),
                                   "--stale-ms",
                                   "10000",
                                   "--deadline-ms",
                                   "120000",
                                   "--out",
                                   result};
  if (!o.data_dir.empty()) args.insert(args.end(), {"--data-dir", o.data_dir});
  if (o.dataset == "adult" && o.rows != "0:32561")
    args.insert(args.end(), {"--eval-rows", "32561:"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  const std::string serve_log = (dir / "serve.err").string();
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, serve_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t server = -1;
  const int rc = posix_spawn(&server, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) throw std::runtime_error("cannot start fedldp serve");
  err << Stamp() << " load: server on " << address << " (log " << serve_log << "); starting "
      << o.clients << " clients over " << rows.size() << " users" << std::endl;

  std::atomic<std::size_t> failed{0}, finished{0};
  // Requested when the server fails or the run is stopped: the clients end.
  std::stop_source stop_clients;
  std::atomic<std::uint64_t> reports{0};
  std::string first_error;
  std::mutex error_mu;
  std::vector<std::thread> threads;
  threads.reserve(o.clients);
  for (std::size_t i = 0; i < o.clients; ++i) {
    const std::size_t a = i * rows.size() / o.clients, b = (i + 1) * rows.size() / o.clients;
    threads.emplace_back([&, i, a, b] {
      FedSelClientOptions c;
      c.address = address;
      c.token = tokens[i];
      c.ledger = (dir / ("ledger" + std::to_string(i) + ".sqlite")).string();
      c.give_up = std::chrono::milliseconds(120000);
      const std::vector<std::size_t> mine(rows.begin() + static_cast<std::ptrdiff_t>(a),
                                          rows.begin() + static_cast<std::ptrdiff_t>(b));
      auto summary = RunFedSelClient(c, data, mine, stop_clients.get_token());
      if (!summary.ok()) {
        ++failed;
        std::lock_guard lock(error_mu);
        if (first_error.empty()) first_error = summary.error();
        return;
      }
      reports += summary->reports;
      ++finished;
    });
  }
  CatchSignals();
  int status = 0;
  rusage usage{};
  bool stopping = false;
  auto last_show = std::chrono::steady_clock::now();
  for (;;) {
    const pid_t got = ::wait4(server, &status, WNOHANG, &usage);
    if (got == server && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      // The server failed: its clients would retry it until they give up
      // (minutes); stop them now, and say why at once (below).
      stop_clients.request_stop();
    }
    if (got == server || (got < 0 && errno != EINTR)) break;
    if (g_stop.load() && !stopping) {
      stop_clients.request_stop();
      ::kill(server, SIGTERM);
      stopping = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::chrono::steady_clock::now() - last_show > std::chrono::seconds(5)) {
      err << Stamp() << " load: " << finished.load() << " of " << o.clients << " clients finished, "
          << failed.load() << " failed" << std::endl;
      last_show = std::chrono::steady_clock::now();
    }
  }
  for (auto& t : threads) t.join();
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  std::ifstream f(result);
  std::string json, line;
  while (std::getline(f, line)) {
    if (!line.empty()) json = line;  // the server's last record
  }
  const auto record = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  const double counted = JsonField(record, "accepted_here");
  const double seconds = JsonField(record, "training_seconds");
  const double rounds = JsonField(record, "rounds");
  const double server_cpu = JsonField(record, "training_cpu_seconds");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || json.empty() || seconds <= 0) {
    // The server's own last line says why (its error, or where it stopped).
    std::ifstream log(serve_log);
    std::string line, last;
    while (std::getline(log, line)) {
      if (!line.empty()) last = line;
    }
    err << "load: the server " << (stopping ? "was stopped" : "failed") << " (status " << status
        << (last.empty() ? "" : "): " + last + " (") << "its log and state are kept in "
        << dir.string() << ")\n";
    return 1;
  }
  if (own_dir) fs::remove_all(dir);
  const double per_second = counted / seconds;
  out << std::fixed << std::setprecision(1) << "load: " << o.clients << " concurrent clients, "
      << rows.size() << " users, " << std::setprecision(0) << rounds << " rounds: " << counted
      << " reports in " << std::setprecision(2) << seconds << " s = " << std::setprecision(0)
      << per_second << " reports/s; server peak memory " << std::setprecision(1)
      << usage.ru_maxrss / 1024.0 << " MiB (clients' process " << self.ru_maxrss / 1024.0
      << " MiB); server CPU " << std::setprecision(2) << server_cpu << " s in training, "
      << std::setprecision(0) << server_cpu / counted * 1e6 << " us per report; "
      << finished.load() << " clients finished, " << failed.load() << " failed"
      << (first_error.empty() ? "" : " (" + first_error + ")") << "\n";
  if (!o.out.empty()) {
    nlohmann::ordered_json j;
    j["command"] = "load";
    StartRecord(j);
    j["clients"] = o.clients;
    j["users"] = rows.size();
    j["rounds"] = rounds;
    j["reports"] = counted;
    j["seconds"] = seconds;
    j["reports_per_second"] = per_second;
    j["server_peak_mib"] = usage.ru_maxrss / 1024.0;
    j["server_cpu_seconds"] = server_cpu;
    j["failed_clients"] = failed.load();
    AppendOut(o.out, j.dump() + "\n");
  }

  return failed.load() == 0 ? 0 : 1;
}

}  // namespace fedldp::cli
