#include "fedldp/select/ranking.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>

namespace fedldp {
namespace {

// For non-negative doubles the IEEE bit pattern orders like the value, so the
// selection works on integers.
inline std::uint64_t MagnitudeKey(double x) {
  const double m = std::fabs(x);
  return m == m ? std::bit_cast<std::uint64_t>(m) : 0;
}

struct Threshold {
  std::uint64_t key;           // magnitude key of the element at `position`
  std::size_t strictly_above;  // number of elements with a larger key
};

// Key at `position` and how many keys are strictly larger.
Threshold FindThreshold(std::span<const double> r, std::size_t position) {
  thread_local std::vector<std::uint64_t> keys;
  keys.resize(r.size());
  for (std::size_t j = 0; j < r.size(); ++j) keys[j] = MagnitudeKey(r[j]);
  std::nth_element(keys.begin(), keys.begin() + position, keys.end(), std::greater<>());
  const std::uint64_t v = keys[position];
  std::size_t above = 0;
  for (std::size_t j = 0; j < position; ++j) above += keys[j] > v;
  return {v, above};
}

}  // namespace

std::size_t ElementAtPosition(std::span<const double> r, std::size_t position) {
  const Threshold t = FindThreshold(r, position);
  // Among the elements tied at the threshold, lower indices rank first.
  std::size_t tie = position - t.strictly_above;
  for (std::size_t j = 0; j < r.size(); ++j) {
    if (MagnitudeKey(r[j]) == t.key && tie-- == 0) return j;
  }
  return r.size();  // unreachable for position < r.size()
}

std::vector<std::size_t> Ranking(std::span<const double> r) {
  std::vector<std::size_t> order(r.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return MagnitudeKey(r[a]) > MagnitudeKey(r[b]);
  });
  return order;
}

std::vector<unsigned char> TopKMask(std::span<const double> r, std::size_t k) {
  std::vector<unsigned char> mask(r.size(), 0);
  if (k == 0) return mask;
  if (k >= r.size()) {
    std::fill(mask.begin(), mask.end(), 1);
    return mask;
  }
  const Threshold t = FindThreshold(r, k - 1);
  std::size_t ties = k - t.strictly_above;  // tied elements that still fit
  for (std::size_t j = 0; j < r.size(); ++j) {
    const std::uint64_t key = MagnitudeKey(r[j]);
    if (key > t.key) {
      mask[j] = 1;
    } else if (key == t.key && ties > 0) {
      mask[j] = 1;
      --ties;
    }
  }
  return mask;
}

}  // namespace fedldp
