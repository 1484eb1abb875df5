// `fedldp` run in-process on an argument vector (apps/fedldp/cli.h's
// RunCli), for the tests of the command line.
#ifndef FEDLDP_TESTS_TESTING_CLI_RUN_H_
#define FEDLDP_TESTS_TESTING_CLI_RUN_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"

namespace fedldp::testing {

// A path in this process's own folder under the test temp dir: two checkouts
// testing at once must not share output files, and nothing a test writes
// outlives the process (the folder is removed at exit, passed or failed).
inline std::string Scratch(const std::string& name) {
  static const struct Folder {
    std::filesystem::path path = std::filesystem::path(::testing::TempDir()) /
                                 ("fedldp_scratch_" + std::to_string(::getpid()));
    Folder() { std::filesystem::create_directories(path); }
    ~Folder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } folder;
  return (folder.path / name).string();
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
