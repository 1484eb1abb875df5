// What `fedldp load` runs: a load test of the FedSel deployment on
// loopback. The server (ServeFedSel) runs in a child process forked from
// this one, so that its CPU time and peak memory are its own; this process
// hosts `clients` concurrent clients over equal parts of the rows, each
// with its own gRPC channel and TCP connection, token, ledger and
// FedSelParticipant. Reports/s are the server's reports counted over its
// training time.
//
// Drivers: kCallback runs every client's calls asynchronously from a few
// of gRPC's threads (the protocol's happy path: a failed call or a refused
// report ends that client); kThreads gives each client a thread running
// the deployed client's loop, RunFedSelClient, retries and all.
//
// The fork happens before this process makes any gRPC object or thread of
// its own; call it from a process that has no gRPC channel or server open.
#ifndef FEDLDP_NET_LOAD_TEST_H_
#define FEDLDP_NET_LOAD_TEST_H_

#include <cstdint>
#include <optional>
#include <span>
#include <stop_token>
#include <string>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"
#include "fedldp/net/serve.h"

namespace fedldp {

enum class LoadDriver { kCallback, kThreads };
inline const char* LoadDriverName(LoadDriver d) {
  return d == LoadDriver::kCallback ? "callback" : "threads";
}

struct LoadTestConfig {
  std::size_t clients = 1000;  // concurrent clients, at most the rows
  // The FedSel variant served (train --variant's names): ps-pm, or a vector
  // randomizer (privunitg, privunitg-seed, ...) whose report size differs.
  std::string variant = "ps-pm";
  LoadDriver driver = LoadDriver::kCallback;
  int epochs = 3;
  double batch_fraction = 0.1;  // m / N
  int poll_ms = 100;            // how often clients poll when the server does not hold the poll
  int server_threads = 1;       // the server's threads answering calls (ServeConfig::threads)
  // Users: 0, one per row; more, the rows taken in turn (user u holds row
  // u mod rows), to load a server with more users than the data has rows.
  std::size_t users = 0;
  // Clients enrolled in the server's state (tokens issued): at least
  // `clients`; more, a registry of which only `clients` join.
  std::size_t enrolled = 0;
  // This fraction of the clients (spread evenly) drops out in round
  // `drop_round`, or the first after it that draws their users (kCallback
  // only): half before they report, half with their reports in flight. The
  // server waits out their sessions (10 s) and closes the round without
  // them; the run checks that it counted every report a client saw accepted
  // and no more than were sent.
  double drop_out = 0;
  // The server's stale_after: how long a client may be silent before its
  // missing users no longer hold a round open (and, halved, the longest a
  // poll is held).
  int stale_ms = 10000;
  // Each client's privacy ledger in memory (SQLite's ":memory:"), not a file
  // (with its write-ahead log): one open file per client (its connection),
  // not three, for more clients than the limit on open files allows.
  bool memory_ledgers = false;
  std::uint64_t drop_round = 1;
  // Work folder for the state file and the ledgers; default: a fresh one in
  // /dev/shm (or the temporary folder), removed after a run that succeeded.
  std::string dir;
  Status Validate() const;
};

struct LoadTestSummary {
  std::size_t clients = 0, users = 0, enrolled = 0;
  LoadDriver driver = LoadDriver::kCallback;
  std::uint64_t rounds = 0;
  std::uint64_t reports = 0;  // counted by the server in this run
  double seconds = 0;         // the server's training time
  double reports_per_second = 0;
  double server_cpu_seconds = 0;    // over its training time
  double server_peak_mib = 0;       // the server process's maximum resident set
  double clients_peak_mib = 0;      // this process's
  double enrol_seconds = 0;         // issuing the tokens into the state file
  double state_mib = 0;             // its size then
  double server_start_seconds = 0;  // from starting the server until it listened
  std::size_t finished_clients = 0, failed_clients = 0, dropped_clients = 0;
  // Reports the clients saw accepted, and those a dropping client sent
  // without waiting for the answer: the server's count is between the first
  // and their sum, else a report was lost or counted twice (an error).
  std::uint64_t reports_seen_accepted = 0, reports_in_flight = 0;
  // Polls and submits the clients made, joins aside (0: not counted, the
  // threads driver): the server's CPU per call is beside an empty call's
  // (fedldp_transport_bench).
  std::uint64_t calls = 0;
  // Of those, calls made again after one failed (the server away, slow or
  // restarting; the callback driver's): a transient failure is ridden out.
  std::uint64_t retried_calls = 0;
  // The bytes of the reports' payloads the clients submitted, per report
  // (the callback driver's; 0: not counted): what a report costs on the wire
  // before gRPC's framing.
  double bytes_per_report = 0;
  // What the served task spends per user, as serve states it (none: the
  // variant is not private).
  std::optional<PrivacyRecord> privacy;
  std::string first_error;  // of a failed client
  std::string dir;          // the work folder (kept when the run failed)
};

// Serves a FedSel task (the config's variant, eps 8, epochs and m / N) on
// `rows` of `data` (one user each; all rows when empty) and runs it to the
// end, logging progress every 5 s on `log`. A stop stops the clients and
// the server. Errors: a bad config (kInvalidArgument); the server failed or
// was stopped (kFailedPrecondition, with its last words; the work folder is
// kept and named).
Result<LoadTestSummary> RunLoadTest(const LoadTestConfig& config, const Dataset& data,
                                    std::span<const std::size_t> rows, const LogLine& log = {},
                                    std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_NET_LOAD_TEST_H_
