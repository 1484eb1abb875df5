// TLS on every hop of the deployment, over gRPC on loopback: FedSel's
// clients to the server, and LDP-FL's clients to the shuffler and to the
// server and the shuffler to the server. The certificates in tests/net/tls
// are self-signed for localhost and 127.0.0.1 and serve these tests only.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <numeric>
#include <thread>

#include "fedldp/net/ldpfl_deploy.h"
#include "fedldp/net/services.h"
#include "testing/ldpfl_task.h"
#include "testing/synthetic.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using namespace std::chrono_literals;

const std::string kCertificate = FEDLDP_TLS_DIR "/localhost.pem";
const std::string kKey = FEDLDP_TLS_DIR "/localhost.key";
const std::string kStranger = FEDLDP_TLS_DIR "/stranger.pem";  // another self-signed certificate

TlsFiles ServerTls() {
  TlsFiles tls;
  tls.certificate = kCertificate;
  tls.key = kKey;
  return tls;
}
TlsFiles Trust(const std::string& ca) {
  TlsFiles tls;
  tls.ca = ca;
  return tls;
}
std::string Local(int port) { return "127.0.0.1:" + std::to_string(port); }

class TlsTest : public testing::TempDirTest {};

FedSelTaskSpec FedSelSpec(const Dataset& data) {
  FedSelTaskSpec spec;
  spec.id = "tls-fedsel";
  spec.config.variant = ParseFedSelVariant("ps-pm").value();
  spec.config.epsilon = 8;
  spec.config.epochs = 1;
  spec.config.batch_fraction = 0.25;
  spec.users = data.size();
  spec.dimension = data.dimension;
  return spec;
}

TEST_F(TlsTest, FedSelClientsTrainOverTlsAndAClientTrustingAnotherCertificateCannotConnect) {
  const Dataset data = testing::SmallSynthetic(200);
  auto state = ServerState::Open(Path("server.sqlite")).value();
  const auto tokens = state.IssueTokens(3).value();
  RoundPolicy policy;
  policy.retry = 5ms;
  auto c = FedSelCoordinator::Create(FedSelSpec(data), policy, std::move(state)).value();
  auto server = CoordinatorServer::Start(*c, "127.0.0.1:0", ServerTls()).value();

  // Trusting the wrong certificate: the handshake fails, so the server is
  // never reached, and the client says so once it gives up.
  FedSelClientOptions wrong;
  wrong.address = Local(server->port());
  wrong.token = tokens[2];
  wrong.ledger = Path("ledger-wrong");
  wrong.tls = Trust(kStranger);
  wrong.give_up = 1s;
  const auto refused = RunFedSelClient(wrong, data, {0});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("unreachable"), std::string::npos) << refused.error();
  // gRPC's reason comes along: "... Ssl handshake failed ... certificate verify failed".
  EXPECT_NE(refused.error().find("handshake"), std::string::npos) << refused.error();
  EXPECT_FALSE(c->stats().started);

  std::vector<std::thread> threads;
  std::vector<Result<FedSelClientSummary>> results(2, Error{"not run"});
  for (std::size_t p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      FedSelClientOptions o;
      o.address = Local(server->port());
      o.token = tokens[p];
      o.ledger = Path("ledger" + std::to_string(p));
      o.tls = Trust(kCertificate);
      std::vector<std::size_t> rows(100);
      std::iota(rows.begin(), rows.end(), p * 100);
      results[p] = RunFedSelClient(o, data, rows);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_TRUE(r->finished);
    EXPECT_EQ(r->reports, 100u);  // 100 users, one epoch
  }
  EXPECT_EQ(c->stats().counted, 200u);
}

TEST_F(TlsTest, LdpFlReportsPassTheShufflerWithTlsOnEveryHop) {
  const Dataset data = testing::Stripes(120, 1);
  const ServerKeys keys = ServerKeys::Generate();
  auto net = NeuralNet::Create("cnn", 3).value();
  const std::vector<float> initial = net.GetWeights();
  const LdpFlTaskSpec spec = testing::SmallCnnTask("tls-ldpfl", 4, keys, net);
  RoundPolicy policy;
  policy.deadline = 60s;
  policy.stale_after = 30s;
  policy.retry = 5ms;
  auto state = ServerState::Open(Path("server.sqlite")).value();
  const auto tokens = state.IssueTokens(2).value();
  auto c = LdpFlCoordinator::Create(spec, policy, std::move(state), keys,
                                    std::vector<double>(initial.begin(), initial.end()))
               .value();
  const std::string shuffler_token = "shuffler-secret-of-this-test";
  auto server = CoordinatorServer::Start(*c, "127.0.0.1:0", ServerTls(), shuffler_token).value();
  ShufflerCore core({.min_batch = 2});
  ShufflerServerOptions s;
  s.address = "127.0.0.1:0";
  s.tls = ServerTls();
  s.server = Local(server->port());
  s.server_tls = Trust(kCertificate);
  s.shuffler_token = shuffler_token;
  auto shuffler = ShufflerServer::Start(core, s).value();

  std::vector<std::thread> threads;
  std::vector<Result<FedSelClientSummary>> results(2, Error{"not run"});
  for (std::size_t p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      LdpFlClientOptions o;
      o.address = Local(server->port());
      o.shuffler = Local(shuffler->port());
      o.token = tokens[p];
      o.ledger = Path("ledger" + std::to_string(p));
      o.budget = 1e9;
      o.tls = Trust(kCertificate);
      o.shuffler_tls = Trust(kCertificate);
      o.give_up = 30s;
      std::vector<std::vector<std::size_t>> shards(2);
      for (std::size_t u = 0; u < 2; ++u) {
        shards[u].resize(30);
        std::iota(shards[u].begin(), shards[u].end(), (2 * p + u) * 30);
      }
      results[p] = RunLdpFlClient(o, data, std::move(shards));
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_TRUE(r->finished);
    EXPECT_EQ(r->reports, 4u);  // 2 users, 2 rounds
  }
  const auto stats = c->stats();
  EXPECT_TRUE(stats.finished);
  EXPECT_EQ(stats.counted, 8u);
  EXPECT_EQ(core.stats().forwarded, 8u);
}

// Plaintext is refused off loopback, by the library itself: tokens and
// reports must not cross a network in clear unless the operator says so.
TEST(Transport, PlaintextIsRefusedOffLoopbackUnlessAllowed) {
  for (const char* a :
       {"127.0.0.1:7070", "127.8.9.10:1", "localhost:7070", "[::1]:7070", "::1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
  for (const char* a :
       {"0.0.0.0:7070", "10.0.0.1:7070", "[::]:7070", "server.example:7070", "128.0.0.1:1",
        "localhost.example:1", "127.evil.example:1", "127.0.0.1.example:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
  TlsFiles plain;
  EXPECT_TRUE(CheckTransport("127.0.0.1:1", plain, "--tls-cert").ok());
  EXPECT_NE(CheckTransport("0.0.0.0:1", plain, "--tls-cert")
                .error()
                .find("refusing plaintext on 0.0.0.0:1"),
            std::string::npos);
  TlsFiles insecure;
  insecure.insecure = true;
  EXPECT_TRUE(CheckTransport("0.0.0.0:1", insecure, "--tls-cert").ok());
  TlsFiles ca;
  ca.ca = "ca.pem";
  EXPECT_TRUE(CheckTransport("server.example:1", ca, "--tls-ca").ok());
}

TEST_F(TlsTest, AServerRefusesToListenInPlaintextOffLoopback) {
  const Dataset data = testing::SmallSynthetic(200);
  auto state = ServerState::Open(Path("server.sqlite")).value();
  auto c = FedSelCoordinator::Create(FedSelSpec(data), {}, std::move(state)).value();
  const auto plain = CoordinatorServer::Start(*c, "0.0.0.0:0");
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().find("refusing plaintext"), std::string::npos) << plain.error();
  EXPECT_TRUE(CoordinatorServer::Start(*c, "0.0.0.0:0", ServerTls()).ok());  // TLS: fine
}

// Every TLS file is read before use and a wrong one is one sentence naming
// it (issue 41): before, a garbage CA file made a client retry for ever and
// a garbage certificate was reported as "cannot listen ... (in use)".
TEST_F(TlsTest, EveryWrongTlsFileIsRefusedNamingItBeforeAnyConnection) {
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(Path(name), std::ios::binary) << text;
    return Path(name);
  };
  std::ifstream pem_in(kCertificate);
  const std::string pem((std::istreambuf_iterator<char>(pem_in)), {});
  const std::string garbage = write("garbage.pem", "not a certificate\n");
  const std::string empty = write("empty.pem", "");
  const std::string truncated =
      write("truncated.pem", pem.substr(0, 200) + "\n-----END CERTIFICATE-----\n");
  const std::string then_garbage = write("then_garbage.pem", pem + "-----BEGIN CERTIFICATE-----\n");
  const std::string both = write(
      "both.pem", pem + "\n" + [&] {
        std::ifstream in(kStranger);
        return std::string((std::istreambuf_iterator<char>(in)), {});
      }());
  struct Case {
    TlsFiles tls;
    std::string expected;  // in the refusal; "" = accepted
  };
  const std::vector<Case> cases = {
      {{garbage, kKey, "", false}, "the certificate " + garbage + " holds no readable PEM"},
      {{kKey, kKey, "", false}, "the certificate " + kKey + " holds no readable PEM"},
      {{Path("missing.pem"), kKey, "", false}, "cannot read " + Path("missing.pem")},
      {{kCertificate, kCertificate, "", false}, "the key " + kCertificate + " is not an"},
      {{kCertificate, garbage, "", false}, "the key " + garbage + " is not an"},
      {{kStranger, kKey, "", false}, "does not belong to the certificate " + kStranger},
      {{kCertificate, "", "", false}, "needs its key"},
      {{"", "", garbage, false}, "the CA file " + garbage + " holds no readable PEM"},
      {{"", "", empty, false}, "the CA file " + empty + " holds no readable PEM"},
      {{"", "", truncated, false}, "the CA file " + truncated + " holds no readable PEM"},
      {{"", "", then_garbage, false}, "the CA file " + then_garbage + " holds no readable PEM"},
      {{"", "", kKey, false}, "the CA file " + kKey},
      {{kCertificate, kKey, "", false}, ""},
      {{"", "", kCertificate, false}, ""},
      {{"", "", both, false}, ""},
  };
  for (const Case& c : cases) {
    const Status s = CheckTlsFiles(c.tls);
    const std::string which = c.tls.certificate + " | " + c.tls.key + " | " + c.tls.ca;
    if (c.expected.empty()) {
      EXPECT_TRUE(s.ok()) << which << ": " << s.error();
    } else {
      ASSERT_FALSE(s.ok()) << which;
      EXPECT_NE(s.error().find(c.expected), std::string::npos) << which << ": " << s.error();
    }
  }
  // At the root too: a server is refused for its file, not "in use", and a
  // client trusting a garbage file stops at once instead of retrying.
  const Dataset data = testing::SmallSynthetic(20);
  auto state = ServerState::Open(Path("server.sqlite")).value();
  const auto tokens = state.IssueTokens(1).value();
  auto coordinator =
      FedSelCoordinator::Create(FedSelSpec(data), RoundPolicy{}, std::move(state)).value();
  const auto server =
      CoordinatorServer::Start(*coordinator, "127.0.0.1:0", {garbage, kKey, "", false});
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.error().find("the certificate " + garbage), std::string::npos) << server.error();
  FedSelClientOptions client;
  client.address = "127.0.0.1:1";
  client.token = tokens[0];
  client.ledger = Path("ledger");
  client.tls = Trust(garbage);
  client.give_up = 60s;
  const auto started = std::chrono::steady_clock::now();
  const auto refused = RunFedSelClient(client, data, {0});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("the CA file " + garbage), std::string::npos) << refused.error();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

}  // namespace
}  // namespace fedldp
