// Sizes, sums and products that come from outside (a Python call, a file,
// a message, a command line) are checked for overflow where they enter,
// before anything indexes or allocates by them: a sum of layer sizes that
// wraps around would pass a length check and read past a buffer.
#ifndef FEDLDP_BASE_CHECKED_H_
#define FEDLDP_BASE_CHECKED_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fedldp/base/status.h"

namespace fedldp {

// The largest magnitude a report's value may have: past it, the sum of
// 2^40 reports or the sum of their squares (a mean, a variance) overflows a
// double, and a model printed as inf. A mechanism whose parameters imply
// larger outputs (eps near 0, a huge range or clip) is refused when made.
inline constexpr double kLargestReport = 0x1p450;

// a + b and a * b, or nullopt when the result does not fit a size_t.
constexpr std::optional<std::size_t> CheckedAdd(std::size_t a, std::size_t b) {
  std::size_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}
constexpr std::optional<std::size_t> CheckedMul(std::size_t a, std::size_t b) {
  std::size_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// The sum of sizes that must each be at least 1 (layers, blocks): an error
// naming `what` and the culprit if one is 0 or the sum overflows.
inline Result<std::size_t> SumOfSizes(std::span<const std::size_t> sizes, std::string_view what) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return Error{std::string(what) + " " + std::to_string(i) + " is empty"};
    const auto next = CheckedAdd(total, sizes[i]);
    if (!next) {
      return Error{"the sizes of the " + std::string(what) + "s overflow at " + std::string(what) +
                   " " + std::to_string(i) + " (" + std::to_string(sizes[i]) + ")"};
    }
    total = *next;
  }
  return total;
}

}  // namespace fedldp

#endif  // FEDLDP_BASE_CHECKED_H_
