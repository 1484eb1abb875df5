#include "listen_watch.h"

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <utility>

namespace fedldp::net_internal {

namespace {

// The descriptors of this process now open (a snapshot: one may close
// while it is looked at, and its number be reused). The listing is opened
// once and read again each time: under a flood no descriptor may be free
// to open it, just when it is needed.
std::vector<int> Descriptors() {
  static std::mutex mu;
  static DIR* dir = nullptr;
  std::vector<int> fds;
  std::lock_guard lock(mu);
  if (dir == nullptr) dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  ::rewinddir(dir);
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && fd != own) fds.push_back(static_cast<int>(fd));
  }
  return fds;
}

// The local TCP port of socket `fd`, if it is one, and whether it listens.
struct SocketOf {
  int port = -1;
  bool listening = false;
};
SocketOf Socket(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return {};
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return {};
  SocketOf s;
  if (address.ss_family == AF_INET) {
    s.port = ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  } else if (address.ss_family == AF_INET6) {
    s.port = ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  } else {
    return {};
  }
  int listening = 0;
  socklen_t length = sizeof listening;
  s.listening =
      ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0 && listening != 0;
  return s;
}

// Milliseconds since `fd` last received data (the kernel's count).
std::uint32_t IdleMs(int fd) {
  tcp_info info{};
  socklen_t size = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0) return 0;
  return info.tcpi_last_data_recv;
}

}  // namespace

std::uint64_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : limit.rlim_cur;
}

std::size_t ConnectionCap(std::uint64_t limit) {
  constexpr std::uint64_t kFloor = 16;
  const std::uint64_t reserve = 64 + limit / 8;
  if (limit <= reserve + kFloor) return kFloor;
  return static_cast<std::size_t>(std::min<std::uint64_t>(limit - reserve, SIZE_MAX));
}

ListenWatch::ListenWatch(int port) : port_(port) {
  for (const int fd : Descriptors()) {
    const SocketOf s = Socket(fd);
    if (s.listening && s.port == port_) listening_.push_back(fd);
  }
}

bool ListenWatch::Stalled(Clock::time_point now) {
  bool waiting = false;
  for (const int fd : listening_) {
    pollfd p{fd, POLLIN, 0};
    waiting = waiting || (::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0);
  }
  if (!waiting) {
    waiting_since_.reset();
    return false;
  }
  if (!waiting_since_) waiting_since_ = now;
  return now - *waiting_since_ >= kStall;
}

std::size_t ListenWatch::Shed(std::size_t cap) const {
  const std::vector<int> fds = Descriptors();
  if (fds.size() <= cap) return 0;                      // the usual case, without a look at each
  std::vector<std::pair<std::uint32_t, int>> accepted;  // idle ms, descriptor
  for (const int fd : fds) {
    const SocketOf s = Socket(fd);
    if (s.port == port_ && !s.listening) accepted.emplace_back(IdleMs(fd), fd);
  }
  if (accepted.size() <= cap) return 0;
  std::sort(accepted.begin(), accepted.end(), std::greater<>());
  std::size_t shed = 0;
  for (std::size_t i = 0; i < accepted.size() - cap; ++i) {
    const auto [idle_ms, fd] = accepted[i];
    if (idle_ms < 1000) break;
    // Looked at again: the descriptor may have been closed and reused.
    const SocketOf s = Socket(fd);
    if (s.port != port_ || s.listening) continue;
    if (::shutdown(fd, SHUT_RDWR) == 0) ++shed;
  }
  return shed;
}

}  // namespace fedldp::net_internal
