// Replacing a lost token while the server runs. A running server holds its
// state file exclusively (server_state.h), so `fedldp enrol --replace-user U`
// cannot change it; instead it leaves a request in the folder beside the
// state (S.requests, mode 0700, the operator's own), and the server, which
// looks there a few times a second, replaces the token itself, ends the old
// token's live session at once, and answers in the same folder.
//
// Only the new token's hash travels (ServerState::DrawToken): no file here
// ever holds a token. Each request is taken by exactly one side, by an
// atomic rename: the server's taking it, or enrol's withdrawing it when no
// server answered in time; so a withdrawn request is never carried out
// later, and a taken one is always answered (or the server stopped, and
// running the command again replaces the token once more).
#ifndef FEDLDP_STORE_TOKEN_REQUESTS_H_
#define FEDLDP_STORE_TOKEN_REQUESTS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "fedldp/base/status.h"
#include "fedldp/store/server_state.h"

namespace fedldp {

// The folder of requests for the state at `state`.
std::string TokenRequestsDir(const std::string& state);

// enrol's side: asks the server running on `state` to give the client
// hosting `user` the token whose hash is `hash_hex`; the client, or why not
// (kUnavailable: no server took the request within `wait`, and it was
// withdrawn).
Result<ServerState::Client> AskRunningServer(const std::string& state, std::uint64_t user,
                                             std::string_view hash_hex,
                                             std::chrono::milliseconds wait);

// The server's side: carries out every request waiting for `state` with
// `replace` and answers it; `log` says what was done (and, once, why a
// folder that others may write is ignored).
using ReplaceTokenFn =
    std::function<Result<ServerState::Client>(std::uint64_t user, std::string_view hash_hex)>;
void AnswerTokenRequests(const std::string& state, const ReplaceTokenFn& replace,
                         const std::function<void(const std::string&)>& log);

}  // namespace fedldp

#endif  // FEDLDP_STORE_TOKEN_REQUESTS_H_
