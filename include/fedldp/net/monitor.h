// `serve --monitor HOST:PORT`: what a running server shows an operator, over
// HTTP beside its gRPC port (cpp-httplib, Debian's libcpp-httplib-dev; off
// unless asked, loopback unless told otherwise):
//   GET /metrics      Prometheus text (format 0.0.4): the round, the users
//                     (enrolled, joined, active, withdrawn, away), reports
//                     counted and refused by reason, each user's budget spent
//                     as a histogram, the last accuracy beside the majority
//                     class, the last round's duration, the privacy statement
//                     as numbers;
//   GET /             a status page with the same and the statement in words,
//                     which reloads itself every 2 s;
//   GET /status.json  the same as one JSON object.
// The numbers come from one RunStatus the server fills when asked (under
// its coordinator's lock, briefly): nothing is kept here.
#ifndef FEDLDP_NET_MONITOR_H_
#define FEDLDP_NET_MONITOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fedldp/base/status.h"

namespace fedldp {

struct RunStatus {
  std::string task, protocol;  // "fedsel" or "ldpfl"
  bool started = false, finished = false;
  std::uint64_t round = 0;                            // rounds closed
  std::uint64_t rounds = 0;                           // the task's, in all
  std::uint64_t users = 0;                            // the task's N
  std::uint64_t enrolled = 0;                         // tokens
  std::uint64_t joined = 0, withdrawn = 0, away = 0;  // users
  std::uint64_t sessions = 0;                         // clients with a live session
  std::uint64_t reports_counted = 0;                  // in the model, over every run
  std::map<std::string, std::uint64_t> refused;       // since this process started, by reason
  // Users by reports counted since this process started (index k: users
  // with k reports), and what one report spends.
  std::vector<std::uint64_t> users_by_reports;
  double report_epsilon = 0;
  std::optional<double> accuracy, majority;  // the last evaluation
  double last_round_seconds = 0;
  // The statement: per report, and per user in total.
  double local_epsilon = 0, total_epsilon = 0, total_delta = 0;
  std::string privacy;  // in words
};

// A number as the text carries it: the shortest decimal that reads back to
// the same double (1e+06 would lose digits; 2133.33 would too).
std::string PrometheusNumber(double v);

// The status as Prometheus text, as a page for people, as JSON.
std::string PrometheusText(const RunStatus& s);
std::string StatusPage(const RunStatus& s);
std::string StatusJson(const RunStatus& s);

class Monitor {
 public:
  // Listens on `address` (host:port; port 0 picks one) and answers from
  // `status`, called once per request. A port in use is an error.
  static Result<std::unique_ptr<Monitor>> Start(const std::string& address,
                                                std::function<RunStatus()> status);
  ~Monitor();  // stops listening; requests in flight finish first
  int port() const { return port_; }

 private:
  struct Server;
  Monitor() = default;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

}  // namespace fedldp

#endif  // FEDLDP_NET_MONITOR_H_
