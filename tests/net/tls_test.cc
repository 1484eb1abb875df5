// TLS on every hop of the deployment, over gRPC on loopback: FedSel's
// clients to the server, and LDP-FL's clients to the shuffler and to the
// server and the shuffler to the server. The certificates in tests/net/tls
// are self-signed for localhost and 127.0.0.1 and serve these tests only.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <numeric>
#include <thread>

#include "fedldp/net/ldpfl_deploy.h"
#include "fedldp/net/services.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "testing/certificates.h"
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
  // never reached, and the client says why at once (issue 44: it retried
  // for --give-up with gRPC's "Handshake read failed").
  FedSelClientOptions wrong;
  wrong.address = Local(server->port());
  wrong.token = tokens[2];
  wrong.ledger = Path("ledger-wrong");
  wrong.tls = Trust(kStranger);
  const auto refused = RunFedSelClient(wrong, data, {0});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("is not trusted by --tls-ca " + kStranger), std::string::npos)
      << refused.error();
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
// Issue 44, item 4: a connection that can never work is one line naming the
// cause and the fix, within 5 s, not a handshake retried for --give-up
// (a day): a certificate for another name, from another CA, expired; TLS
// on one side only; a port where no fedldp server listens.
class MistakenConnectionTest : public TlsTest {
 protected:
  // What RunFedSelClient says connecting to `address` with `tls`, and how
  // long it took to say it.
  std::pair<std::string, std::chrono::steady_clock::duration> Connect(const std::string& address,
                                                                      const TlsFiles& tls) {
    FedSelClientOptions o;
    o.address = address;
    o.token = std::string(64, 'a');
    o.ledger = Path("ledger");
    o.tls = tls;
    o.give_up = 8s;  // a client that retries fails the test, not hangs it
    const auto start = std::chrono::steady_clock::now();
    const auto r = RunFedSelClient(o, testing::SmallSynthetic(10), {0});
    return {r.ok() ? "connected" : r.error(), std::chrono::steady_clock::now() - start};
  }
  void ExpectSaid(const std::string& address, const TlsFiles& tls, const std::string& words) {
    const auto [said, took] = Connect(address, tls);
    EXPECT_NE(said.find(words), std::string::npos) << said;
    EXPECT_EQ(said.find('\n'), std::string::npos) << said;
    EXPECT_LT(took, 5s) << said;
  }
  // A gRPC server offering only the shuffler's service (the shuffler's
  // port, as a client given the wrong one sees it), with TLS from
  // `certificate` and `key` unchecked (fedldp's own server refuses an
  // expired certificate at start).
  struct Bare {
    v1::Shuffler::Service service;  // every call UNIMPLEMENTED
    std::unique_ptr<grpc::Server> server;
    int port = 0;
  };
  std::unique_ptr<Bare> BareServer(const std::string& certificate, const std::string& key) {
    grpc::SslServerCredentialsOptions ssl;
    const auto read = [](const std::string& path) {
      std::ifstream f(path);
      return std::string(std::istreambuf_iterator<char>(f), {});
    };
    if (!certificate.empty()) ssl.pem_key_cert_pairs.push_back({read(key), read(certificate)});
    auto bare = std::make_unique<Bare>();
    grpc::ServerBuilder builder;
    builder.AddListeningPort(
        "127.0.0.1:0",
        certificate.empty() ? grpc::InsecureServerCredentials() : grpc::SslServerCredentials(ssl),
        &bare->port);
    builder.RegisterService(&bare->service);
    bare->server = builder.BuildAndStart();
    return bare;
  }
};

TEST_F(MistakenConnectionTest, AWrongCertificateIsOneLineWithItsFix) {
  ASSERT_EQ(testing::WriteCertificate(Path("named.pem"), Path("named.key"), "localhost", -1, 30),
            "");
  ASSERT_EQ(testing::WriteCertificate(Path("old.pem"), Path("old.key"), "localhost", -30, -1), "");
  const auto named = BareServer(Path("named.pem"), Path("named.key"));
  const auto old = BareServer(Path("old.pem"), Path("old.key"));
  ASSERT_GT(named->port, 0);
  ASSERT_GT(old->port, 0);
  // The certificate names localhost only: connecting to 127.0.0.1 fails.
  ExpectSaid(Local(named->port), Trust(Path("named.pem")),
             "is not for 127.0.0.1 (it names localhost): connect to a name it holds");
  ExpectSaid(Local(named->port), Trust(kStranger), "is not trusted by --tls-ca");
  ExpectSaid("localhost:" + std::to_string(old->port), Trust(Path("old.pem")), " expired on ");
  // Without TLS to a TLS server, and the other way round.
  ExpectSaid(Local(named->port), {}, "answers with TLS: give its certificate with --tls-ca");
  const auto plain = BareServer("", "");
  ExpectSaid("localhost:" + std::to_string(plain->port), Trust(kCertificate),
             "does not answer TLS");
  // The right certificate and name: the handshake passes, and a port where
  // no coordinator answers (the shuffler's) is said at once too.
  ExpectSaid("localhost:" + std::to_string(named->port), Trust(Path("named.pem")),
             "is a gRPC server without this call");
  ExpectSaid(Local(plain->port), {}, "is a gRPC server without this call");
}

TEST_F(MistakenConnectionTest, APortWhereNoFedldpServerListensIsOneLine) {
  // Something else listens there (an HTTP server, say).
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof at;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&at), size), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &size);
  std::jthread http([fd](std::stop_token stop) {
    while (!stop.stop_requested()) {
      const int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      char buffer[256];
      (void)::recv(c, buffer, sizeof buffer, 0);
      const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
      (void)::send(c, reply, sizeof reply - 1, MSG_NOSIGNAL);
      ::close(c);
    }
  });
  ExpectSaid(Local(ntohs(at.sin_port)), {},
             "answers, but not as a gRPC server (it said \"HTTP/1.1 400 Bad Request\")");
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

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
