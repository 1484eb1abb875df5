// The test fixtures' own promise: a test's folder goes only after the
// processes the test started are stopped, so a process still writing there
// can neither keep the folder nor outlive a test that failed half-way.
#include "testing/temp_dir.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <filesystem>

#include "testing/processes.h"

namespace fedldp {
namespace {

class TempDirFixture : public testing::TempDirTest {};

TEST_F(TempDirFixture, StopsTheTestsProcessesBeforeRemovingItsFolder) {
  // A process that writes into the folder until it is stopped, as a killed
  // test's server does.
  const std::string file = Path("written");
  const pid_t writer = testing::processes::Spawn(
      {"/bin/sh", "-c", "while :; do echo x >> '" + file + "'; sleep 0.01; done"},
      Path("writer.out"), Path("writer.err"));
  ASSERT_GT(writer, 0);
  while (!std::filesystem::exists(file)) ::usleep(1000);

  TearDown();  // what GoogleTest calls at the end (it is idempotent)
  errno = 0;
  EXPECT_EQ(::kill(writer, 0), -1) << "the writer still runs";
  EXPECT_EQ(errno, ESRCH) << "the writer was not reaped";
  ::usleep(50'000);  // a writer left running would recreate its file by now
  EXPECT_FALSE(std::filesystem::exists(dir_));
  std::filesystem::create_directories(dir_);  // for GoogleTest's own TearDown
}

TEST_F(TempDirFixture, AWaitedProcessIsNotStoppedAgain) {
  const pid_t done = testing::processes::Spawn({"/bin/true"}, Path("o"), Path("e"));
  EXPECT_EQ(testing::processes::Wait(done), 0);
  // Its pid is forgotten: StopAll must not signal a pid the system may reuse.
  std::lock_guard lock(testing::children::Get().mutex);
  EXPECT_EQ(testing::children::Get().live.count(done), 0u);
}

}  // namespace
}  // namespace fedldp
