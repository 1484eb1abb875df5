// fedldp load: the options of a load test of the FedSel deployment, for
// RunLoadTest (net/load_test.h), which runs it.
#include <iomanip>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/net/load_test.h"
#include "fedldp/sim/records.h"

namespace fedldp::cli {

void SetupLoad(CLI::App& app, LoadOptions& o) {
  app.description(
      "Load-test the FedSel deployment on loopback: serve the task from a child process\n"
      "and run --clients concurrent clients in this process (one connection, token and\n"
      "ledger each), splitting the users among them; print reports/s over the server's\n"
      "training time, the server's CPU per report and its peak memory. With --drop-out,\n"
      "that fraction of the clients vanishes mid-round, and the run checks that the\n"
      "server counted every report a client saw accepted and no report twice.");
  LoadTestConfig& c = o.config;
  app.add_option("--clients", c.clients, "Concurrent clients")
      ->check(CLI::Range(std::size_t{1}, std::size_t{20000}))
      ->capture_default_str();
  app.add_option("--driver", o.driver,
                 "callback: all clients' calls from a few threads (a failed call ends a client); "
                 "threads: a thread per client running the deployed client's loop")
      ->check(CLI::IsMember({"callback", "threads"}))
      ->capture_default_str();
  app.add_option("--variant", c.variant,
                 "The FedSel variant served (as train --variant): ps-pm, or a vector randomizer "
                 "such as privunitg or privunitg-seed (a 16-byte report)")
      ->capture_default_str();
  app.add_option("--dataset", o.dataset, "Dataset whose rows the clients hold")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  app.add_option("--rows", o.rows, "Rows FIRST:END, one user each")->capture_default_str();
  app.add_option("--users", c.users,
                 "Users in the task (default: one per row); more than the rows take the rows in "
                 "turn, to load a server with a large registry")
      ->check(Within(kUsers));
  app.add_option("--enrolled", c.enrolled,
                 "Clients enrolled in the server's state (default: --clients); more, a registry "
                 "of which only --clients join");
  app.add_option("--epochs", c.epochs, "Epochs")->check(Within(kEpochs))->capture_default_str();
  app.add_option("--batch-fraction", c.batch_fraction, "m / N")->capture_default_str();
  app.add_option("--poll-ms", c.poll_ms,
                 "How often clients poll when the server does not hold the poll")
      ->capture_default_str();
  app.add_option("--server-threads", c.server_threads, "Threads answering the server's calls")
      ->check(Within(kServiceThreads))
      ->capture_default_str();
  app.add_option("--drop-out", c.drop_out,
                 "Fraction of the clients (spread evenly) that vanish in --drop-round, half "
                 "before reporting and half with their reports in flight (callback driver)")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  app.add_option("--drop-round", c.drop_round,
                 "The round (or the first after it that draws their users) they vanish in")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--stale-ms", c.stale_ms,
                 "The server's stale_after: how long a silent client holds a round open")
      ->check(CLI::Range(1000, 600000))
      ->capture_default_str();
  app.add_flag("--memory-ledgers", c.memory_ledgers,
               "Clients' ledgers in memory, not files: one open file per client, not three "
               "(for more clients than the limit on open files allows)");
  app.add_option("--dir", c.dir, "Work folder (default: fresh in /dev/shm, removed after)");
  app.add_option("--out", o.out, "Append one JSON line with the result to this file");
}

namespace {

// "1.07 calls per report, 49 us per call".
std::string CallsText(const LoadTestSummary& r) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2)
       << static_cast<double>(r.calls) / static_cast<double>(std::max<std::uint64_t>(1, r.reports))
       << " calls per report, " << std::setprecision(0)
       << r.server_cpu_seconds / static_cast<double>(r.calls) * 1e6 << " us per call";
  return text.str();
}

// "16 bytes per report".
std::string BytesText(double bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << bytes << " bytes per report";
  return text.str();
}

void PrintLoad(const LoadTestSummary& r, std::ostream& out) {
  out << std::fixed << std::setprecision(1) << "load: " << r.clients << " concurrent clients ("
      << LoadDriverName(r.driver) << "), " << r.users << " users, " << r.rounds
      << " rounds: " << r.reports << " reports in " << std::setprecision(2) << r.seconds
      << " s = " << std::setprecision(0) << r.reports_per_second
      << " reports/s; server peak memory " << std::setprecision(1) << r.server_peak_mib
      << " MiB (clients' process " << r.clients_peak_mib << " MiB); server CPU "
      << std::setprecision(2) << r.server_cpu_seconds << " s in training, " << std::setprecision(0)
      << (r.reports > 0 ? r.server_cpu_seconds / static_cast<double>(r.reports) * 1e6 : 0)
      << " us per report" << (r.calls > 0 ? " (" + CallsText(r) + ")" : std::string())
      << (r.bytes_per_report > 0 ? "; " + BytesText(r.bytes_per_report) : std::string()) << "; "
      << r.finished_clients << " clients finished, " << r.failed_clients << " failed"
      << (r.retried_calls > 0 ? ", " + std::to_string(r.retried_calls) + " calls made again"
                              : std::string())
      << (r.first_error.empty() ? "" : " (" + r.first_error + ")") << "\n";
  out << std::setprecision(2) << "load: enrolled " << r.enrolled << " clients in "
      << r.enrol_seconds << " s (state " << std::setprecision(1) << r.state_mib
      << " MiB); the server listened " << std::setprecision(2) << r.server_start_seconds
      << " s after it started\n";
  out << "load: privacy: "
      << (r.privacy ? DescribePrivacyRecord(*r.privacy) : "none: the task is not private") << "\n";
  if (r.dropped_clients > 0) {
    out << "load: " << r.dropped_clients << " clients dropped out; nothing lost or counted twice: "
        << "the server counted " << r.reports << " reports, the clients saw "
        << r.reports_seen_accepted << " accepted, and " << r.reports - r.reports_seen_accepted
        << " of the " << r.reports_in_flight << " in flight when their client vanished arrived\n";
  }
}

std::string LoadRecord(const LoadOptions& o, const LoadTestSummary& r) {
  nlohmann::ordered_json j;
  j["command"] = "load";
  StartRecord(j);
  j["clients"] = r.clients;
  j["driver"] = LoadDriverName(r.driver);
  j["server_threads"] = o.config.server_threads;
  j["users"] = r.users;
  j["rounds"] = r.rounds;
  j["reports"] = r.reports;
  j["seconds"] = r.seconds;
  j["reports_per_second"] = r.reports_per_second;
  j["server_peak_mib"] = r.server_peak_mib;
  j["server_cpu_seconds"] = r.server_cpu_seconds;
  j["failed_clients"] = r.failed_clients;
  j["enrolled"] = r.enrolled;
  j["enrol_seconds"] = r.enrol_seconds;
  j["state_mib"] = r.state_mib;
  j["server_start_seconds"] = r.server_start_seconds;
  j["drop_out"] = o.config.drop_out;
  j["memory_ledgers"] = o.config.memory_ledgers;
  j["dropped_clients"] = r.dropped_clients;
  j["reports_seen_accepted"] = r.reports_seen_accepted;
  j["reports_in_flight"] = r.reports_in_flight;
  j["calls"] = r.calls;  // polls and submits (0: not counted)
  j["retried_calls"] = r.retried_calls;
  j["variant"] = o.config.variant;
  j["bytes_per_report"] = r.bytes_per_report;  // 0: not counted
  j["privacy"] = PrivacyJson(r.privacy);
  return j.dump();
}

}  // namespace

int RunLoad(const LoadOptions& o, std::ostream& out, std::ostream& err) {
  CheckOut(o.out);
  const Dataset data = LoadData(o.dataset, o.data_dir);
  const auto rows = ParseRows(o.rows, data.size(), "--rows");
  LoadTestConfig config = o.config;
  config.driver = o.driver == "threads" ? LoadDriver::kThreads : LoadDriver::kCallback;
  if (config.clients > (config.users != 0 ? config.users : rows.size())) {
    throw UsageError("--clients exceeds the users");
  }
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
  PrintLoad(*ran, out);
  if (!o.out.empty()) AppendOut(o.out, LoadRecord(o, *ran) + "\n");
  return ran->failed_clients == 0 ? 0 : 1;
}

}  // namespace fedldp::cli
