// The load test's clients driven from gRPC's callback threads, not a
// thread each: every client keeps its own channel (and TCP connection),
// token, ledger and FedSelParticipant, so it computes, charges and sends
// what the deployed client does, but its calls are asynchronous, and a
// handful of gRPC's threads run all the clients' next steps as their calls
// complete. It joins as the deployed client does (retrying a server it
// cannot reach yet, for up to 30 s), and rides out what the deployed client
// (RunFedSelClient) rides out: a call that fails while the server may
// answer later (away, slow, restarting, busy) is made again after a backoff
// for up to 30 s, a submit with the same reports (which the server counts
// once), and a session the server forgot on restarting is joined again.
// A report the ledger or the server refuses, or another failure, ends that
// client (failed, with the reason).
#ifndef FEDLDP_SRC_NET_LOAD_CLIENTS_H_
#define FEDLDP_SRC_NET_LOAD_CLIENTS_H_

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/data/dataset.h"

namespace fedldp::net_internal {

struct LoadClientsProgress {
  std::atomic<std::size_t> finished{0}, failed{0}, dropped{0};
  // Reports the server said it accepted, and reports a dropping client sent
  // without waiting for the answer (the server may or may not have them).
  std::atomic<std::uint64_t> accepted{0}, in_flight{0};
  // Polls and submits the clients made (the callback driver's): the calls
  // the server answered for the reports, to set its CPU per report beside
  // an empty call's.
  std::atomic<std::uint64_t> calls{0};
  // Calls made again after a failure (each also in `calls`).
  std::atomic<std::uint64_t> retries{0};
  // Reports submitted and the bytes of their payloads (the callback driver's).
  std::atomic<std::uint64_t> submitted{0}, report_bytes{0};
  std::mutex mu;
  std::string first_error;  // of the first client that failed
};

// How a client drops out: it vanishes (never calls again, its connection
// left open, as a phone that lost its network) in the first round at or
// after `round` in which its users are drawn: before it reports, or right
// after it sent its reports, cancelling the call (in flight).
struct LoadDropOut {
  std::uint64_t round = 0;
  bool in_flight = false;
};

struct LoadClientSpec {
  std::string token;
  std::string ledger;             // its file; empty: in memory
  std::vector<std::size_t> rows;  // one user each
  std::optional<LoadDropOut> drop_out;
};

// Joins every client to the FedSel server at `address` (from a few
// threads), then runs them to the task's end. Returns when every client
// finished or failed, or, after `stop`, once every call in flight was
// cancelled and came back.
void RunCallbackClients(const std::string& address, const Dataset& data,
                        std::span<const LoadClientSpec> clients, LoadClientsProgress& progress,
                        std::stop_token stop);

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_LOAD_CLIENTS_H_
