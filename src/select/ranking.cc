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

// Key at `position` and how many keys are strictly larger, by nth_element on
// a copy of the keys: best while everything fits in cache.
Threshold ThresholdBySelection(std::span<const double> r, std::size_t position) {
  thread_local std::vector<std::uint64_t> keys;
  keys.resize(r.size());
  for (std::size_t j = 0; j < r.size(); ++j) keys[j] = MagnitudeKey(r[j]);
  std::nth_element(keys.begin(), keys.begin() + position, keys.end(), std::greater<>());
  const std::uint64_t v = keys[position];
  std::size_t above = 0;
  for (std::size_t j = 0; j < position; ++j) above += keys[j] > v;
  return {v, above};
}

// The same by radix: a histogram of the top 16 bits of the keys (the sign bit
// is always 0, so bits 47..62: the exponent and 5 mantissa bits) finds the
// bucket holding `position`; only that bucket's keys are copied and selected.
// Two streaming passes over r instead of nth_element's passes over a copy.
Threshold ThresholdByRadix(std::span<const double> r, std::size_t position) {
  constexpr int kShift = 47;
  constexpr std::size_t kBuckets = std::size_t{1} << 16;
  thread_local std::vector<std::uint32_t> histogram;
  thread_local std::vector<std::uint64_t> bucket_keys;
  histogram.assign(kBuckets, 0);
  for (double x : r) ++histogram[MagnitudeKey(x) >> kShift];
  std::size_t above = 0, bucket = kBuckets - 1;
  while (above + histogram[bucket] <= position) above += histogram[bucket--];
  bucket_keys.clear();
  for (double x : r) {
    const std::uint64_t key = MagnitudeKey(x);
    if ((key >> kShift) == bucket) bucket_keys.push_back(key);
  }
  const std::size_t local = position - above;
  std::nth_element(bucket_keys.begin(), bucket_keys.begin() + local, bucket_keys.end(),
                   std::greater<>());
  const std::uint64_t v = bucket_keys[local];
  for (std::size_t j = 0; j < local; ++j) above += bucket_keys[j] > v;
  return {v, above};
}

// Below this size the histogram's fixed cost outweighs the copy it saves.
constexpr std::size_t kRadixFrom = std::size_t{1} << 15;

Threshold FindThreshold(std::span<const double> r, std::size_t position) {
  return r.size() >= kRadixFrom ? ThresholdByRadix(r, position) : ThresholdBySelection(r, position);
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

std::size_t RandomElementAtPosition(std::span<const double> r, std::size_t position, Rng& rng) {
  const Threshold t = FindThreshold(r, position);
  std::size_t ties = 0;
  for (double x : r) ties += MagnitudeKey(x) == t.key;
  // The group covers positions [above, above + ties); in a uniformly random
  // order of the group, the member at any of its positions is uniform.
  std::size_t pick = ties == 1 ? 0 : UniformIndex(rng, ties);
  for (std::size_t j = 0; j < r.size(); ++j) {
    if (MagnitudeKey(r[j]) == t.key && pick-- == 0) return j;
  }
  return r.size();  // unreachable for position < r.size()
}

std::vector<std::pair<std::size_t, std::size_t>> TieGroups(std::span<const double> r,
                                                           std::span<const std::size_t> ranking) {
  std::vector<std::pair<std::size_t, std::size_t>> groups(ranking.size());
  std::size_t first = 0;
  for (std::size_t m = 1; m <= ranking.size(); ++m) {
    if (m == ranking.size() || MagnitudeKey(r[ranking[m]]) != MagnitudeKey(r[ranking[first]])) {
      for (std::size_t p = first; p < m; ++p) groups[p] = {first, m};
      first = m;
    }
  }
  return groups;
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
