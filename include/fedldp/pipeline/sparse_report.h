// A client's report in the flat and compressed solutions: a few (index, raw
// mechanism output) pairs. Values are the mechanism's outputs as drawn, not
// scaled, so a server can check each against the mechanism's output set
// exactly; scaling belongs to the aggregator.
#ifndef FEDLDP_PIPELINE_SPARSE_REPORT_H_
#define FEDLDP_PIPELINE_SPARSE_REPORT_H_

#include <cstdint>
#include <vector>

namespace fedldp {

struct SparseReport {
  std::vector<std::uint32_t> index;
  std::vector<double> value;
};

}  // namespace fedldp

#endif  // FEDLDP_PIPELINE_SPARSE_REPORT_H_
