// What the deployment's commands (enrol, serve, client, shuffle) share.
#ifndef FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_
#define FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "fedldp/data/dataset.h"
#include "fedldp/data/loaders.h"
#include "fedldp/net/serve.h"
#include "fedldp/net/services.h"

namespace fedldp::cli {

// Set by SIGTERM or SIGINT once CatchSignals ran; the loops poll it.
extern std::atomic<bool> g_stop;
void CatchSignals();

// How long a process may take to stop once a signal asked it to, when its
// work can hang where no stop is heard: a user's model whose forward never
// returns, a deployment's call (a deployment is safe to end at any point:
// its state and ledgers are durable).
inline constexpr std::chrono::seconds kStopGrace{30};

// g_stop as a std::stop_token for the library's runners: the constructor
// catches the signals (CatchSignals), a thread watches g_stop and requests
// the stop; it then restores the default handlers, so a second Ctrl-C ends
// the process at once. With a `grace`, a process still running that long
// after the signal ends (exit 128 + the signal), saying so on stderr.
class StopOnSignal {
 public:
  explicit StopOnSignal(std::optional<std::chrono::seconds> grace = std::nullopt);
  std::stop_token token() const { return source_.get_token(); }

 private:
  std::stop_source source_;
  std::jthread watcher_;
};

// Before any work: plaintext (no certificate or CA in `tls`) on a
// non-loopback address is refused (UsageError) unless tls.insecure, and then
// said on `err`; a certificate, key or CA file that is not what it must be
// is refused naming the file (CheckTlsFiles).
void CheckTlsOptions(const std::string& address, const TlsFiles& tls, const char* flag,
                     std::ostream& err);

// The client's library options from its command line (either protocol);
// its log lines go to `err`, stamped.
FedSelClientOptions ToClientOptions(const ClientOptions& o, const std::string& token,
                                    std::ostream& err);

// "A:B" (half-open), or all rows of `n` when empty.
std::vector<std::size_t> ParseRows(const std::string& spec, std::size_t n, const char* flag);
// Part i of P ("i/P", i from 1): the i-th of P contiguous, near-equal chunks.
std::vector<std::size_t> TakePart(const std::vector<std::size_t>& rows, const std::string& spec);
Dataset LoadData(const std::string& name, const std::string& dir);
Dataset LoadServedFile(const ServeOptions& o);  // serve --data, --label-column
// A client's --data file (LIBSVM), with --features; labels as given.
// What every serve --out record holds after its task's fields: the users,
// the counts, the times and the privacy record.
void AddServeCounts(const ServeSummary& s, std::uint64_t users, nlohmann::ordered_json& record);
// --label-column, which needs --data.
void AddLabelColumnOption(CLI::App& app, std::string& column, CLI::Option* data);
// A client's --data: its share of the task, labelled as the task names its
// classes when it joins (TaskData).
Dataset LoadClientFile(const ClientOptions& o);
// What to add to a client's failure when its --data file has too few features.
std::string FeaturesHint(const ClientOptions& o, const std::string& error);
std::string Stamp();  // HH:MM:SS, for log lines
// --log-format on `app` (text or json), into `format`.
void AddLogFormatOption(CLI::App& app, std::string& format);
// A process's log on `err`: each line as --log-format `format` says
// (FormatLog), from `component`.
LogLine LogTo(std::ostream& err, const std::string& format, const char* component);
// The first line of `path`; a usage error naming `flag` if there is none.
std::string ReadToken(const std::string& path, const char* flag);

// serve: the options both protocols share, as the library's config
// (`default_task` when --task is not given), and the log on `err`.
ServeConfig ServeCommon(const ServeOptions& o, const std::string& default_task);
ServeObserver ServeLog(std::ostream& err, const std::string& log_format);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_
