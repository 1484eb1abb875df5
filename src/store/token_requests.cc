#include "fedldp/store/token_requests.h"

#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "fedldp/base/files.h"

namespace fedldp {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "replace-";
constexpr std::string_view kTaken = ".taken";
constexpr std::string_view kAnswer = ".answer";

// A request's name: replace-<user>-<16 hex digits>.
std::string RequestName(std::uint64_t user) {
  unsigned char nonce[8];
  randombytes_buf(nonce, sizeof nonce);
  char hex[2 * sizeof nonce + 1];
  sodium_bin2hex(hex, sizeof hex, nonce, sizeof nonce);
  return std::string(kPrefix) + std::to_string(user) + "-" + hex;
}

// The user a request's name asks for; nullopt if `name` is not one.
std::optional<std::uint64_t> UserOfRequest(std::string_view name) {
  if (!name.starts_with(kPrefix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  const auto dash = name.find('-');
  if (dash == 0 || dash == std::string_view::npos || name.size() - dash - 1 != 16) {
    return std::nullopt;
  }
  std::uint64_t user = 0;
  for (const char c : name.substr(0, dash)) {
    if (c < '0' || c > '9' || user > (UINT64_MAX - 9) / 10) return std::nullopt;
    user = 10 * user + static_cast<std::uint64_t>(c - '0');
  }
  for (const char c : name.substr(dash + 1)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return user;
}

// The first line of a small file, or nullopt if it cannot be read.
std::optional<std::string> FirstLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// "" if only this user may write the folder `dir`, else why it is ignored.
std::string Unsafe(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return "it cannot be examined";
  if (!S_ISDIR(st.st_mode)) return "it is not a folder";
  if (st.st_uid != ::geteuid()) return "another user owns it";
  if ((st.st_mode & 022) != 0) return "others may write into it (chmod 700 it)";
  return "";
}

// Reads the answer `path` ("ok FIRST USERS" or "refused WHY") and removes it.
Result<ServerState::Client> ReadAnswer(const fs::path& path) {
  const auto line = FirstLine(path);
  std::error_code ignored;
  fs::remove(path, ignored);
  if (!line) return Error{"the server's answer " + path.string() + " cannot be read"};
  std::istringstream words(*line);
  std::string verdict;
  words >> verdict;
  ServerState::Client client;
  if (verdict == "ok" && words >> client.first >> client.users) return client;
  std::string why = line->substr(std::min(line->size(), verdict.size() + 1));
  return Error{verdict == "refused" ? why : "the server's answer is garbled: " + *line,
               ErrorCode::kInvalidArgument};
}

}  // namespace

std::string TokenRequestsDir(const std::string& state) { return state + ".requests"; }

Result<ServerState::Client> AskRunningServer(const std::string& state, std::uint64_t user,
                                             std::string_view hash_hex,
                                             std::chrono::milliseconds wait) {
  const fs::path dir = TokenRequestsDir(state);
  std::error_code error;
  fs::create_directory(dir, error);
  if (error) return Error{"cannot make " + dir.string() + ": " + error.message(), ErrorCode::kIo};
  ::chmod(dir.c_str(), 0700);
  if (std::string why = Unsafe(dir); !why.empty()) {
    return Error{dir.string() + " cannot carry a request: " + why, ErrorCode::kInvalidArgument};
  }
  const fs::path request = dir / RequestName(user);
  const fs::path answer = request.string() + std::string(kAnswer);
  FEDLDP_RETURN_IF_ERROR(WriteFileAtomically(request.string(), std::string(hash_hex) + "\n", 0600));
  const auto answered = [&](std::chrono::milliseconds within) {
    for (const auto until = std::chrono::steady_clock::now() + within;
         std::chrono::steady_clock::now() < until;) {
      if (fs::exists(answer)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return fs::exists(answer);
  };
  if (answered(wait)) return ReadAnswer(answer);
  // Withdrawn unless the server took it meanwhile (then it answers).
  const fs::path withdrawn = request.string() + ".withdrawn";
  if (std::rename(request.c_str(), withdrawn.c_str()) == 0) {
    fs::remove(withdrawn, error);
    return Error{"no server on " + state + " took the request within " +
                     std::to_string(wait.count() / 1000) +
                     " s (the state is held by another process that does not answer: an "
                     "enrolment, or a server of a version without requests); nothing changed",
                 ErrorCode::kFailedPrecondition};
  }
  if (answered(wait)) return ReadAnswer(answer);
  return Error{"the server on " + state +
                   " took the request but did not answer (did it stop?); the token may or may "
                   "not have been replaced: run the command again",
               ErrorCode::kFailedPrecondition};
}

void AnswerTokenRequests(const std::string& state, const ReplaceTokenFn& replace,
                         const std::function<void(const std::string&)>& log) {
  const fs::path dir = TokenRequestsDir(state);
  std::error_code error;
  if (!fs::is_directory(dir, error)) return;
  if (std::string why = Unsafe(dir); !why.empty()) {
    static std::once_flag said;  // once per process: it is looked at often
    std::call_once(said, [&] { log("ignoring the requests in " + dir.string() + ": " + why); });
    return;
  }
  std::vector<std::pair<fs::path, std::uint64_t>> waiting;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const auto user = UserOfRequest(entry.path().filename().string());
    if (user) waiting.emplace_back(entry.path(), *user);
  }
  for (const auto& [request, user] : waiting) {
    const fs::path taken = request.string() + std::string(kTaken);
    if (std::rename(request.c_str(), taken.c_str()) != 0) continue;  // withdrawn meanwhile
    const auto hash = FirstLine(taken);
    const auto replaced = hash ? replace(user, *hash)
                               : Result<ServerState::Client>(Error{"the request cannot be read"});
    const std::string text = replaced.ok() ? "ok " + std::to_string(replaced->first) + " " +
                                                 std::to_string(replaced->users) + "\n"
                                           : "refused " + replaced.error() + "\n";
    const Status written =
        WriteFileAtomically(request.string() + std::string(kAnswer), text, 0600, true);
    fs::remove(taken, error);
    log(replaced.ok() ? "replaced the token of users " + std::to_string(replaced->first) + ".." +
                            std::to_string(replaced->first + replaced->users - 1) +
                            " (fedldp enrol --replace-user); its old token is refused from now"
                      : "refused to replace a token for user " + std::to_string(user) + ": " +
                            replaced.error());
    if (!written.ok()) log("could not answer the request: " + written.error());
  }
}

}  // namespace fedldp
