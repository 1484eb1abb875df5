// LDP-FL's adaptive ranges and its reports per client, apart from the
// Torch-bound training (ldpfl.cc): the deployment's coordinator needs them,
// and the service fuzzer builds that coordinator without Torch.
#include <algorithm>
#include <cmath>

#include "fedldp/base/checked.h"
#include "fedldp/fl/ldpfl.h"

namespace fedldp {

Result<std::vector<LayerRange>> LayerRangesOf(std::span<const float> w,
                                              const std::vector<std::size_t>& sizes,
                                              double margin) {
  if (!std::isfinite(margin) || margin <= 0) {
    return Error{"the range margin must be a finite number > 0"};
  }
  auto total = SumOfSizes(sizes, "layer");
  if (!total.ok()) return Error{total.error()};
  if (*total != w.size()) {
    return Error{"the layers hold " + std::to_string(*total) + " weights, the model " +
                 std::to_string(w.size())};
  }
  const auto bad = std::find_if(w.begin(), w.end(), [](float x) { return !std::isfinite(x); });
  if (bad != w.end()) {
    return Error{"weight " + std::to_string(bad - w.begin()) + " is not finite (" +
                 std::to_string(*bad) + "): the model diverged"};
  }
  std::vector<LayerRange> ranges;
  std::size_t offset = 0;
  for (const std::size_t n : sizes) {
    const auto [lo, hi] = std::minmax_element(w.begin() + offset, w.begin() + offset + n);
    const double c = 0.5 * (static_cast<double>(*lo) + *hi);
    const double r = std::max(1e-6, 0.5 * (static_cast<double>(*hi) - *lo) * margin);
    ranges.push_back({c, r});
    offset += n;
  }
  return ranges;
}

std::size_t LdpFlClientsPerRound(const LdpFlConfig& config) {
  return std::max<std::size_t>(
      1, static_cast<std::size_t>(std::llround(config.fraction * config.clients)));
}

std::size_t LdpFlRoundsPerEpoch(const LdpFlConfig& config) {
  return std::max<std::size_t>(1, config.clients / LdpFlClientsPerRound(config));
}

std::size_t LdpFlReportsPerClient(const LdpFlConfig& config) {
  const auto rounds = static_cast<std::size_t>(std::max(config.rounds, 1));
  if (!config.disjoint_rounds || config.clients == 0) return rounds;
  const std::size_t rounds_per_epoch = LdpFlRoundsPerEpoch(config);
  return (rounds + rounds_per_epoch - 1) / rounds_per_epoch;
}

}  // namespace fedldp
