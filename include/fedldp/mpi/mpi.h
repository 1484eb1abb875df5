// MPI scale-out of the simulator: the processes an MPI launcher (mpirun,
// mpiexec) started, as one Cluster (fl/cluster.h) over MPI_COMM_WORLD. MPI
// is optional at configure time (FEDLDP_MPI); without it, JoinLauncher
// still recognises a launcher, and refuses to let each of its processes
// run the whole job alone.
#ifndef FEDLDP_MPI_MPI_H_
#define FEDLDP_MPI_MPI_H_

#include <memory>

#include "fedldp/base/status.h"
#include "fedldp/fl/cluster.h"

namespace fedldp {

// Whether this fedldp was built with MPI.
bool MpiBuilt();

// Whether an MPI launcher started this process (OpenMPI's, or one that
// speaks PMI/PMIx).
bool StartedByMpiLauncher();

// The processes of this MPI job when a launcher started this one: MPI is
// initialised now (funneled: collectives from the calling thread only) and
// finalised when the returned cluster is destroyed. nullptr when no
// launcher started it. An error (kFailedPrecondition) if one did and
// fedldp was built without MPI.
Result<std::unique_ptr<Cluster>> JoinLauncher(int* argc, char*** argv);

}  // namespace fedldp

#endif  // FEDLDP_MPI_MPI_H_
