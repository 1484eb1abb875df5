// Keeps a gRPC server's listener answering through a flood of connections.
//
// gRPC 1.51 stops accepting on a listening socket for good the first time
// accept() fails for want of a descriptor (EMFILE): a few hundred idle TCP
// connections under a 1,024-descriptor limit left the server and the
// shuffler deaf until restarted, although the flood had ended and the
// descriptors were free. Nor has it a cap on connections. So a server
// raises its descriptor limit as far as it may, sheds its longest-idle
// connections beyond a cap, and rebuilds its listener when connections
// wait unaccepted (StartServer, on its timer thread).
#ifndef FEDLDP_SRC_NET_LISTEN_WATCH_H_
#define FEDLDP_SRC_NET_LISTEN_WATCH_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace fedldp::net_internal {

// Raises this process's soft limit on open descriptors to its hard limit;
// returns the soft limit now in force.
std::uint64_t RaiseDescriptorLimit();

// The connections one service keeps at most: what `limit` descriptors
// leave after a reserve for the process's own files, threads and outgoing
// channels (64 and an eighth), and at least 16.
std::size_t ConnectionCap(std::uint64_t limit);

// Watches the listening sockets of one port of this process.
class ListenWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // How long connections must wait, unaccepted at every look, before the
  // listener counts as stalled. gRPC accepts in a loop until none waits,
  // within milliseconds even under a thousand connecting clients.
  static constexpr std::chrono::seconds kStall{2};

  // Finds the port's listening sockets among this process's descriptors
  // (construct one before a flood: the first also opens their listing).
  explicit ListenWatch(int port);

  // Whether connections have waited unaccepted at every look since
  // kStall ago (look often: every few milliseconds).
  bool Stalled(Clock::time_point now);

  // Shuts down the longest-idle connections accepted on the port beyond
  // `cap` (idle: nothing received for a second or more); gRPC then closes
  // them as closed by their peer. Returns how many it shut down.
  std::size_t Shed(std::size_t cap) const;

  int port() const { return port_; }
  std::size_t listening() const { return listening_.size(); }

 private:
  int port_;
  std::vector<int> listening_;
  std::optional<Clock::time_point> waiting_since_;
};

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_LISTEN_WATCH_H_
