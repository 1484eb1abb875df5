// Synthetic data following the procedure FedSel cites (Wangni et al.,
// NeurIPS 2018), as read in ../shared/papers/NOTES.md (the text of the
// reference is not available): every feature is uniform on [-1, 1] and then,
// independently with probability C2, multiplied by C1, so most coordinates
// are small and gradients nearly sparse; labels are y = 1[<w*, x> > 0] for a
// ground-truth w* with N(0, 1) entries, each flipped with probability
// label_noise. "syn-L-0.01-0.9" is d = 100, C1 = 0.01, C2 = 0.9; syn-H has
// d = 300.
#ifndef FEDLDP_DATA_SYNTHETIC_H_
#define FEDLDP_DATA_SYNTHETIC_H_

#include <cstdint>
#include <string>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"

namespace fedldp {

struct SyntheticOptions {
  std::size_t rows = 60000;
  std::size_t dimension = 100;
  double c1 = 0.01;
  double c2 = 0.9;
  double label_noise = 0.0;
  std::uint64_t seed = 1;
};

Result<Dataset> MakeSynthetic(const SyntheticOptions& options);
// Parses "syn-L-C1-C2" / "syn-H-C1-C2" (e.g. syn-L-0.01-0.9) into options.
Result<SyntheticOptions> ParseSyntheticName(const std::string& name);

}  // namespace fedldp

#endif  // FEDLDP_DATA_SYNTHETIC_H_
