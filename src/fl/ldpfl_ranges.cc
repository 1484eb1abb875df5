// LDP-FL's adaptive ranges, apart from the Torch-bound training (ldpfl.cc):
// the deployment's coordinator needs them, and the service fuzzer builds
// that coordinator without Torch.
#include <algorithm>

#include "fedldp/fl/ldpfl.h"

namespace fedldp {

std::vector<LayerRange> LayerRangesOf(std::span<const float> w,
                                      const std::vector<std::size_t>& sizes, double margin) {
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

}  // namespace fedldp
