// Prometheus text as a test reads it (net/monitor.h).
#ifndef FEDLDP_TESTS_TESTING_PROMETHEUS_H_
#define FEDLDP_TESTS_TESTING_PROMETHEUS_H_

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

namespace fedldp::testing {

// Prometheus text as sample -> value ("name{labels}"), every line checked:
// a comment (# HELP / # TYPE) or `name{labels} value`.
inline std::map<std::string, double> ParseMetrics(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) continue;
    const auto space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    EXPECT_NE(line.find('{'), std::string::npos) << line;
    EXPECT_EQ(line[space - 1], '}') << line;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_PROMETHEUS_H_
