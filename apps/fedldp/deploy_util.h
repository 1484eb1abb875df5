// What the deployment's commands (enrol, serve, client, shuffle) share.
#ifndef FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_
#define FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_

#include <sys/resource.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <ostream>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "commands.h"
#include "fedldp/data/dataset.h"
#include "fedldp/data/loaders.h"
#include "fedldp/net/services.h"

namespace fedldp::cli {

// CPU time (user + system) this process has used so far, in seconds.
inline double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Set by SIGTERM or SIGINT once CatchSignals ran; the loops poll it.
extern std::atomic<bool> g_stop;
void CatchSignals();

// g_stop as a std::stop_token for the library's runners: the constructor
// catches the signals (CatchSignals), a thread watches g_stop and requests
// the stop; it then restores the default handlers, so a second Ctrl-C ends
// the process at once.
class StopOnSignal {
 public:
  StopOnSignal();
  std::stop_token token() const { return source_.get_token(); }

 private:
  std::stop_source source_;
  std::jthread watcher_;
};

// "A:B" (half-open), or all rows of `n` when empty.
// Before any work: plaintext (no `tls_file`: certificate or CA) on a
// non-loopback address is refused (UsageError) unless `insecure`, and then
// said on `err`.
void CheckPlaintext(const std::string& address, const std::string& tls_file, bool insecure,
                    const char* flag, std::ostream& err);

std::vector<std::size_t> ParseRows(const std::string& spec, std::size_t n, const char* flag);
// Part i of P ("i/P", i from 1): the i-th of P contiguous, near-equal chunks.
std::vector<std::size_t> TakePart(const std::vector<std::size_t>& rows, const std::string& spec);
Dataset LoadData(const std::string& name, const std::string& dir);
// A client's --data file (LIBSVM), with --features; labels as given.
Dataset LoadClientFile(const ClientOptions& o, LibsvmLabels labels);
// What to add to a client's failure when its --data file has too few features.
std::string FeaturesHint(const ClientOptions& o, const std::string& error);
std::string Stamp();  // HH:MM:SS, for log lines
std::string Pct(double x);
// The first line of `path`; a usage error naming `flag` if there is none.
std::string ReadToken(const std::string& path, const char* flag);

// The shuffler's token in `path`: read, or created (mode 0600) when the
// file is absent (said in `log`).
std::string ShufflerToken(const std::string& path,
                          const std::function<void(const std::string&)>& log);
// The server's key pair: `secret_path` and `secret_path`.pub, loaded, or
// generated and saved when absent (said in `log`).
ServerKeys Keys(const std::string& secret_path, const std::function<void(const std::string&)>& log);

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
  void Drain(const std::function<void(std::uint64_t, const std::vector<double>&)>& fn) {
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

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_DEPLOY_UTIL_H_
