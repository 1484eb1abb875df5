// The network faces of the deployment (gRPC, proto/fedldp/v1/service.proto).
// They translate messages and call the plain logic (FedSelCoordinator,
// FedSelParticipant); nothing here touches a report's contents.
#ifndef FEDLDP_NET_SERVICES_H_
#define FEDLDP_NET_SERVICES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/data/dataset.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/ldpfl_deploy.h"

namespace fedldp {

// A serialized fedldp.v1.Task, and back.
std::string EncodeTask(const FedSelTaskSpec& task);
Result<FedSelTaskSpec> DecodeTask(std::string_view bytes);

std::string EncodeLdpFlTask(const LdpFlTaskSpec& task);
Result<LdpFlTaskSpec> DecodeLdpFlTask(std::string_view bytes);
// "fedsel", "ldpfl", or "" for bytes that are not a task.
std::string TaskProtocol(std::string_view bytes);

// Messages up to this size pass (gRPC's default cap is 4 MiB).
inline constexpr int kMaxMessageBytes = 64 << 20;

struct TlsFiles {
  std::string certificate;  // server: its certificate chain (PEM)
  std::string key;          // server: its private key (PEM)
  std::string ca;           // client: the certificate(s) to trust (PEM)
  // Plaintext (no certificate or ca) is refused for any address but
  // loopback: tokens and reports would cross the network in clear. The
  // operator may allow it knowingly (fedldp's --insecure).
  bool insecure = false;
  bool enabled() const { return !certificate.empty() || !ca.empty(); }
};

// `address` with the port a server actually took: port 0 ("pick a free
// one") replaced by `port`; any other address as it is.
std::string BoundAddress(const std::string& address, int port);

// True for 127.0.0.0/8, ::1 and localhost, with a port or not.
bool IsLoopbackAddress(const std::string& address);
// OK if `address` may be used with `tls` (TLS, loopback, or insecure
// allowed), else the refusal, naming `flag` (the option that gives TLS).
Status CheckTransport(const std::string& address, const TlsFiles& tls, const char* flag);
// OK unless another process listens on `address` (host:port; port 0 is
// always free): a probe binds it and lets go, so that a server refused for
// its port is refused before it writes anything. Racy by nature: the
// server's own bind decides.
Status CheckListenable(const std::string& address);
// OK if every file `tls` names is what it must be, else one sentence naming
// the file and the problem: the certificate and the CA file hold PEM
// certificates that are valid now, the key is an unencrypted PEM private key
// and belongs to the certificate. (Before: a garbage CA file made a client
// retry for ever, a garbage certificate read as "cannot listen ... in use".)
// StartServer and every channel check it too.
Status CheckTlsFiles(const TlsFiles& tls);

namespace net_internal {
class GatedService;
}

// The coordinator's gRPC server (gRPC's completion-queue API), with a timer that
// closes rounds at their deadlines. Stops on Shutdown or destruction.

class CoordinatorServer {
 public:
  // address: host:port; port 0 picks a free one (see port()). A shuffled
  // task (config.shuffle) takes reports only from the shuffler holding
  // `shuffler_token` (Vouch, RoundInfo, Deliver); others ignore it.
  // `threads`: threads answering calls, each on a completion queue.
  static Result<std::unique_ptr<CoordinatorServer>> Start(FedSelCoordinator& coordinator,
                                                          const std::string& address,
                                                          const TlsFiles& tls = {},
                                                          std::string shuffler_token = "",
                                                          int threads = 1);
  // LDP-FL: clients join and poll here; only the shuffler holding
  // `shuffler_token` may call Vouch, RoundInfo and Deliver.
  static Result<std::unique_ptr<CoordinatorServer>> Start(LdpFlCoordinator& coordinator,
                                                          const std::string& address,
                                                          const TlsFiles& tls,
                                                          std::string shuffler_token,
                                                          int threads = 1);
  ~CoordinatorServer();
  int port() const { return port_; }
  // Set when the coordinator could not save its state: the process should
  // exit (a restart resumes from the last commit).
  bool failed() const { return failed_->load(); }
  void Shutdown();

 private:
  CoordinatorServer() = default;
  using MakeService = std::function<std::unique_ptr<net_internal::GatedService>(
      std::shared_ptr<std::atomic<bool>> failed)>;
  static Result<std::unique_ptr<CoordinatorServer>> StartWith(
      const MakeService& make, const std::string& address, const TlsFiles& tls,
      std::function<void()> tick, std::function<void(const std::string&)> say, int threads);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::shared_ptr<std::atomic<bool>> failed_ = std::make_shared<std::atomic<bool>>(false);
};

struct FedSelClientOptions {
  std::string address = "127.0.0.1:7070";
  std::string token;
  std::string ledger;            // path of the privacy ledger (SQLite)
  std::optional<double> budget;  // the ledger's total; default: the task's epsilon
  TlsFiles tls;
  std::function<void(const std::string&)> log;
  // The server unreachable this long: fail. Long by default (a day): an
  // outage of the server must not end the federation (it was 30 s, and a
  // 40 s pause made every client exit); retries back off to once a second.
  std::chrono::milliseconds give_up{std::chrono::hours(24)};
  // A shuffled task's (FedSel with config.shuffle; LDP-FL always): where
  // the sealed reports go, and the trust for it.
  std::string shuffler;
  TlsFiles shuffler_tls;
  // OK, or the first thing wrong (ErrorCode::kInvalidArgument): an address,
  // a token and a ledger are needed, a budget is positive.
  Status Validate() const;
};

struct FedSelClientSummary {
  std::uint64_t rounds = 0;   // rounds this client answered
  std::uint64_t reports = 0;  // reports accepted by the server (shuffled: by the shuffler)
  std::uint64_t refused = 0;  // reports the ledger or the server refused
  bool finished = false;      // the server said the task is over
  bool exhausted = false;     // every user's budget is spent (and the server told)
};

// Joins, then answers rounds until the task finishes or a stop is requested
// on `stop` (then the summary is not finished). The local
// users are `rows` of `data`. A shuffled task's reports are sealed to the
// server's key and handed to `options.shuffler` (required then, refused
// otherwise); one the server has not received is handed over again, with
// the recorded bytes at no new cost, while the round lasts.
Result<FedSelClientSummary> RunFedSelClient(const FedSelClientOptions& options, const Dataset& data,
                                            std::vector<std::size_t> rows,
                                            std::stop_token stop = {});

// ---------------------------------------------------------------- LDP-FL

struct ShufflerServerOptions {
  std::string address = "127.0.0.1:7071";  // where clients reach the shuffler
  TlsFiles tls;                            // its own certificate and key
  std::string server = "127.0.0.1:7070";   // the coordinator
  TlsFiles server_tls;                     // ca: trust for the coordinator
  std::string shuffler_token;
  std::function<void(const std::string&)> log;
};

// The shuffler's gRPC face: takes clients' sealed pieces (asking the server
// to vouch for each), polls the server's round every 20 ms and forwards the
// batches ShufflerCore releases; a batch the server cannot take is kept and
// sent again.
class ShufflerServer {
 public:
  static Result<std::unique_ptr<ShufflerServer>> Start(ShufflerCore& core,
                                                       const ShufflerServerOptions& options);
  ~ShufflerServer();
  int port() const { return port_; }
  bool finished() const { return finished_->load(); }  // the server said the task is over
  // The server's vouches this shuffler asked for, and the calls they took
  // (VouchMany: many a call).
  std::uint64_t vouches_asked() const;
  std::uint64_t vouch_calls() const;
  void Shutdown();

 private:
  ShufflerServer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::shared_ptr<std::atomic<bool>> finished_ = std::make_shared<std::atomic<bool>>(false);
};

// What `fedldp shuffle` runs: ShufflerCore with `policy` behind a
// ShufflerServer, until the server says the task is over or a stop is
// requested on `stop`; then it shuts down and says what it forwarded.
struct ShufflerSummary {
  bool finished = false;  // the task is over (else: stopped)
  ShufflerCore::Stats stats;
  std::uint64_t vouches_asked = 0, vouch_calls = 0;
};
Result<ShufflerSummary> RunShuffler(const ShufflerServerOptions& options,
                                    const ShufflerPolicy& policy, std::stop_token stop = {});

struct LdpFlClientOptions : FedSelClientOptions {
  LdpFlClientOptions() { shuffler = "127.0.0.1:7071"; }
};

// Joins the server, then answers rounds through the shuffler until the task
// finishes (or stop()). Each entry of `shards` is one user's local rows. A
// user whose pieces the server has not received is sent again (the recorded
// pieces, at no new cost) while the round lasts, so a shuffler that dies
// loses nothing that can still count.
Result<FedSelClientSummary> RunLdpFlClient(const LdpFlClientOptions& options, const Dataset& data,
                                           std::vector<std::vector<std::size_t>> shards,
                                           std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_NET_SERVICES_H_
