// The clients' retry rule, without a network: the invoked call is a stub
// that answers a given sequence of statuses.
#include <gtest/gtest.h>

#include <vector>

#include "grpc_util.h"

namespace fedldp::net_internal {
namespace {

struct Reply {
  int value = 0;
};

Result<Reply> CallThrough(std::vector<grpc::StatusCode> codes, int* calls) {
  Retrier retrier("server", {}, {}, std::chrono::milliseconds(10000));
  return retrier.Call<Reply>(
      [&](grpc::ClientContext*, Reply* reply) {
        const std::size_t i = static_cast<std::size_t>((*calls)++);
        if (i < codes.size()) return grpc::Status(codes[i], "test");
        reply->value = 7;
        return grpc::Status::OK;
      },
      "poll");
}

// A server stopped by SIGTERM cancels the calls it holds: its clients wait
// and retry, as they do for a killed one. (Before, CANCELLED ended 5 of 6
// clients of a FedSel server stopped mid-training.)
TEST(Retrier, RetriesAServerThatIsAwayOrStopping) {
  for (const auto code : {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::DEADLINE_EXCEEDED,
                          grpc::StatusCode::CANCELLED}) {
    int calls = 0;
    const auto r = CallThrough({code, code}, &calls);
    ASSERT_TRUE(r.ok()) << static_cast<int>(code) << ": " << r.error();
    EXPECT_EQ(r->value, 7);
    EXPECT_EQ(calls, 3);
  }
}

TEST(Retrier, AnAnswerIsNotRetried) {
  for (const auto code : {grpc::StatusCode::PERMISSION_DENIED, grpc::StatusCode::UNAUTHENTICATED,
                          grpc::StatusCode::INVALID_ARGUMENT}) {
    int calls = 0;
    const auto r = CallThrough({code}, &calls);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("poll refused: test"), std::string::npos) << r.error();
    EXPECT_EQ(calls, 1);
  }
}

}  // namespace
}  // namespace fedldp::net_internal
