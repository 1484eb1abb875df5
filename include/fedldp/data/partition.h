// Partitions of rows into clients, as federated-learning benchmarks split a
// dataset: IID shards, a Dirichlet label skew (Hsu, Qi & Brown 2019), or
// label shards (McMahan et al., AISTATS 2017). The simulators (FedSel's
// clients, LDP-FL's) and the Python module (fedldp.partition) draw them here.
#ifndef FEDLDP_DATA_PARTITION_H_
#define FEDLDP_DATA_PARTITION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"

namespace fedldp {

// How rows are split (at most one of the two non-IID schemes):
//  - IID (both 0): the rows are shuffled and cut into equal shards of
//    floor(rows / clients); the remainder is left out.
//  - dirichlet_alpha > 0: for each class, shares p ~ Dirichlet(alpha, ...,
//    alpha) over the clients, and the class's shuffled rows cut at the
//    cumulative shares. Small alpha gives each client few classes; a client
//    may get no rows.
//  - label_shards k > 0: the rows, shuffled, are sorted by label (stably)
//    and cut into clients x k equal shards (the remainder left out); each
//    client gets k of them drawn without replacement, so at most k labels
//    (plus a shard straddling two classes).
struct Partition {
  double dirichlet_alpha = 0;
  std::size_t label_shards = 0;

  bool iid() const { return dirichlet_alpha == 0 && label_shards == 0; }
  // "equal IID shards", "Dirichlet(0.5) label skew", "2 label shards each".
  std::string Describe() const;
  // alpha finite and >= 0, k <= 1000, not both.
  Status Validate() const;
};

// Splits `rows` of `data` (all rows if empty) among `clients` clients, from
// the generator stream (seed, 0x5b11). 1 <= clients <= rows (with label
// shards, clients x k <= rows).
Result<std::vector<std::vector<std::size_t>>> PartitionRows(const Dataset& data,
                                                            std::span<const std::size_t> rows,
                                                            std::size_t clients,
                                                            const Partition& how,
                                                            std::uint64_t seed);

// Rows held out of a training set to choose hyper-parameters on, never the
// test set: `validation` is a uniformly random n-subset of `data` (drawn from
// the generator stream (seed, 0x7a1d)), `fit` the other rows, each part in
// `data`'s order. 0 < n < data.size().
struct HeldOut {
  Dataset fit, validation;
};
Result<HeldOut> HoldOut(const Dataset& data, std::size_t n, std::uint64_t seed);

}  // namespace fedldp

#endif  // FEDLDP_DATA_PARTITION_H_
