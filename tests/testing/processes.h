// Child processes for the deployment's end-to-end tests: spawn with
// stdout and stderr to files, wait, read files, pick a number from JSON.
#ifndef FEDLDP_TESTS_TESTING_PROCESSES_H_
#define FEDLDP_TESTS_TESTING_PROCESSES_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/children.h"

extern char** environ;

namespace fedldp::testing::processes {

inline pid_t Spawn(const std::vector<std::string>& args, const std::string& out,
                   const std::string& err) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) return -1;
  children::Started(pid);  // stopped when the test ends if not waited for
  return pid;
}

inline int Wait(pid_t pid) {
  const int status = children::Reap(pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string Read(const std::string& path) {
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The number under the last `key` of `json` (one object, or JSON lines) at
// an object's top level; where no line has it there, the last nested one
// (in document order); -1 if there is none. (A record's "privacy" repeats
// keys such as "rounds" and "epsilon": the record's own come first.)
inline double JsonNumber(const std::string& json, const std::string& key) {
  double top = -1, nested = -1;
  bool at_top = false;
  std::function<void(const nlohmann::ordered_json&)> visit = [&](const nlohmann::ordered_json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if (k == key && v.is_number()) nested = v.get<double>();
        visit(v);
      }
    } else if (j.is_array()) {
      for (const auto& v : j) visit(v);
    }
  };
  std::istringstream lines(json);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    if (j.is_object() && j.contains(key) && j[key].is_number()) {
      top = j[key].get<double>();
      at_top = true;
    }
    visit(j);
  }
  return at_top ? top : nested;
}

// A loopback port that is free now (the kernel's pick for port 0), so that
// tests running in parallel never share one. Two in a row differ.
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t size = sizeof(address);
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

}  // namespace fedldp::testing::processes

#endif  // FEDLDP_TESTS_TESTING_PROCESSES_H_
