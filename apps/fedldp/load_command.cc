// fedldp load: the options of a load test of the FedSel deployment, for
// RunLoadTest (net/load_test.h), which runs it.
#include <iomanip>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/net/load_test.h"

namespace fedldp::cli {

void SetupLoad(CLI::App& app, LoadOptions& o) {
  app.description(
      "Load-test the FedSel deployment on loopback: serve the task from a child process\n"
      "and run --clients concurrent clients in this process (one connection, token and\n"
      "ledger each), splitting --rows among them; print reports/s over the server's\n"
      "training time, the server's CPU per report and its peak memory.");
  app.add_option("--clients", o.clients, "Concurrent clients")
      ->check(CLI::Range(std::size_t{1}, std::size_t{20000}))
      ->capture_default_str();
  app.add_option("--driver", o.driver,
                 "callback: all clients' calls from a few threads (a failed call ends a client); "
                 "threads: a thread per client running the deployed client's loop")
      ->check(CLI::IsMember({"callback", "threads"}))
      ->capture_default_str();
  app.add_option("--dataset", o.dataset, "Dataset whose rows the clients hold")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  app.add_option("--rows", o.rows, "Rows FIRST:END, one user each")->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs")->check(Within(kEpochs))->capture_default_str();
  app.add_option("--batch-fraction", o.batch_fraction, "m / N")->capture_default_str();
  app.add_option("--poll-ms", o.poll_ms,
                 "How often clients poll when the server does not hold the poll")
      ->capture_default_str();
  app.add_option("--server-threads", o.server_threads, "Threads answering the server's calls")
      ->check(Within(kServiceThreads))
      ->capture_default_str();
  app.add_option("--dir", o.dir, "Work folder (default: fresh in /dev/shm, removed after)");
  app.add_option("--out", o.out, "Append one JSON line with the result to this file");
}

int RunLoad(const LoadOptions& o, std::ostream& out, std::ostream& err) {
  CheckOut(o.out);
  const Dataset data = LoadData(o.dataset, o.data_dir);
  const auto rows = ParseRows(o.rows, data.size(), "--rows");
  if (o.clients > rows.size()) throw UsageError("--clients exceeds the rows");
  LoadTestConfig config;
  config.clients = o.clients;
  config.driver = o.driver == "threads" ? LoadDriver::kThreads : LoadDriver::kCallback;
  config.epochs = o.epochs;
  config.batch_fraction = o.batch_fraction;
  config.poll_ms = o.poll_ms;
  config.server_threads = o.server_threads;
  config.dir = o.dir;
  StopOnSignal stop;
  auto ran = RunLoadTest(
      config, data, rows,
      [&err](const std::string& line) { err << Stamp() << " load: " << line << std::endl; },
      stop.token());
  if (!ran.ok()) {
    if (ran.code() == ErrorCode::kInvalidArgument) throw UsageError(ran.error());
    err << "load: " << ran.error() << "\n";
    return 1;
  }
  const LoadTestSummary& r = *ran;
  out << std::fixed << std::setprecision(1) << "load: " << r.clients << " concurrent clients ("
      << LoadDriverName(r.driver) << "), " << r.users << " users, " << r.rounds
      << " rounds: " << r.reports << " reports in " << std::setprecision(2) << r.seconds
      << " s = " << std::setprecision(0) << r.reports_per_second
      << " reports/s; server peak memory " << std::setprecision(1) << r.server_peak_mib
      << " MiB (clients' process " << r.clients_peak_mib << " MiB); server CPU "
      << std::setprecision(2) << r.server_cpu_seconds << " s in training, " << std::setprecision(0)
      << (r.reports > 0 ? r.server_cpu_seconds / static_cast<double>(r.reports) * 1e6 : 0)
      << " us per report; " << r.finished_clients << " clients finished, " << r.failed_clients
      << " failed" << (r.first_error.empty() ? "" : " (" + r.first_error + ")") << "\n";
  if (!o.out.empty()) {
    nlohmann::ordered_json j;
    j["command"] = "load";
    StartRecord(j);
    j["clients"] = r.clients;
    j["driver"] = LoadDriverName(r.driver);
    j["server_threads"] = o.server_threads;
    j["users"] = r.users;
    j["rounds"] = r.rounds;
    j["reports"] = r.reports;
    j["seconds"] = r.seconds;
    j["reports_per_second"] = r.reports_per_second;
    j["server_peak_mib"] = r.server_peak_mib;
    j["server_cpu_seconds"] = r.server_cpu_seconds;
    j["failed_clients"] = r.failed_clients;
    AppendOut(o.out, j.dump() + "\n");
  }
  return r.failed_clients == 0 ? 0 : 1;
}

}  // namespace fedldp::cli
