// The processes one simulation runs on: MPI ranks under mpirun (mpi/), one
// process otherwise. The training loops give each process the clients of
// one block of client numbers; a round's reports are gathered so that every
// process aggregates all of them in the same order and holds the same model.
// A run's result for a seed is therefore the same on any number of
// processes, bit for bit.
//
// Every process must make the same calls in the same order (the loops are
// deterministic given the seed); a collective that one process skips waits
// for ever, so stop decisions go through Any().
#ifndef FEDLDP_FL_CLUSTER_H_
#define FEDLDP_FL_CLUSTER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fedldp {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The processes on this machine, this one included: they share its cores.
  virtual int local_size() const { return 1; }
  // Collective: every process's `mine`, in rank order, on every process.
  virtual std::vector<std::string> AllGather(std::string_view mine) = 0;
  // Collective: whether any process passed true.
  virtual bool Any(bool mine) = 0;

  // The clients [first, second) of n that `rank` owns: equal blocks, in
  // rank order.
  static std::pair<std::size_t, std::size_t> Block(std::size_t n, int rank, int size) {
    const auto r = static_cast<std::size_t>(rank), p = static_cast<std::size_t>(size);
    return {n * r / p, n * (r + 1) / p};
  }
  // The rank whose block holds client c of n.
  static int Owner(std::size_t c, std::size_t n, int size) {
    return static_cast<int>(((c + 1) * static_cast<std::size_t>(size) - 1) / n);
  }
};

// The cluster of this process alone.
Cluster& OneProcess();

}  // namespace fedldp

#endif  // FEDLDP_FL_CLUSTER_H_
