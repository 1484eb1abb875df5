// A signal's stop, heard or not (issue 41: a user's model whose forward
// never returned held `fedldp ldpfl` through SIGTERM until SIGKILL).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "deploy_util.h"

namespace fedldp::cli {
namespace {

using namespace std::chrono_literals;

class StopOnSignalDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// Work that never looks at its stop token ends grace after the signal,
// saying so, with the signal's exit code.
TEST_F(StopOnSignalDeathTest, AStopNotHeardWithinItsGraceEndsTheProcessSayingSo) {
  for (const int signo : {SIGTERM, SIGINT}) {
    EXPECT_EXIT(
        {
          StopOnSignal stop(1s);
          std::raise(signo);
          std::this_thread::sleep_for(10s);  // a forward that does not return in time
          std::_Exit(0);
        },
        ::testing::ExitedWithCode(128 + signo),
        std::string("still running 1 s after ") + (signo == SIGINT ? "SIGINT" : "SIGTERM"));
  }
}

// Work that stops in time ends as it chooses; without a grace, the stop is
// only requested.
TEST_F(StopOnSignalDeathTest, AStopHeardInTimeOrWithoutAGraceEndsAsTheWorkChooses) {
  EXPECT_EXIT(
      {
        {
          StopOnSignal stop(1s);
          std::raise(SIGTERM);
          while (!stop.token().stop_requested()) std::this_thread::sleep_for(10ms);
        }  // the work stopped: the watcher is gone
        std::this_thread::sleep_for(2s);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        StopOnSignal stop;
        std::raise(SIGTERM);
        while (!stop.token().stop_requested()) std::this_thread::sleep_for(10ms);
        std::this_thread::sleep_for(2s);
        std::_Exit(3);
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace fedldp::cli
