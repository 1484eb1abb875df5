// A lost token replaced while `fedldp serve` runs (issue 41, item 12): the
// server holds its state file, so `fedldp enrol --replace-user` leaves a
// request beside it (token_requests.h) that the running server carries
// out. The old token's client is turned away at once, the new token's
// client takes its users over, and the task runs to its end. (Before, the
// server had to be stopped for the replacement.)
#include <gtest/gtest.h>

#include <fstream>

#include "testing/service_processes.h"

namespace fedldp {
namespace {

using namespace testing::processes;

class ReplaceTokenTest : public testing::ServiceProcessTest {
 protected:
  // A client of part `part` of 2 of Adult's first 200 rows, with `token`.
  pid_t Client(const std::string& token, int part, const std::string& name) {
    const pid_t pid =
        Spawn({FEDLDP_BINARY, "client", "--server", Address(port_), "--token", token, "--data-dir",
               FEDLDP_DATASETS, "--rows", "0:200", "--part", std::to_string(part) + "/2",
               "--ledger", Path("ledger" + std::to_string(part) + ".sqlite")},
              Path(name + ".out"), Path(name + ".err"));
    return pid;
  }
  int port_ = FreePort();
};

TEST_F(ReplaceTokenTest, ATokenIsReplacedWhileTheServerRuns) {
  Enrol("s.sqlite", 2);
  std::string tokens[2];
  {
    std::ifstream in(Path("s.sqlite.tokens"));
    in >> tokens[0] >> tokens[1];
  }
  const pid_t server = Start({FEDLDP_BINARY, "serve", "--state", Path("s.sqlite"), "--address",
                              Address(port_), "--users", "200", "--data-dir", FEDLDP_DATASETS},
                             "waiting for 200 users", "serve");
  const pid_t lost = Client(tokens[0], 1, "lost");
  ASSERT_TRUE(WaitFor("serve.err", "client joined: users 0..99")) << Read(Path("serve.err"));

  const auto start = std::chrono::steady_clock::now();
  const pid_t enrol = Spawn({FEDLDP_BINARY, "enrol", "--state", Path("s.sqlite"), "--replace-user",
                             "7", "--out", Path("new.token")},
                            Path("replace.out"), Path("replace.err"));
  ASSERT_EQ(Wait(enrol), 0) << Read(Path("replace.err"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(Read(Path("replace.err")).find("a new token for the client of users 0..99"),
            std::string::npos)
      << Read(Path("replace.err"));
  EXPECT_TRUE(WaitFor("serve.err", "replaced the token of users 0..99")) << Read(Path("serve.err"));
  std::string fresh;
  std::ifstream(Path("new.token")) >> fresh;
  ASSERT_EQ(fresh.size(), 64u);

  // The old token's client is turned away and stops; the new one takes
  // its users (the same ledger: the machine is the same), the other client
  // joins, and the task runs to its end.
  EXPECT_NE(Wait(lost), 0);
  EXPECT_NE(Read(Path("lost.err")).find("join first"), std::string::npos) << Read(Path("lost.err"));
  const pid_t found = Client(fresh, 1, "found");
  const pid_t other = Client(tokens[1], 2, "other");
  EXPECT_EQ(Wait(server), 0) << Read(Path("serve.err"));
  EXPECT_EQ(Wait(found), 0) << Read(Path("found.err"));
  EXPECT_EQ(Wait(other), 0) << Read(Path("other.err"));
  const std::string log = Read(Path("serve.err"));
  EXPECT_NE(log.find("client joined again: users 0..99"), std::string::npos) << log;
  EXPECT_NE(log.find("training starts"), std::string::npos) << log;
}

// With the state held by a process that does not answer (a server stopped
// with SIGSTOP), the request is withdrawn after its wait and nothing
// changes: no token is written.
TEST_F(ReplaceTokenTest, NoAnswerWithdrawsTheRequest) {
  Enrol("s.sqlite", 1);
  const pid_t server = Start({FEDLDP_BINARY, "serve", "--state", Path("s.sqlite"), "--address",
                              Address(port_), "--users", "200", "--data-dir", FEDLDP_DATASETS},
                             "waiting for 200 users", "serve");
  ::kill(server, SIGSTOP);
  const pid_t enrol = Spawn({FEDLDP_BINARY, "enrol", "--state", Path("s.sqlite"), "--replace-user",
                             "0", "--out", Path("new.token")},
                            Path("replace.out"), Path("replace.err"));
  EXPECT_EQ(Wait(enrol), 2) << Read(Path("replace.err"));
  EXPECT_NE(Read(Path("replace.err")).find("took the request within 10 s"), std::string::npos)
      << Read(Path("replace.err"));
  EXPECT_FALSE(std::filesystem::exists(Path("new.token")));
  ::kill(server, SIGCONT);
}

}  // namespace
}  // namespace fedldp
