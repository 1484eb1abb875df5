// JoinLauncher in a build without MPI.
#include "fedldp/mpi/mpi.h"

namespace fedldp {

bool MpiBuilt() { return false; }

Result<std::unique_ptr<Cluster>> JoinLauncher(int*, char***) {
  if (!StartedByMpiLauncher()) return std::unique_ptr<Cluster>();
  return Error{
      "an MPI launcher started this process, but this fedldp was built without MPI "
      "(every process would run the whole job alone): install libopenmpi-dev and "
      "reconfigure (cmake -DFEDLDP_MPI=ON)",
      ErrorCode::kFailedPrecondition};
}

}  // namespace fedldp
