// The `fedldp` command line: one CLI11 app with a subcommand per file
// (options struct, Setup that binds flags, Run that does the work).
#ifndef FEDLDP_APPS_FEDLDP_CLI_H_
#define FEDLDP_APPS_FEDLDP_CLI_H_

#include <CLI/CLI.hpp>
#include <ostream>
#include <stdexcept>
#include <string>

#include "fedldp/base/limits.h"
#include "fedldp/fl/cluster.h"

namespace fedldp::cli {

// Thrown by a command's Run for arguments that parse but make no sense; the
// CLI prints it as one line on stderr and exits with kUsageExit.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kUsageExit = 2;

// A count option's check from the library's table (base/limits.h), with the
// library's sentence: the same bound and words as Python's argument.
CLI::Validator Within(const CountLimit& limit);

// Runs `fedldp` on an argument vector, writing to out and err; returns the
// exit code: 0 on success, 2 for bad arguments (nothing written to out), 1 when
// the work itself fails (e.g. an audit finds a violation). `cluster`: the
// MPI processes this one is part of (mpi/mpi.h), if any; `train` and
// `ldpfl` spread their clients over them, and every other command refuses
// to run on more than one.
int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           Cluster* cluster = nullptr);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_CLI_H_
