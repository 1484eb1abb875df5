// Subcommands of `fedldp`. Each has an options struct, a Setup that binds its
// flags on a CLI11 subcommand, and a Run.
#ifndef FEDLDP_APPS_FEDLDP_COMMANDS_H_
#define FEDLDP_APPS_FEDLDP_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fedldp::cli {

struct SampleOptions {
  std::string mechanism;
  std::string selector;
  double epsilon = 0;
  std::optional<double> input;
  std::optional<double> center;
  std::optional<double> radius;
  std::optional<std::string> vector;  // v1,v2,... parsed strictly by the command
  std::optional<std::size_t> k;
  std::uint64_t count = 1;
  std::optional<std::uint64_t> seed;
  bool secure = false;
};
void SetupSample(CLI::App& app, SampleOptions& options);
int RunSample(const SampleOptions& options, std::ostream& out, std::ostream& err);

struct AuditOptions {
  std::vector<double> epsilons = {0.1, 0.5, 1, 2, 4, 8};
  std::size_t draws = 200000;
  std::uint64_t seed = 1;
  std::size_t d = 123;
  std::size_t k = 12;
  bool json = false;
};
void SetupAudit(CLI::App& app, AuditOptions& options);
int RunAudit(const AuditOptions& options, std::ostream& out, std::ostream& err);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_COMMANDS_H_
