// The ranking every selector works on: dimensions ordered by |r_j|, largest
// first. Ties are broken by index, lower index first, so the ranking is a
// total order and every selector is a deterministic function of (r, random
// draws). NaN counts as magnitude 0; +-inf as the largest magnitude.
// Position 0 is the largest |r_j|; the Top-k set is positions 0..k-1.
#ifndef FEDLDP_SELECT_RANKING_H_
#define FEDLDP_SELECT_RANKING_H_

#include <cstddef>
#include <span>
#include <vector>

namespace fedldp {

// The index at `position` of the ranking, in O(d) expected time (one
// nth_element on a copy of the magnitudes plus two scans; no full sort).
// Requires position < r.size().
std::size_t ElementAtPosition(std::span<const double> r, std::size_t position);

// The whole ranking: ranking[position] = index. O(d log d); for exact
// probabilities, tests and audits, not for hot paths.
std::vector<std::size_t> Ranking(std::span<const double> r);

// mask[j] = 1 iff j is in the Top-k set, in O(d) expected time.
std::vector<unsigned char> TopKMask(std::span<const double> r, std::size_t k);

}  // namespace fedldp

#endif  // FEDLDP_SELECT_RANKING_H_
