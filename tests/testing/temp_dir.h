// A fresh folder per test (named after the process and the test), removed
// when the test ends, after the processes the test started are stopped.
#ifndef FEDLDP_TESTS_TESTING_TEMP_DIR_H_
#define FEDLDP_TESTS_TESTING_TEMP_DIR_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/children.h"

namespace fedldp::testing {

// The lines of a text file (0 if it cannot be read): how many records a
// .jsonl or .csv holds.
inline std::size_t LineCount(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fedldp_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  // The processes the test started and did not wait for are stopped first
  // (they may still write in the folder); a folder that still cannot be
  // removed fails the test, naming the error.
  void TearDown() override {
    children::StopAll();
    std::error_code error;
    std::filesystem::remove_all(dir_, error);
    EXPECT_FALSE(error) << "cannot remove " << dir_ << ": " << error.message();
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_TEMP_DIR_H_
