// The shuffler's vouches, asked of the server many at a time. Every report
// a shuffler takes needs the server's word that its client may report for
// its user in the round (Vouch); asked one call a report, that call was the
// server's whole cost of a shuffled report, so shufflers in front of a
// server saved it nothing. Callers (the shuffler's call handlers, one
// thread each) queue their asks; one thread sends whatever is queued in one
// VouchMany call, and while that call is out the next asks gather (no
// timer: a lone ask goes at once, as a lone Vouch did; a 1 ms gather had
// doubled the training time of 4 clients reporting one at a time). A
// server without VouchMany (UNIMPLEMENTED, an older fedldp) is asked one
// Vouch at a time, as before.
#ifndef FEDLDP_SRC_NET_VOUCH_BATCHER_H_
#define FEDLDP_SRC_NET_VOUCH_BATCHER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fedldp/base/status.h"
#include "fedldp/v1/service.grpc.pb.h"
#include "handlers.h"  // kMaxVouchAsks: the most asks one call carries

namespace fedldp::net_internal {

class VouchBatcher {
 public:
  VouchBatcher(v1::Coordinator::Stub& server, std::string shuffler_token);
  ~VouchBatcher();  // answers what waits with an error, then stops
  VouchBatcher(const VouchBatcher&) = delete;
  VouchBatcher& operator=(const VouchBatcher&) = delete;

  // OK if the server vouches that `token`'s client, in `session`, may report
  // for `user` in `round`; else why not (or that the server cannot be asked).
  Status Ask(const std::string& token, const std::string& session, std::uint64_t user,
             std::uint64_t round);

  // Calls made to the server, and asks answered: their ratio is the batch.
  std::uint64_t calls() const;
  std::uint64_t asks() const;

 private:
  struct Pending {
    v1::VouchRequest ask;
    std::optional<Status> answer;
  };
  void Run(std::stop_token stop);
  void Answer(std::deque<std::shared_ptr<Pending>>& batch);
  Status AskOne(const v1::VouchRequest& ask);

  v1::Coordinator::Stub& server_;
  const std::string token_;
  mutable std::mutex mu_;
  std::condition_variable_any queued_;
  std::condition_variable answered_;
  std::deque<std::shared_ptr<Pending>> queue_;
  bool many_unsupported_ = false;  // the server answered VouchMany UNIMPLEMENTED
  std::uint64_t calls_ = 0, asks_ = 0;
  std::jthread thread_;  // last: stopped before the rest goes
};

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_VOUCH_BATCHER_H_
