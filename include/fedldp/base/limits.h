// The bounds of counts that every front end takes (the command line's
// options, Python's arguments), in one table, with one check and one
// sentence: before, Python's train_fedsel(threads=10**6) tried to start a
// million threads and classes=10**9 died of bad_alloc, where the CLI
// refused.
#ifndef FEDLDP_BASE_LIMITS_H_
#define FEDLDP_BASE_LIMITS_H_

#include <concepts>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "fedldp/base/status.h"

namespace fedldp {

struct CountLimit {
  std::string_view name;
  std::int64_t min, max;
  std::string_view note;  // what a special value means, if any
};

// Threads of a simulation, tuning or reproduction (0: one per core).
inline constexpr CountLimit kWorkerThreads{"threads", 0, 1024, "0: one per core"};
// Threads of a server's calls or a client's local training.
inline constexpr CountLimit kServiceThreads{"threads", 1, 256, ""};
// Classes of a user's data (0: from the labels).
inline constexpr CountLimit kClasses{"classes", 0, 65536, "0: from the labels"};

// The work a run is given: past these it runs for days or weeks (before,
// train --epochs 1000000000 and Python's epochs=10**9 were accepted and ran
// without end). FedSel's epochs E; LDP-FL's communication rounds, local
// epochs and mini-batch size; cross-validation and reproduction repeats.
inline constexpr CountLimit kEpochs{"epochs", 1, 10'000, ""};
inline constexpr CountLimit kRounds{"rounds", 1, 100'000, ""};
inline constexpr CountLimit kLocalEpochs{"local epochs", 1, 1'000, ""};
inline constexpr CountLimit kBatch{"batch size", 1, 100'000, ""};
inline constexpr CountLimit kRepeats{"repeats", 1, 1'000, ""};

// OK if `value` is within `limit`, else "threads must be a whole number
// from 0 to 1024 (0: one per core), got 1000000".
template <std::integral T>
Status CheckCount(const CountLimit& limit, T value) {
  if (std::cmp_greater_equal(value, limit.min) && std::cmp_less_equal(value, limit.max)) return {};
  return Error{std::string(limit.name) + " must be a whole number from " +
               std::to_string(limit.min) + " to " + std::to_string(limit.max) +
               (limit.note.empty() ? "" : " (" + std::string(limit.note) + ")") + ", got " +
               std::to_string(value)};
}

// A learning rate is finite and in (0, kLargestLearningRate]: with reports
// within kLargestReport (checked.h) and the work within kEpochs or kRounds,
// a model's weights stay finite (before, FedSel's lr = 1e308 overflowed the
// weights without a word, and LDP-FL took lr = inf).
inline constexpr double kLargestLearningRate = 1e6;
inline Status CheckLearningRate(double lr, std::string_view name = "learning rate") {
  if (lr > 0 && lr <= kLargestLearningRate) return {};
  std::ostringstream e;
  e << name << " must be a finite number in (0, " << kLargestLearningRate << "], got " << lr;
  return Error{e.str()};
}

// A seed's range, as the command line and Python say it.
inline constexpr std::string_view kSeedRange = "a whole number from 0 to 18446744073709551615";

}  // namespace fedldp

#endif  // FEDLDP_BASE_LIMITS_H_
