// The child processes a test has started and not yet waited for, so that
// the test's end can stop them before it removes the folder they write in:
// a test that fails half-way (an ASSERT that returns) leaves none running.
#ifndef FEDLDP_TESTS_TESTING_CHILDREN_H_
#define FEDLDP_TESTS_TESTING_CHILDREN_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <set>

namespace fedldp::testing::children {

struct Registry {
  std::mutex mutex;
  std::set<pid_t> live;
};
inline Registry& Get() {
  static Registry registry;
  return registry;
}

inline void Started(pid_t pid) {
  if (pid <= 0) return;
  std::lock_guard lock(Get().mutex);
  Get().live.insert(pid);
}

// Waits for `pid` and forgets it: waitpid's status.
inline int Reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::lock_guard lock(Get().mutex);
  Get().live.erase(pid);
  return status;
}

// Kills and reaps every child not yet waited for.
inline void StopAll() {
  std::set<pid_t> live;
  {
    std::lock_guard lock(Get().mutex);
    live.swap(Get().live);
  }
  for (const pid_t pid : live) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

}  // namespace fedldp::testing::children

#endif  // FEDLDP_TESTS_TESTING_CHILDREN_H_
