#include "fedldp/net/monitor.h"

#include <httplib.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "fedldp/base/format.h"
#include "fedldp/net/services.h"
#include "grpc_util.h"

namespace fedldp {
namespace {}  // namespace

std::string PrometheusNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return error == std::errc() ? std::string(buffer, end) : "NaN";
}

namespace {

// A Prometheus label value: backslash, quote and newline escaped.
std::string Label(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

// Writes Prometheus text: each metric's HELP and TYPE once, then samples.
class Exposition {
 public:
  explicit Exposition(const RunStatus& s) : task_("task=\"" + Label(s.task) + "\"") {}
  void Metric(const std::string& name, const char* type, const char* help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void Sample(const std::string& name, double value, const std::string& labels = "") {
    out_ << name << "{" << task_ << (labels.empty() ? "" : "," + labels) << "} "
         << PrometheusNumber(value) << "\n";
  }
  std::string str() const { return out_.str(); }

 private:
  std::string task_;
  std::ostringstream out_;
};

void BudgetHistogram(Exposition& e, const RunStatus& s) {
  const std::string name = "fedldp_budget_spent_epsilon";
  e.Metric(name, "histogram",
           "Users by the eps their reports counted since this process started spent");
  std::uint64_t cumulative = 0;
  double sum = 0;
  for (std::size_t k = 0; k < s.users_by_reports.size(); ++k) {
    cumulative += s.users_by_reports[k];
    sum += static_cast<double>(k) * s.report_epsilon * static_cast<double>(s.users_by_reports[k]);
    const std::string le = PrometheusNumber(static_cast<double>(k) * s.report_epsilon);
    e.Sample(name + "_bucket", static_cast<double>(cumulative), "le=\"" + le + "\"");
  }
  e.Sample(name + "_bucket", static_cast<double>(cumulative), "le=\"+Inf\"");
  e.Sample(name + "_sum", sum);
  e.Sample(name + "_count", static_cast<double>(cumulative));
}

std::uint64_t Active(const RunStatus& s) {
  const std::uint64_t gone = s.withdrawn + s.away;
  return s.joined > gone ? s.joined - gone : 0;
}

std::string Escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string PrometheusText(const RunStatus& s) {
  Exposition e(s);
  e.Metric("fedldp_started", "gauge", "1 once training started");
  e.Sample("fedldp_started", s.started);
  e.Metric("fedldp_finished", "gauge", "1 once the task is done");
  e.Sample("fedldp_finished", s.finished);
  e.Metric("fedldp_rounds_closed", "gauge", "Rounds closed");
  e.Sample("fedldp_rounds_closed", static_cast<double>(s.round));
  e.Metric("fedldp_rounds", "gauge", "The task's rounds in all");
  e.Sample("fedldp_rounds", static_cast<double>(s.rounds));
  e.Metric("fedldp_users", "gauge", "Users of the task, by state");
  const std::pair<const char*, std::uint64_t> users[] = {{"task", s.users},
                                                         {"joined", s.joined},
                                                         {"active", Active(s)},
                                                         {"withdrawn", s.withdrawn},
                                                         {"away", s.away}};
  for (const auto& [state, n] : users) {
    e.Sample("fedldp_users", static_cast<double>(n), std::string("state=\"") + state + "\"");
  }
  e.Metric("fedldp_tokens", "gauge", "Tokens enrolled (client processes that may join)");
  e.Sample("fedldp_tokens", static_cast<double>(s.enrolled));
  e.Metric("fedldp_sessions", "gauge", "Clients with a live session");
  e.Sample("fedldp_sessions", static_cast<double>(s.sessions));
  e.Metric("fedldp_reports_counted_total", "counter", "Reports in the model, over every run");
  e.Sample("fedldp_reports_counted_total", static_cast<double>(s.reports_counted));
  e.Metric("fedldp_reports_refused_total", "counter",
           "Reports (or pieces) refused since this process started, by reason");
  for (const auto& [reason, n] : s.refused) {
    e.Sample("fedldp_reports_refused_total", static_cast<double>(n),
             "reason=\"" + Label(reason) + "\"");
  }
  BudgetHistogram(e, s);
  if (s.accuracy) {
    e.Metric("fedldp_accuracy", "gauge", "The last evaluated model's accuracy (0-1)");
    e.Sample("fedldp_accuracy", *s.accuracy);
  }
  if (s.majority) {
    e.Metric("fedldp_majority_accuracy", "gauge", "The majority class's accuracy on the same rows");
    e.Sample("fedldp_majority_accuracy", *s.majority);
  }
  e.Metric("fedldp_round_duration_seconds", "gauge", "The last closed round's duration");
  e.Sample("fedldp_round_duration_seconds", s.last_round_seconds);
  e.Metric("fedldp_privacy_epsilon", "gauge",
           "The privacy statement's eps: per report (local) and per user in total");
  e.Sample("fedldp_privacy_epsilon", s.local_epsilon, "scope=\"report\"");
  e.Sample("fedldp_privacy_epsilon", s.total_epsilon, "scope=\"total\"");
  e.Metric("fedldp_privacy_delta", "gauge", "The statement's delta per user in total");
  e.Sample("fedldp_privacy_delta", s.total_delta, "scope=\"total\"");
  return e.str();
}

std::string StatusJson(const RunStatus& s) {
  nlohmann::ordered_json j;
  j["task"] = s.task;
  j["protocol"] = s.protocol;
  j["started"] = s.started;
  j["finished"] = s.finished;
  j["rounds_closed"] = s.round;
  j["rounds"] = s.rounds;
  j["users"] = {{"task", s.users},
                {"joined", s.joined},
                {"active", Active(s)},
                {"withdrawn", s.withdrawn},
                {"away", s.away}};
  j["tokens"] = s.enrolled;
  j["sessions"] = s.sessions;
  j["reports_counted"] = s.reports_counted;
  j["reports_refused"] = s.refused;
  j["users_by_reports"] = s.users_by_reports;
  j["report_epsilon"] = s.report_epsilon;
  j["accuracy"] = s.accuracy ? nlohmann::ordered_json(*s.accuracy) : nullptr;
  j["majority"] = s.majority ? nlohmann::ordered_json(*s.majority) : nullptr;
  j["last_round_seconds"] = s.last_round_seconds;
  j["privacy"] = {{"report_epsilon", s.local_epsilon},
                  {"total_epsilon", s.total_epsilon},
                  {"total_delta", s.total_delta},
                  {"statement", s.privacy}};
  return j.dump();
}

std::string StatusPage(const RunStatus& s) {
  std::ostringstream p;
  const auto row = [&p](const std::string& what, const std::string& value) {
    p << "<tr><th>" << Escape(what) << "</th><td>" << Escape(value) << "</td></tr>\n";
  };
  const std::string state = s.finished ? "finished" : s.started ? "training" : "waiting for users";
  p << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
       "<meta http-equiv=\"refresh\" content=\"2\"><title>fedldp: "
    << Escape(s.task) << "</title><style>body{font-family:sans-serif;margin:2em}"
    << "th{text-align:left;padding-right:2em}td,th{padding:.2em}"
       "pre{background:#f4f4f4;padding:1em;white-space:pre-wrap}</style></head><body>\n<h1>"
    << Escape(s.task) << " (" << Escape(s.protocol) << "): " << state << "</h1>\n<table>\n";
  row("round", std::to_string(s.round) + " of " + std::to_string(s.rounds));
  row("users", std::to_string(s.joined) + " of " + std::to_string(s.users) + " joined, " +
                   std::to_string(Active(s)) + " active, " + std::to_string(s.withdrawn) +
                   " withdrawn, " + std::to_string(s.away) + " away");
  row("clients with a session", std::to_string(s.sessions));
  row("reports counted", std::to_string(s.reports_counted));
  std::uint64_t refused = 0;
  for (const auto& [why, n] : s.refused) refused += n;
  row("reports refused", std::to_string(refused));
  row("accuracy", s.accuracy ? PercentText(*s.accuracy) + " % (majority class " +
                                   PercentText(s.majority.value_or(0)) + " %)"
                             : "not evaluated yet");
  std::ostringstream seconds;
  seconds << s.last_round_seconds << " s";
  row("last round", seconds.str());
  p << "</table>\n<h2>Privacy</h2>\n<pre>" << Escape(s.privacy) << "</pre>\n"
    << "<p><a href=\"/metrics\">metrics</a> &middot; <a href=\"/status.json\">json</a></p>\n"
    << "</body></html>\n";
  return p.str();
}

struct Monitor::Server {
  httplib::Server http;
  std::thread thread;
};

Result<std::unique_ptr<Monitor>> Monitor::Start(const std::string& address,
                                                std::function<RunStatus()> status) {
  const auto [host, port] = net_internal::SplitAddress(address);
  int number = -1;
  if (host.empty() || !std::all_of(port.begin(), port.end(), ::isdigit) || port.empty() ||
      (number = std::stoi(port.substr(0, 6))) > 65535) {
    return Error{"--monitor: '" + address + "' is not host:port"};
  }
  // cpp-httplib binds with SO_REUSEPORT: a second server on a port in use
  // would share it silently.
  if (number != 0) {
    if (Status busy = CheckListenable(address); !busy.ok())
      return Error{"--monitor: " + busy.error()};
  }
  std::unique_ptr<Monitor> m(new Monitor());
  m->server_ = std::make_unique<Server>();
  httplib::Server& http = m->server_->http;
  const auto answer = [status](auto render, const char* type) {
    return [status, render, type](const httplib::Request&, httplib::Response& r) {
      r.set_content(render(status()), type);
    };
  };
  http.Get("/metrics", answer(PrometheusText, "text/plain; version=0.0.4"));
  http.Get("/status.json", answer(StatusJson, "application/json"));
  http.Get("/", answer(StatusPage, "text/html; charset=utf-8"));
  m->port_ =
      number == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, number) ? number : -1);
  if (m->port_ <= 0) return Error{"--monitor: cannot listen on " + address + " (in use?)"};
  m->server_->thread = std::thread([&http] { http.listen_after_bind(); });
  // Running before it is returned: a stop() before the loop begins is lost,
  // and the loop would then never end.
  for (int waited = 0; waited < 5000 && !http.is_running(); ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!http.is_running())
    return Error{"--monitor: the HTTP server on " + address + " did not start"};
  return m;
}

Monitor::~Monitor() {
  if (!server_) return;
  server_->http.stop();
  if (server_->thread.joinable()) server_->thread.join();
}

}  // namespace fedldp
