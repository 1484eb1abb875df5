// MPI_COMM_WORLD as a Cluster.
#include <mpi.h>

#include <climits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "fedldp/mpi/mpi.h"

namespace fedldp {
namespace {

class MpiCluster final : public Cluster {
 public:
  MpiCluster() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
  }
  ~MpiCluster() override { MPI_Finalize(); }
  MpiCluster(const MpiCluster&) = delete;
  MpiCluster& operator=(const MpiCluster&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }

  std::vector<std::string> AllGather(std::string_view mine) override {
    // MPI counts bytes in int: a larger exchange is refused on every
    // process alike (each sees every size), never cut.
    const long long size = static_cast<long long>(mine.size());
    std::vector<long long> sizes(static_cast<std::size_t>(size_));
    MPI_Allgather(&size, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD);
    const long long total = std::accumulate(sizes.begin(), sizes.end(), 0LL);
    if (total > INT_MAX) {
      throw std::runtime_error("one exchange between MPI processes would carry " +
                               std::to_string(total) + " bytes, more than MPI's 2 GiB");
    }
    std::vector<int> counts(sizes.begin(), sizes.end()), offsets(counts.size(), 0);
    for (std::size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), static_cast<int>(size), MPI_BYTE, all.data(), counts.data(),
                   offsets.data(), MPI_BYTE, MPI_COMM_WORLD);
    std::vector<std::string> out;
    out.reserve(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) {
      out.push_back(
          all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(counts[r])));
    }
    return out;
  }

  bool Any(bool mine) override {
    int in = mine ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out != 0;
  }

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
};

}  // namespace

bool MpiBuilt() { return true; }

Result<std::unique_ptr<Cluster>> JoinLauncher(int* argc, char*** argv) {
  if (!StartedByMpiLauncher()) return std::unique_ptr<Cluster>();
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return Error{"MPI could not be initialised", ErrorCode::kFailedPrecondition};
  }
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    return Error{"this MPI cannot be used from a threaded process (MPI_THREAD_FUNNELED)",
                 ErrorCode::kFailedPrecondition};
  }
  return std::unique_ptr<Cluster>(new MpiCluster());
}

}  // namespace fedldp
