#include <iostream>
#include <memory>

#include "cli.h"
#include "fedldp/mpi/mpi.h"

int main(int argc, char** argv) {
  // Started by mpirun: one of the job's processes. Rank 0 speaks for all;
  // the others run silently and only say that they failed.
  auto joined = fedldp::JoinLauncher(&argc, &argv);
  if (!joined.ok()) {
    std::cerr << "fedldp: error: " << joined.error() << "\n";
    return fedldp::cli::kUsageExit;
  }
  const std::unique_ptr<fedldp::Cluster> cluster = std::move(joined).value();
  if (cluster == nullptr || cluster->rank() == 0) {
    return fedldp::cli::RunCli(argc, argv, std::cout, std::cerr, cluster.get());
  }
  std::ostream silent(nullptr);
  const int code = fedldp::cli::RunCli(argc, argv, silent, silent, cluster.get());
  if (code != 0) {
    std::cerr << "fedldp: MPI process " << cluster->rank() << " exited with " << code
              << " (process 0 says why)\n";
  }
  return code;
}
