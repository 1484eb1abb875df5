// fedldp export: a deployment's model out of the server's state file
// (net/model_export.h).
#include <filesystem>
#include <ostream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/net/model_export.h"

namespace fedldp::cli {

void SetupExport(CLI::App& app, ExportOptions& o) {
  app.description(
      "Write the model a deployment's server holds (FedSel's last model, LDP-FL's released\n"
      "one) to a file numpy or torch loads without fedldp, with the task, the round and the\n"
      "privacy statement in it: npz (np.load: \"weights\", \"metadata\"), json, or torchscript\n"
      "(torch.jit.load; LDP-FL's networks). Run it on a stopped or finished server's state.");
  app.add_option("--state", o.state, "The server's state file (SQLite)")->required();
  app.add_option("--out", o.out, "The file to write: .npz, .json or .pt")->required();
  app.add_option("--format", o.format, "npz, json or torchscript (default: from --out's name)")
      ->check(CLI::IsMember({"npz", "json", "torchscript"}));
  app.add_flag("--force", o.force, "Replace an existing --out file");
}

int RunExport(const ExportOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.force && std::filesystem::exists(o.out)) {
    throw UsageError("--out: " + o.out + " exists; pass --force to replace it");
  }
  const auto exported = ExportModel({.state = o.state, .out = o.out, .format = o.format});
  if (!exported.ok()) ThrowFailure(exported.code(), exported.error());
  const ExportSummary& e = *exported;
  out << "exported " << e.model << " of task " << e.task << " (" << e.protocol << ", "
      << e.rounds_closed << " rounds closed" << (e.finished ? ", finished" : "") << ") to " << o.out
      << " (" << ExportFormatName(e.format) << ")\n";
  if (e.privacy) {
    out << "privacy: " << DescribePrivacyRecord(*e.privacy) << "\n";
  } else {
    out << "privacy: none (the task is not private)\n";
  }
  (void)err;
  return 0;
}

}  // namespace fedldp::cli
