// The ranking every selector works on: dimensions ordered by |r_j|, largest
// first; NaN counts as magnitude 0, +-inf as the largest. Position 0 is the
// largest |r_j|; the Top-k set is positions 0..k-1.
//
// Ties. The deterministic ranking (Ranking, ElementAtPosition, TopKMask)
// puts the lower index first. Selectors instead break ties uniformly at
// random (RandomElementAtPosition): the element at a position is a uniform
// member of the group of equal magnitudes that covers that position. With
// one-hot features every active coordinate of a gradient ties, and a fixed
// order would make every client pick the same attribute. Randomising the
// order within ties does not depend on the data, so the privacy analysis is
// unchanged (see selector.h).
#ifndef FEDLDP_SELECT_RANKING_H_
#define FEDLDP_SELECT_RANKING_H_

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "fedldp/random/rng.h"

namespace fedldp {

// The index at `position` of the ranking, in O(d) expected time (one
// nth_element on a copy of the magnitudes plus two scans; no full sort).
// Requires position < r.size().
std::size_t ElementAtPosition(std::span<const double> r, std::size_t position);

// The index at `position` with ties broken uniformly at random: a uniform
// member of the tie group covering `position`. O(d) expected.
std::size_t RandomElementAtPosition(std::span<const double> r, std::size_t position, Rng& rng);

// For each position, the [first, last) positions of its tie group in the
// ranking `ranking` of r. O(d).
std::vector<std::pair<std::size_t, std::size_t>> TieGroups(std::span<const double> r,
                                                           std::span<const std::size_t> ranking);

// The whole ranking: ranking[position] = index. O(d log d); for exact
// probabilities, tests and audits, not for hot paths.
std::vector<std::size_t> Ranking(std::span<const double> r);

// mask[j] = 1 iff j is in the Top-k set, in O(d) expected time.
std::vector<unsigned char> TopKMask(std::span<const double> r, std::size_t k);

}  // namespace fedldp

#endif  // FEDLDP_SELECT_RANKING_H_
