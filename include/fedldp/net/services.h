// The network faces of the deployment (gRPC, proto/fedldp/v1/service.proto).
// They translate messages and call the plain logic (FedSelCoordinator,
// FedSelParticipant); nothing here touches a report's contents.
#ifndef FEDLDP_NET_SERVICES_H_
#define FEDLDP_NET_SERVICES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fedldp/data/dataset.h"
#include "fedldp/net/fedsel_coordinator.h"

namespace fedldp {

// A serialized fedldp.v1.Task, and back.
std::string EncodeTask(const FedSelTaskSpec& task);
Result<FedSelTaskSpec> DecodeTask(std::string_view bytes);

// Messages up to this size pass (gRPC's default cap is 4 MiB).
inline constexpr int kMaxMessageBytes = 64 << 20;

struct TlsFiles {
  std::string certificate;  // server: its certificate chain (PEM)
  std::string key;          // server: its private key (PEM)
  std::string ca;           // client: the certificate(s) to trust (PEM)
  bool enabled() const { return !certificate.empty() || !ca.empty(); }
};

// The coordinator's gRPC server, with a timer that closes rounds at their
// deadlines. Stops on Shutdown or destruction.
class CoordinatorServer {
 public:
  // address: host:port; port 0 picks a free one (see port()).
  static Result<std::unique_ptr<CoordinatorServer>> Start(FedSelCoordinator& coordinator,
                                                          const std::string& address,
                                                          const TlsFiles& tls = {});
  ~CoordinatorServer();
  int port() const { return port_; }
  // Set when the coordinator could not save its state: the process should
  // exit (a restart resumes from the last commit).
  bool failed() const { return failed_->load(); }
  void Shutdown();

 private:
  CoordinatorServer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::shared_ptr<std::atomic<bool>> failed_ = std::make_shared<std::atomic<bool>>(false);
};

struct FedSelClientOptions {
  std::string address = "127.0.0.1:7070";
  std::string token;
  std::string ledger;                 // path of the privacy ledger (SQLite)
  std::optional<double> budget;       // the ledger's total; default: the task's epsilon
  TlsFiles tls;
  std::function<bool()> stop;         // polled; true ends the client
  std::function<void(const std::string&)> log;
  std::chrono::milliseconds give_up{30000};  // server unreachable this long: fail
};

struct FedSelClientSummary {
  std::uint64_t rounds = 0;   // rounds this client answered
  std::uint64_t reports = 0;  // reports accepted by the server
  std::uint64_t refused = 0;  // reports the ledger or the server refused
  bool finished = false;      // the server said the task is over
};

// Joins, then answers rounds until the task finishes (or stop()). The local
// users are `rows` of `data`.
Result<FedSelClientSummary> RunFedSelClient(const FedSelClientOptions& options,
                                            const Dataset& data, std::vector<std::size_t> rows);

}  // namespace fedldp

#endif  // FEDLDP_NET_SERVICES_H_
