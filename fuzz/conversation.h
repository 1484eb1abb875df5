// What the service fuzzers (service_fuzz.cc, ldpfl_service_fuzz.cc) share: an
// invariant check that aborts, and their start (quiet protobuf, and seeds).
#ifndef FEDLDP_FUZZ_CONVERSATION_H_
#define FEDLDP_FUZZ_CONVERSATION_H_

#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/store/server_state.h"
#include "fuzz_util.h"

namespace fedldp::fuzz {

// For LLVMFuzzerInitialize. Protobuf logs every string field that is not
// UTF-8, and the fuzzer sends many: silenced. FEDLDP_FUZZ_WRITE_SEEDS=DIR
// writes 8 random conversations of a few hundred bytes (from `seed`) into
// DIR and exits: the provider turns any bytes into calls, so these only give
// the fuzzer longer inputs to start from.
inline void StartConversationFuzzer(std::uint64_t seed, std::size_t step) {
  google::protobuf::SetLogHandler(nullptr);
  WriteSeedsIfAsked([&](const std::string& dir) {
    CounterRng rng(seed, 1);
    for (std::size_t i = 0; i < 8; ++i) {
      std::string bytes(256 + step * i, '\0');
      for (auto& b : bytes) b = static_cast<char>(rng() & 0xff);
      std::ofstream(dir + "/conversation-" + std::to_string(i), std::ios::binary) << bytes;
    }
  });
}

// A conversation's server: an in-memory state with `clients` enrolled
// tokens, and round deadlines short enough for the fuzzer's clock to pass.
struct Server {
  ServerState state;
  std::vector<std::string> tokens;
  RoundPolicy policy;
};
inline Server StartServer(std::size_t clients) {
  auto opened = ServerState::OpenTemporary();
  Require(opened.ok(), "an in-memory state opens");
  Server s{std::move(opened).value(), {}, {}};
  s.tokens = s.state.IssueTokens(clients).value();
  s.policy.deadline = std::chrono::milliseconds(5000);
  s.policy.stale_after = std::chrono::milliseconds(1000);
  return s;
}

}  // namespace fedldp::fuzz

#endif  // FEDLDP_FUZZ_CONVERSATION_H_
