// What `fedldp serve` runs: a task's coordinator behind its gRPC server,
// from an options-free config, until the task is done or a stop is
// requested. The CLI only parses options into these configs and prints the
// summary; a test or another program calls the same functions.
//
// Both protocols share one serving lifecycle: the config is validated, then
// the task is checked (with a stand-in key) before any file is made, so a
// refused serve leaves nothing behind; then the key pair and the shuffler's
// token are loaded or created, the task is bound into the state file (a
// restart with the same config resumes it), the server starts (a port in use
// is one error, before anything is said of the task), the privacy statement
// is given, and the rounds run. The models handed over when rounds close are
// evaluated outside the coordinator's lock, where polls wait.
#ifndef FEDLDP_NET_SERVE_H_
#define FEDLDP_NET_SERVE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/net/roster.h"
#include "fedldp/net/services.h"
#include "fedldp/privacy/privacy_record.h"
#include "fedldp/store/server_state.h"

namespace fedldp {

using LogLine = std::function<void(const std::string&)>;
// The local time as HH:MM:SS, to begin a log line with.
std::string LogStamp();
// How the deployment's processes write their log (--log-format): lines for
// people ("HH:MM:SS serve: ..."), or JSON lines for a log collector, one
// object a line: {"time": UTC ISO 8601 with milliseconds, "component":
// "serve", "message": ...}.
enum class LogFormat { kText, kJson };
Result<LogFormat> ParseLogFormat(const std::string& name);  // "text", "json"
std::string FormatLog(LogFormat format, std::string_view component, std::string_view message);

// The first line of the file at `path` (a token); an error if there is none.
Result<std::string> ReadTokenFile(const std::string& path);
// One file per token in `dir` (made, mode 0700, if absent), each the token
// and a newline, mode 0600, named client-N.token from the first N whose
// file does not exist (an earlier enrol's files are kept); their paths.
// CheckTokenDir says, before any token is issued, whether `dir` can take them.
Status CheckTokenDir(const std::string& dir);
Result<std::vector<std::string>> WriteTokenFiles(const std::string& dir,
                                                 std::span<const std::string> tokens);

// What both protocols' servers take.
struct ServeConfig {
  std::string state;                       // the state file (SQLite) that enrol made
  std::string address = "127.0.0.1:7070";  // host:port; port 0 picks a free one
  TlsFiles tls;                            // certificate and key: serve over TLS
  // Threads answering calls (gRPC completion queues, one each). One was the
  // fastest on 2 cores shared with 1,000 load clients; give more to a
  // server with cores of its own (docs/deploying.md).
  int threads = 1;
  std::string task;         // the task's name in every client's ledger
  std::uint64_t users = 0;  // N: users in the task (all must join)
  RoundPolicy policy;
  // Shuffled tasks (LDP-FL always, FedSel with config.shuffle): the
  // server's secret key (default STATE.key, public key in KEY.pub) and the
  // shuffler's token, each created if absent (once every other check has
  // passed: a refused serve writes nothing).
  std::string key_file;
  std::string shuffler_token_file;
  std::string KeyFile() const { return key_file.empty() ? state + ".key" : key_file; }
  // HTTP status page and Prometheus metrics (net/monitor.h) on this
  // host:port; "" (the default): none. Loopback unless the operator says.
  std::string monitor;
};

struct FedSelServeConfig {
  ServeConfig serve;
  // The variant's (DefaultFedSelConfig) with the caller's changes. The
  // deployment serves the last iterate: tail_average must be 0.
  FedSelConfig config = DefaultFedSelConfig(FedSelVariant{});  // ps-pm
  double central_delta = 1e-6;  // config.shuffle: the statement's total delta per user
  // OK, or the first thing wrong (ErrorCode::kInvalidArgument).
  Status Validate() const;
};

struct LdpFlServeConfig {
  ServeConfig serve;
  LdpFlConfig config;         // arch, rounds, ranges, randomizer... (clients: from serve.users)
  std::uint64_t chunk = 256;  // weights per sealed piece, at most
  Status Validate() const;
};

// What the server says while it runs. Every member may be empty.
struct ServeObserver {
  LogLine log;                                      // progress, one line each
  std::function<void(const std::string&)> privacy;  // the privacy statement, once, before rounds
  std::function<void(int port)> listening;          // the server's port, once it listens
  std::function<void(int port)> monitoring;         // the monitor's port, once it listens
};

// A finished (or stopped) serve's counts: plain numbers, which a load test's
// server child passes up a pipe as bytes.
struct ServeCounts {
  bool finished = false;  // the task is done (else: stopped; a restart resumes)
  std::uint64_t rounds = 0;
  std::uint64_t rounds_without_update = 0;
  std::uint64_t reports_counted = 0;  // in the model, over every run of the server
  std::uint64_t accepted_here = 0;    // FedSel: reports this process counted
  std::uint64_t batches = 0;          // shuffled batches this process took
  std::uint64_t pieces_rejected = 0;  // LDP-FL
  double accuracy = 0;                // of the final model on the evaluation rows (finished)
  double majority = 0;                // the majority class's on the same rows
  double training_seconds = 0;        // since the task started in this process
  double training_cpu_seconds = 0;    // this process's CPU time over the same span
};

struct ServeSummary : ServeCounts {
  std::optional<PrivacyRecord> privacy;  // what the task spends per user (none: not private)
};

// FedSel: users are the clients' rows, each reporting once per epoch (or
// per sampled round); the server evaluates every epoch's model on
// `eval_rows` of `data` (all rows when empty), whose dimension is the task's.
// Errors: a bad config or task (kInvalidArgument), a state file bound to
// another task (kInvalidArgument) or with no enrolled client
// (kFailedPrecondition), a state that could not be saved (kIo; a restart
// resumes from the last commit).
Result<ServeSummary> ServeFedSel(const FedSelServeConfig& config, const Dataset& data,
                                 std::span<const std::size_t> eval_rows,
                                 const ServeObserver& observer = {}, std::stop_token stop = {});

// LDP-FL: the inputs are standardised by the pixel moments of `train_rows`
// of `train` (all when empty: public constants announced with the task); the
// model starts from the secure generator's draw and is evaluated on `test`
// after every round.
Result<ServeSummary> ServeLdpFl(const LdpFlServeConfig& config, const Dataset& train,
                                std::span<const std::size_t> train_rows, const Dataset& test,
                                const ServeObserver& observer = {}, std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_NET_SERVE_H_
