// `fedldp` run in-process on an argument vector (apps/fedldp/cli.h's
// RunCli), for the tests of the command line.
#ifndef FEDLDP_TESTS_TESTING_CLI_RUN_H_
#define FEDLDP_TESTS_TESTING_CLI_RUN_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli.h"

namespace fedldp::testing {

// A per-process path under the test temp dir: two checkouts testing at once
// must not share output files.
inline std::string Scratch(const std::string& name) {
  return ::testing::TempDir() + "/fedldp_" + std::to_string(::getpid()) + "_" + name;
}

struct Outcome {
  int code;
  std::string out, err;
};

inline Outcome Fedldp(std::vector<std::string> args) {
  args.insert(args.begin(), "fedldp");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = cli::RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_CLI_RUN_H_
