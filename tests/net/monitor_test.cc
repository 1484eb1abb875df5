// The server's monitor (net/monitor.h): Prometheus text and the status page
// as a running server serves them, read over HTTP and parsed.
#include "fedldp/net/monitor.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <thread>

#include "fedldp/net/serve.h"
#include "fedldp/net/services.h"
#include "fedldp/store/server_state.h"
#include "testing/prometheus.h"
#include "testing/synthetic.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using namespace std::chrono_literals;

TEST(Monitor, TextEscapesLabelsAndTheHistogramIsCumulative) {
  RunStatus s;
  s.task = "a \"quoted\"\\task";
  s.refused = {{"malformed", 3}, {"wrong round", 2}};
  s.users_by_reports = {1, 0, 4};
  s.report_epsilon = 0.5;
  s.privacy = "<script>";
  s.reports_counted = 12345678901;  // whole numbers keep every digit (not 1.23457e+10)
  s.total_epsilon = 2.0 / 3;        // and fractions round-trip
  const std::string text = PrometheusText(s);
  EXPECT_NE(
      text.find("fedldp_reports_counted_total{task=\"a \\\"quoted\\\"\\\\task\"} 12345678901\n"),
      std::string::npos)
      << text;
  const auto m = testing::ParseMetrics(text);
  const std::string task = "task=\"a \\\"quoted\\\"\\\\task\"";
  EXPECT_EQ(m.at("fedldp_reports_refused_total{" + task + ",reason=\"wrong round\"}"), 2);
  EXPECT_EQ(m.at("fedldp_budget_spent_epsilon_bucket{" + task + ",le=\"0\"}"), 1);
  EXPECT_EQ(m.at("fedldp_budget_spent_epsilon_bucket{" + task + ",le=\"0.5\"}"), 1);
  EXPECT_EQ(m.at("fedldp_budget_spent_epsilon_bucket{" + task + ",le=\"1\"}"), 5);
  EXPECT_EQ(m.at("fedldp_budget_spent_epsilon_bucket{" + task + ",le=\"+Inf\"}"), 5);
  EXPECT_EQ(m.at("fedldp_budget_spent_epsilon_sum{" + task + "}"), 4.0);
  EXPECT_EQ(m.at("fedldp_budget_spent_epsilon_count{" + task + "}"), 5);
  EXPECT_EQ(m.at("fedldp_privacy_epsilon{" + task + ",scope=\"total\"}"), 2.0 / 3);
  const std::string page = StatusPage(s);
  EXPECT_EQ(page.find("<script>"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(page.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(StatusJson(s))["reports_refused"]["malformed"], 3);
}

class MonitorTest : public testing::TempDirTest {};

TEST_F(MonitorTest, ABadOrBusyMonitorAddressIsRefusedBeforeServing) {
  const auto busy = Monitor::Start("127.0.0.1:0", [] { return RunStatus{}; }).value();
  EXPECT_FALSE(
      Monitor::Start("127.0.0.1:" + std::to_string(busy->port()), [] { return RunStatus{}; }).ok());
  EXPECT_FALSE(Monitor::Start("nonsense", [] { return RunStatus{}; }).ok());
  FedSelServeConfig c;
  c.serve.state = Path("s.sqlite");
  c.serve.task = "t";
  c.serve.users = 10;
  c.serve.monitor = "9464";
  EXPECT_NE(c.Validate().error().find("--monitor takes host:port"), std::string::npos);
}

}  // namespace
}  // namespace fedldp
