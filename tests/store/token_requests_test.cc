#include "fedldp/store/token_requests.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class TokenRequestsTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    state_ = Path("server.sqlite");
  }
  // A server that answers the requests for state_ every 20 ms with
  // `replace` until the test ends; what it logs goes to log_.
  void Serve(ReplaceTokenFn replace) {
    server_ = std::jthread([this, replace](std::stop_token stop) {
      while (!stop.stop_requested()) {
        AnswerTokenRequests(state_, replace, [this](const std::string& line) {
          std::lock_guard lock(mu_);
          log_ += line + "\n";
        });
        std::this_thread::sleep_for(20ms);
      }
    });
  }
  std::string Log() {
    std::lock_guard lock(mu_);
    return log_;
  }
  std::size_t FilesLeft() const {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(TokenRequestsDir(state_))) ++n;
    return n;
  }

  std::string state_;
  std::mutex mu_;
  std::string log_;
  std::jthread server_;
};

const std::string kHash(64, 'a');

TEST_F(TokenRequestsTest, TheRunningServerCarriesOutARequestAndAnswersIt) {
  std::atomic<int> calls = 0;
  Serve([&](std::uint64_t user, std::string_view hash) -> Result<ServerState::Client> {
    ++calls;
    EXPECT_EQ(hash, kHash);  // only the hash travels
    return ServerState::Client{user - 1, 3};
  });
  const auto client = AskRunningServer(state_, 7, kHash, 10s);
  ASSERT_TRUE(client.ok()) << client.error();
  EXPECT_EQ(client->first, 6u);
  EXPECT_EQ(client->users, 3u);
  EXPECT_EQ(calls.load(), 1);
  server_ = {};  // stopped
  EXPECT_NE(Log().find("replaced the token of users 6..8"), std::string::npos) << Log();
  EXPECT_EQ(FilesLeft(), 0u);  // request, taken and answer: all gone
  struct stat st {};
  ASSERT_EQ(::stat(TokenRequestsDir(state_).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(TokenRequestsTest, ARefusalComesBackWithItsReason) {
  Serve([](std::uint64_t user, std::string_view) -> Result<ServerState::Client> {
    return Error{"no joined client hosts user " + std::to_string(user)};
  });
  const auto refused = AskRunningServer(state_, 99, kHash, 10s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), "no joined client hosts user 99");
}

// Without a server the request is withdrawn after the wait: nothing is
// left behind to be carried out later.
TEST_F(TokenRequestsTest, WithoutAServerTheRequestIsWithdrawn) {
  const auto start = std::chrono::steady_clock::now();
  const auto none = AskRunningServer(state_, 1, kHash, 200ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(none.error().find("nothing changed"), std::string::npos) << none.error();
  EXPECT_EQ(FilesLeft(), 0u);
  int calls = 0;
  AnswerTokenRequests(
      state_,
      [&](std::uint64_t, std::string_view) -> Result<ServerState::Client> {
        ++calls;
        return ServerState::Client{};
      },
      [](const std::string&) {});
  EXPECT_EQ(calls, 0);
}

// A folder others may write into is never read: anyone could replace a
// token through it. The server says so once; files of other names are
// left alone.
TEST_F(TokenRequestsTest, AFolderOthersMayWriteIsIgnoredAndOtherNamesAreLeftAlone) {
  const fs::path dir = TokenRequestsDir(state_);
  fs::create_directory(dir);
  for (const char* name : {"replace-1-0123456789abcdef", "replace-x-0123456789abcdef",
                           "replace-1-0123", "notes.txt", "replace--0123456789abcdef"}) {
    std::ofstream(dir / name) << kHash << "\n";
  }
  int calls = 0;
  std::string log;
  const ReplaceTokenFn count = [&](std::uint64_t user, std::string_view) {
    ++calls;
    return Result<ServerState::Client>(ServerState::Client{user, 1});
  };
  const auto say = [&](const std::string& line) { log += line + "\n"; };
  ::chmod(dir.c_str(), 0777);
  AnswerTokenRequests(state_, count, say);
  AnswerTokenRequests(state_, count, say);
  EXPECT_EQ(calls, 0);
  EXPECT_NE(log.find("others may write into it"), std::string::npos) << log;
  EXPECT_EQ(log.find("others may write into it"), log.rfind("others may write into it")) << log;
  ::chmod(dir.c_str(), 0700);
  AnswerTokenRequests(state_, count, say);
  EXPECT_EQ(calls, 1);  // only the well-formed request
  EXPECT_TRUE(fs::exists(dir / "replace-1-0123456789abcdef.answer"));
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_TRUE(fs::exists(dir / "replace-x-0123456789abcdef"));
}

}  // namespace
}  // namespace fedldp
