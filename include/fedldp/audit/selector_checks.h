// The statistical checks of stat_checks.h applied to selectors.
#ifndef FEDLDP_AUDIT_SELECTOR_CHECKS_H_
#define FEDLDP_AUDIT_SELECTOR_CHECKS_H_

#include <vector>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/select/selector.h"

namespace fedldp::audit {

// Vectors of dimension d in which chosen indices sit at the top, at the
// bottom, just inside and just outside the Top-k of the ranking by |r|, plus
// vectors with ties (all equal; a few equal non-zeros among zeros).
std::vector<std::vector<double>> AdversarialVectors(std::size_t d, std::size_t k);

// Exact law of Select(r): P[j] for j < d, then P[none].
std::vector<double> SelectionLaw(const Selector& s, std::span<const double> r);
// Counts of `draws` calls of Select(r): indices, then none.
std::vector<std::uint64_t> SelectionCounts(const Selector& s, std::span<const double> r,
                                           std::size_t draws, std::uint64_t seed);
// Worst ratio of SelectionLaw over AdversarialVectors, against e^s.epsilon().
double WorstSelectionRatio(const Selector& s);
Verdict CheckSelectionPrivacy(const Selector& s, double claimed_epsilon);

}  // namespace fedldp::audit

#endif  // FEDLDP_AUDIT_SELECTOR_CHECKS_H_
