// What every libFuzzer target of fedldp shares: a broken invariant aborts
// (libFuzzer keeps the input), and FEDLDP_FUZZ_WRITE_SEEDS=DIR asks a target
// to write its starting corpus into DIR and exit.
#ifndef FEDLDP_FUZZ_FUZZ_UTIL_H_
#define FEDLDP_FUZZ_FUZZ_UTIL_H_

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace fedldp::fuzz {

inline void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

// For LLVMFuzzerInitialize: if FEDLDP_FUZZ_WRITE_SEEDS names a folder,
// write_seeds(folder), then exit; otherwise return to fuzzing.
inline void WriteSeedsIfAsked(const std::function<void(const std::string&)>& write_seeds) {
  if (const char* dir = std::getenv("FEDLDP_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
}

}  // namespace fedldp::fuzz

#endif  // FEDLDP_FUZZ_FUZZ_UTIL_H_
