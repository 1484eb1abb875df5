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
// One-step clients trained in one batched pass (0: each alone).
inline constexpr CountLimit kClientBatch{"client batch", 0, 4'096, "0: each client alone"};
inline constexpr CountLimit kRepeats{"repeats", 1, 1'000, ""};
inline constexpr CountLimit kFolds{"folds", 2, 100, ""};

// The size of what a run works on. A vector's dimension: a selector's d, a
// vector randomizer's, a client's features (2^24 doubles is a 128 MB
// report; before, Python's Selector took d = 10^10 where audit --d stopped
// at 10^5). The users of a task, the users one client process hosts, and
// the tokens one enrol issues.
inline constexpr CountLimit kDimension{"dimension", 1, std::int64_t{1} << 24, ""};
inline constexpr CountLimit kUsers{"users", 1, std::int64_t{1} << 40, ""};
inline constexpr CountLimit kHostedUsers{"users", 1, std::int64_t{1} << 20, ""};
inline constexpr CountLimit kTokens{"tokens", 1, 1'000'000, ""};
// The rounds a client reports in, as the accountant takes them: FedSel's
// E x rounds per epoch reaches past kRounds.
inline constexpr CountLimit kReportRounds{"rounds", 1, 1'000'000, ""};
// A partition of rows among clients (data/partition.h): the clients (at
// most the rows, checked there) and the label shards each client gets.
inline constexpr CountLimit kClientCount{"clients", 1, std::int64_t{1} << 32, ""};
inline constexpr CountLimit kLabelShards{"label shards", 0, 1'000, "0: off"};

// Sample counts: draws of a sampler (sample --count) or words of a
// generator (Python's Rng.integers); an audit's draws per statistical check
// (fewer than 1,000 cannot tell a wrong law) and its timing draws.
inline constexpr CountLimit kDraws{"draws", 1, 1'000'000'000, ""};
inline constexpr CountLimit kAuditDraws{"draws", 1'000, 100'000'000, ""};
inline constexpr CountLimit kTimingCalls{"timing calls", 0, 100'000'000, "0 skips the check"};

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
