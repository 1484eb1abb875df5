// What both builds share: how a launcher is recognised.
#include <cstdlib>

#include "fedldp/mpi/mpi.h"

namespace fedldp {

bool StartedByMpiLauncher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace fedldp
