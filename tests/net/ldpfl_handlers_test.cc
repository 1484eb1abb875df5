// The LDP-FL server's service handlers (src/net/ldpfl_handlers.h), which its
// gRPC service and its fuzzer both run: only the shuffler's token opens
// Vouch, RoundInfo and Deliver; a poll leaves out the model the client says
// it has; strangers are refused.
#include "ldpfl_handlers.h"

#include <gtest/gtest.h>

#include "testing/ldpfl_task.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

namespace pb = ::fedldp::v1;
using namespace net_internal;
using Clock = LdpFlCoordinator::Clock;

constexpr char kShuffler[] = "the-shufflers-token-0123456789";

class LdpFlHandlersTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    keys_ = ServerKeys::Generate();
    auto net = NeuralNet::Create("cnn", 3).value();
    spec_ = testing::SmallCnnTask("handlers", 6, keys_, net);
    auto state = ServerState::Open(Path("server.sqlite")).value();
    tokens_ = state.IssueTokens(2).value();
    const auto w = net.GetWeights();
    server_ = LdpFlCoordinator::Create(spec_, RoundPolicy{}, std::move(state), keys_,
                                       std::vector<double>(w.begin(), w.end()))
                  .value();
  }
  // Client 0 joins with every user: the first round opens.
  void Start() {
    pb::JoinRequest join;
    join.set_token(tokens_[0]);
    join.set_users(spec_.users);
    pb::JoinReply reply;
    ASSERT_TRUE(HandleJoin(*server_, "", join, &reply, Clock::now()).ok());
    EXPECT_EQ(reply.users(), spec_.users);
    session_ = reply.session();
  }

  ServerKeys keys_;
  LdpFlTaskSpec spec_;
  std::vector<std::string> tokens_;
  std::string session_;  // client 0's
  std::unique_ptr<LdpFlCoordinator> server_;
};

TEST_F(LdpFlHandlersTest, OnlyTheShufflersTokenOpensTheShufflersCalls) {
  Start();
  for (const std::string token :
       {"", "the-shufflers-token-012345678X", "short", tokens_[0].c_str()}) {
    pb::VouchRequest vouch;
    vouch.set_shuffler_token(token);
    vouch.set_token(tokens_[0]);
    pb::VouchReply vouched;
    EXPECT_EQ(HandleVouch(*server_, kShuffler, vouch, &vouched).code(),
              ErrorCode::kPermissionDenied);
    EXPECT_FALSE(vouched.ok());
    pb::RoundInfoRequest ask;
    ask.set_shuffler_token(token);
    pb::RoundInfoReply info;
    EXPECT_EQ(HandleRoundInfo(*server_, kShuffler, ask, &info, Clock::now()).code(),
              ErrorCode::kPermissionDenied);
    EXPECT_FALSE(info.open());
    pb::DeliverRequest deliver;
    deliver.set_shuffler_token(token);
    pb::DeliverReply delivered;
    EXPECT_EQ(HandleDeliver(*server_, kShuffler, deliver, &delivered, Clock::now()).code(),
              ErrorCode::kPermissionDenied);
  }
  pb::RoundInfoRequest ask;
  ask.set_shuffler_token(kShuffler);
  pb::RoundInfoReply info;
  ASSERT_TRUE(HandleRoundInfo(*server_, kShuffler, ask, &info, Clock::now()).ok());
  EXPECT_TRUE(info.open());
  EXPECT_EQ(info.expected(), spec_.users);
  EXPECT_EQ(info.chunks(), spec_.chunks().size());
  pb::VouchRequest vouch;
  vouch.set_shuffler_token(kShuffler);
  vouch.set_token(tokens_[0]);
  vouch.set_user(0);
  vouch.set_round(info.round());
  pb::VouchReply vouched;
  ASSERT_TRUE(HandleVouch(*server_, kShuffler, vouch, &vouched).ok());
  EXPECT_FALSE(vouched.ok()) << "vouched for a call without the client's session";
  vouch.set_session(session_);
  ASSERT_TRUE(HandleVouch(*server_, kShuffler, vouch, &vouched).ok());
  EXPECT_TRUE(vouched.ok()) << vouched.reason();
  vouch.set_token(tokens_[1]);  // enrolled, but not this user's client
  ASSERT_TRUE(HandleVouch(*server_, kShuffler, vouch, &vouched).ok());
  EXPECT_FALSE(vouched.ok());
  // An empty batch from the shuffler is answered, and refused.
  pb::DeliverRequest deliver;
  deliver.set_shuffler_token(kShuffler);
  deliver.set_round(info.round());
  pb::DeliverReply delivered;
  ASSERT_TRUE(HandleDeliver(*server_, kShuffler, deliver, &delivered, Clock::now()).ok());
  EXPECT_FALSE(delivered.accepted());
  EXPECT_NE(delivered.reason(), "");
}

TEST_F(LdpFlHandlersTest, APollLeavesOutTheModelTheClientHasAndStrangersAreRefused) {
  pb::PollRequest poll;
  poll.set_token("stranger");
  pb::PollReply reply;
  EXPECT_EQ(HandlePoll(*server_, poll, &reply, Clock::now()).code(), ErrorCode::kUnauthenticated);
  pb::JoinRequest join;
  join.set_token("stranger");
  join.set_users(1);
  pb::JoinReply joined;
  EXPECT_EQ(HandleJoin(*server_, "", join, &joined, Clock::now()).code(),
            ErrorCode::kPermissionDenied);

  Start();
  poll.set_token(tokens_[0]);
  EXPECT_EQ(HandlePoll(*server_, poll, &reply, Clock::now()).code(),
            ErrorCode::kFailedPrecondition);
  poll.set_session(session_);
  ASSERT_TRUE(HandlePoll(*server_, poll, &reply, Clock::now()).ok());
  ASSERT_EQ(reply.state(), pb::PollReply::ROUND);
  EXPECT_EQ(static_cast<std::size_t>(reply.weights_size()), spec_.weights());
  EXPECT_EQ(static_cast<std::size_t>(reply.centers_size()), spec_.layer_sizes.size());
  EXPECT_EQ(reply.centers_size(), reply.radii_size());
  EXPECT_EQ(static_cast<std::uint64_t>(reply.users_size()), spec_.users);

  poll.set_known_round(reply.round());
  pb::PollReply again;
  ASSERT_TRUE(HandlePoll(*server_, poll, &again, Clock::now()).ok());
  EXPECT_EQ(again.state(), pb::PollReply::ROUND);
  EXPECT_EQ(again.round(), reply.round());
  EXPECT_EQ(again.users_size(), reply.users_size());
  EXPECT_EQ(again.weights_size(), 0);
  EXPECT_EQ(again.centers_size(), 0);
}

}  // namespace
}  // namespace fedldp
