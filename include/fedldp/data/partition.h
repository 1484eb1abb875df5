// Partitions of rows into clients: IID shards or a Dirichlet label skew, as
// federated-learning benchmarks split a dataset (Hsu, Qi & Brown 2019).
#ifndef FEDLDP_DATA_PARTITION_H_
#define FEDLDP_DATA_PARTITION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"

namespace fedldp {

// Splits `rows` of `data` (all rows if empty) among `clients` clients, from
// the generator stream (seed, 0x5b11):
//  - alpha = 0: IID. The rows are shuffled and cut into equal shards of
//    floor(rows / clients); the remainder is left out.
//  - alpha > 0: for each class, shares p ~ Dirichlet(alpha, ..., alpha) over
//    the clients, and the class's shuffled rows cut at the cumulative
//    shares. Small alpha gives each client few classes; a client may get no
//    rows.
// 1 <= clients <= rows; alpha finite and >= 0.
Result<std::vector<std::vector<std::size_t>>> PartitionRows(const Dataset& data,
                                                            std::span<const std::size_t> rows,
                                                            std::size_t clients, double alpha,
                                                            std::uint64_t seed);

}  // namespace fedldp

#endif  // FEDLDP_DATA_PARTITION_H_
