// Synthetic data following the procedure FedSel cites (Wangni et al.,
// NeurIPS 2018), as read in ../shared/papers/NOTES.md (the text of the
// reference is not available): every value is uniform on [-1, 1] and then
// multiplied by C1 with probability C2, so most coordinates are small and
// gradients nearly sparse; labels are y = 1[<w*, x> > 0] for a ground-truth w*
// with N(0, 1) entries, each flipped with probability label_noise.
//
// "Every feature, independently with probability C2" can be read two ways,
// and both are offered:
//   kPerFeature (default): each feature (column) is shrunk by C1 with
//     probability C2, once for the whole dataset, so the same ~(1 - C2) d
//     features are large in every record and gradients share one sparse
//     support. This reading reproduces FedSel's Table 3 on syn-L (docs/fedsel.md).
//   kPerEntry: each value of each record is shrunk independently, so every
//     record has its own random set of large coordinates.
// "syn-L-0.01-0.9" is d = 100, C1 = 0.01, C2 = 0.9, per feature; syn-H has
// d = 300; the suffix "-entry" (syn-L-0.01-0.9-entry) selects kPerEntry. A
// last suffix "-nROWS" sets the rows (default 60,000): syn-L-0.01-0.9-n2000000
// is two million (the first 60,000 are those of syn-L-0.01-0.9).
#ifndef FEDLDP_DATA_SYNTHETIC_H_
#define FEDLDP_DATA_SYNTHETIC_H_

#include <cstdint>
#include <string>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"

namespace fedldp {

enum class SyntheticSparsity { kPerFeature, kPerEntry };

struct SyntheticOptions {
  std::size_t rows = 60000;
  std::size_t dimension = 100;
  double c1 = 0.01;
  double c2 = 0.9;
  SyntheticSparsity sparsity = SyntheticSparsity::kPerFeature;
  double label_noise = 0.0;
  std::uint64_t seed = 1;
};

Result<Dataset> MakeSynthetic(const SyntheticOptions& options);
// Parses "syn-{L,H}-C1-C2[-entry|-feature]" (e.g. syn-L-0.01-0.9) into options.
Result<SyntheticOptions> ParseSyntheticName(const std::string& name);

}  // namespace fedldp

#endif  // FEDLDP_DATA_SYNTHETIC_H_
