// A flood of idle TCP connections does not disable a service: `fedldp
// serve` (FedSel and LDP-FL) and `fedldp shuffle` run under a 128-descriptor
// limit, are sent 400 connections that never speak, held for 3 s and then
// closed; afterwards each must answer a call, and FedSel's server must let a
// real client join. (gRPC 1.51's acceptor stops for good on the first
// accept() that fails for want of a descriptor: before the listener was
// watched and rebuilt, every service stayed deaf after such a flood.)
#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "testing/service_processes.h"

namespace fedldp {
namespace {

using namespace testing::processes;

constexpr int kFlood = 400;
// Above the limit the services are given, far below the test's own.
const std::string kLimit = "--nofile=128:128";

class FloodTest : public testing::ServiceProcessTest {
 protected:
  void SetUp() override {
    ServiceProcessTest::SetUp();
    // UBSan reads an object's type through a pipe; with every descriptor
    // taken it cannot open one and reports "invalid vptr" for sound objects
    // (GCC 12's libsanitizer). The rebuilding runs under the sanitizers in
    // GateTest.ARebuiltServerServesAgainAndReleasesWhatItHeld.
    if (FEDLDP_SANITIZED) GTEST_SKIP() << "descriptor exhaustion defeats UBSan's vptr check";
  }

  // `args` under the low descriptor limit (util-linux's prlimit).
  static std::vector<std::string> Limited(std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/prlimit", kLimit});
    return args;
  }

  // Opens kFlood connections to `port` that say nothing, holds them for
  // `hold` and closes them; returns how many were opened.
  static int Flood(int port, std::chrono::seconds hold) {
    std::vector<int> fds;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    for (int i = 0; i < kFlood; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
      fds.push_back(fd);
    }
    std::this_thread::sleep_for(hold);
    for (const int fd : fds) ::close(fd);
    return static_cast<int>(fds.size());
  }

  // Floods `address`'s port, then expects the service to answer `method`
  // with `code` (any answer: it hears calls again) within 30 s.
  void ExpectAnswersAfterFlood(int port, const std::string& method, const Metadata& metadata,
                               grpc::StatusCode code) {
    ASSERT_EQ(Flood(port, std::chrono::seconds(3)), kFlood);
    const grpc::Status status = Call(Address(port), method, "", metadata, std::chrono::seconds(30));
    EXPECT_EQ(status.error_code(), code) << method << ": " << status.error_message();
  }
};

TEST_F(FloodTest, AFedSelServerHearsARealClientAfterAFlood) {
  Enrol("s.sqlite", 1);
  const int port = FreePort();
  Start(Limited({FEDLDP_BINARY, "serve", "--state", Path("s.sqlite"), "--address", Address(port),
                 "--users", "2", "--data-dir", FEDLDP_DATASETS}),
        "waiting for 2 users", "serve");
  ExpectAnswersAfterFlood(port, Method("Coordinator", "Join"), {{"fedldp-token", "not-a-token"}},
                          grpc::StatusCode::PERMISSION_DENIED);
  // A second flood, then a real client process joins.
  ASSERT_EQ(Flood(port, std::chrono::seconds(3)), kFlood);
  std::string token;
  std::ifstream(Path("s.sqlite.tokens")) >> token;
  Spawn({FEDLDP_BINARY, "client", "--server", Address(port), "--token", token, "--data-dir",
         FEDLDP_DATASETS, "--rows", "0:1", "--ledger", Path("ledger.sqlite")},
        Path("client.out"), Path("client.err"));
  EXPECT_TRUE(WaitFor("serve.err", "client joined", std::chrono::seconds(30)))
      << Read(Path("serve.err")) << Read(Path("client.err"));
}

TEST_F(FloodTest, AnLdpFlServerAndItsShufflerHearCallsAfterAFlood) {
  std::ofstream(Path("shuffler.token")) << "a-shuffler-token-0123456789\n";
  Enrol("l.sqlite", 1);
  const int server = FreePort();
  Start(Limited({FEDLDP_BINARY, "serve", "--protocol", "ldpfl", "--state", Path("l.sqlite"),
                 "--address", Address(server), "--users", "10", "--data-dir", FEDLDP_MNIST_DIR,
                 "--train-rows", "0:100", "--shuffler-token-file", Path("shuffler.token")}),
        "waiting for 10 users", "serve");
  ExpectAnswersAfterFlood(server, Method("Coordinator", "Join"), {{"fedldp-token", "not-a-token"}},
                          grpc::StatusCode::PERMISSION_DENIED);

  const int shuffler = FreePort();
  Start(Limited({FEDLDP_BINARY, "shuffle", "--server", Address(server), "--address",
                 Address(shuffler), "--token-file", Path("shuffler.token")}),
        "listening", "shuffle");
  ExpectAnswersAfterFlood(shuffler, Method("Shuffler", "Shuffle"),
                          {{"fedldp-token", "not-a-token"}}, grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace fedldp
