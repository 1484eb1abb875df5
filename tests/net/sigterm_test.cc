// Every deployment process exits cleanly (status 0, saying it stopped) on
// SIGTERM, in the state a deployer most often stops it: a server waiting for
// its users, a client whose server is not up yet, a shuffler whose server is
// not up yet.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/processes.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using namespace testing::processes;

class SigtermTest : public testing::TempDirTest {
 protected:
  // Starts `args`, waits until its stderr holds `ready`, sends SIGTERM and
  // returns the exit status.
  int StopWhenReady(const std::vector<std::string>& args, const std::string& ready,
                    const std::string& name) const {
    const pid_t pid = Spawn(args, Path(name + ".out"), Path(name + ".err"));
    const auto start = std::chrono::steady_clock::now();
    while (Read(Path(name + ".err")).find(ready) == std::string::npos &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_NE(Read(Path(name + ".err")).find(ready), std::string::npos)
        << Read(Path(name + ".err"));
    ::kill(pid, SIGTERM);
    return Wait(pid);
  }
  std::string Address(int port) const { return "127.0.0.1:" + std::to_string(port); }
};

TEST_F(SigtermTest, AWaitingServerStopsCleanlyAndCanResume) {
  const pid_t enrol = Spawn({FEDLDP_BINARY, "enrol", "--state", Path("s.sqlite"), "--count", "1",
                             "--out", Path("tokens")},
                            Path("enrol.out"), Path("enrol.err"));
  ASSERT_EQ(Wait(enrol), 0) << Read(Path("enrol.err"));
  const std::vector<std::string> serve = {
      FEDLDP_BINARY,       "serve",   "--state", Path("s.sqlite"), "--address",
      Address(FreePort()), "--users", "100",     "--data-dir",     FEDLDP_DATASETS};
  EXPECT_EQ(StopWhenReady(serve, "waiting for 100 users", "serve"), 0) << Read(Path("serve.err"));
  EXPECT_NE(Read(Path("serve.err")).find("start again to resume"), std::string::npos)
      << Read(Path("serve.err"));
}

TEST_F(SigtermTest, AClientWhoseServerIsDownStopsCleanly) {
  std::ofstream(Path("one.svm")) << "+1 1:1\n";
  const auto client = [&](const std::string& ledger) {
    return std::vector<std::string>{FEDLDP_BINARY, "client",    "--server", Address(FreePort()),
                                    "--token",     "t",         "--data",   Path("one.svm"),
                                    "--ledger",    Path(ledger)};
  };
  EXPECT_EQ(StopWhenReady(client("fedsel.sqlite"), "retrying", "fedsel"), 0)
      << Read(Path("fedsel.err"));
  EXPECT_NE(Read(Path("fedsel.out")).find("client: stopped"), std::string::npos)
      << Read(Path("fedsel.out"));
  // LDP-FL's client, likewise.
  auto ldpfl = client("ldpfl.sqlite");
  ldpfl.insert(ldpfl.end(), {"--shuffler", Address(FreePort())});
  EXPECT_EQ(StopWhenReady(ldpfl, "retrying", "ldpfl"), 0) << Read(Path("ldpfl.err"));
  EXPECT_NE(Read(Path("ldpfl.out")).find("client: stopped"), std::string::npos)
      << Read(Path("ldpfl.out"));
}

TEST_F(SigtermTest, AShufflerWhoseServerIsDownStopsCleanly) {
  std::ofstream(Path("shuffler.token")) << "a-shuffler-token-0123456789\n";
  const std::vector<std::string> shuffle = {
      FEDLDP_BINARY, "shuffle",           "--server",     Address(FreePort()),
      "--address",   Address(FreePort()), "--token-file", Path("shuffler.token")};
  EXPECT_EQ(StopWhenReady(shuffle, "listening", "shuffle"), 0) << Read(Path("shuffle.err"));
  EXPECT_NE(Read(Path("shuffle.out")).find("stopped"), std::string::npos)
      << Read(Path("shuffle.out")) << Read(Path("shuffle.err"));
}

}  // namespace
}  // namespace fedldp
