// The shuffler's vouches asked many at a time (VouchBatcher): every caller
// gets its own ask's answer, concurrent asks share calls, and a server
// without VouchMany is asked one Vouch at a time.
#include "vouch_batcher.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fedldp/v1/service.grpc.pb.h"

namespace fedldp::net_internal {
namespace {

namespace pb = ::fedldp::v1;

// The server's side: user u of round r may report if u + r is even;
// refused with a reason naming both otherwise. `many` serves VouchMany
// (else gRPC answers it UNIMPLEMENTED, as an older server would).
class FakeCoordinator final : public pb::Coordinator::Service {
 public:
  explicit FakeCoordinator(bool many) : many_(many) {}
  grpc::Status Vouch(grpc::ServerContext*, const pb::VouchRequest* q, pb::VouchReply* r) override {
    ++single_;
    if (q->shuffler_token() != "secret") return {grpc::StatusCode::PERMISSION_DENIED, "token"};
    Answer(*q, r);
    return grpc::Status::OK;
  }
  grpc::Status VouchMany(grpc::ServerContext* context, const pb::VouchManyRequest* q,
                         pb::VouchManyReply* r) override {
    if (!many_) return Service::VouchMany(context, q, r);
    ++many_calls_;
    if (q->shuffler_token() != "secret") return {grpc::StatusCode::PERMISSION_DENIED, "token"};
    for (const auto& ask : q->asks()) Answer(ask, r->add_answers());
    return grpc::Status::OK;
  }
  std::atomic<int> single_{0}, many_calls_{0};

 private:
  static void Answer(const pb::VouchRequest& q, pb::VouchReply* r) {
    const bool ok = (q.user() + q.round()) % 2 == 0 && q.token() == "t" + std::to_string(q.user());
    r->set_ok(ok);
    if (!ok) r->set_reason("no: " + std::to_string(q.user()) + "/" + std::to_string(q.round()));
  }
  const bool many_;
};

struct Served {
  explicit Served(bool many) : service(many) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    stub = pb::Coordinator::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                        grpc::InsecureChannelCredentials()));
  }
  ~Served() { server->Shutdown(); }
  FakeCoordinator service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<pb::Coordinator::Stub> stub;
};

// 64 threads ask 20 vouches each; each answer is its own ask's.
void AskFromManyThreads(VouchBatcher& batcher) {
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 64; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < 20; ++i) {
        const std::uint64_t user = 1000 * t + i, round = i % 3;
        const Status s = batcher.Ask("t" + std::to_string(user), "s", user, round);
        const bool expected = (user + round) % 2 == 0;
        if (s.ok() != expected || (!expected && s.error() != "no: " + std::to_string(user) + "/" +
                                                                 std::to_string(round))) {
          ++wrong;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(VouchBatcherTest, ConcurrentAsksShareCallsAndGetTheirOwnAnswers) {
  Served served(/*many=*/true);
  VouchBatcher batcher(*served.stub, "secret");
  AskFromManyThreads(batcher);
  EXPECT_EQ(batcher.asks(), 64u * 20);
  EXPECT_EQ(served.service.single_.load(), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(served.service.many_calls_.load()), batcher.calls());
  // Batched: with 64 asking at once, calls are far fewer than asks.
  EXPECT_LT(batcher.calls(), batcher.asks() / 4) << batcher.calls();
  // A wrong key is every ask's answer, not a hang.
  VouchBatcher wrong(*served.stub, "guess");
  EXPECT_NE(wrong.Ask("t0", "s", 0, 0).error().find("cannot be asked (token)"), std::string::npos);
}

TEST(VouchBatcherTest, AServerWithoutVouchManyIsAskedOneAtATime) {
  Served served(/*many=*/false);
  VouchBatcher batcher(*served.stub, "secret");
  AskFromManyThreads(batcher);
  EXPECT_EQ(served.service.single_.load(), 64 * 20);
  EXPECT_EQ(batcher.asks(), 64u * 20);
}

TEST(VouchBatcherTest, AnUnreachableServerIsSaid) {
  auto stub = pb::Coordinator::NewStub(
      grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()));
  VouchBatcher batcher(*stub, "secret");
  EXPECT_NE(batcher.Ask("t0", "s", 0, 0).error().find("the server cannot be asked"),
            std::string::npos);
}

}  // namespace
}  // namespace fedldp::net_internal
