#include "cli.h"

#include <CLI/CLI.hpp>

#include "commands.h"

namespace fedldp::cli {

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"fedldp: federated learning under local differential privacy (FedSel, LDP-FL)",
               "fedldp"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  // Options of a subcommand may come from a TOML/INI file, under a section
  // named after it ([train], ...); flags on the command line win.
  app.set_config("--config", "", "Read options from a TOML/INI file");

  SampleOptions sample;
  SetupSample(
      *app.add_subcommand("sample", "Draw outputs of one mechanism or selector (for audits)"),
      sample);
  TrainOptions train;
  SetupTrain(*app.add_subcommand("train", "Train a linear model with FedSel or a baseline"), train);
  LdpFlOptions ldpfl;
  SetupLdpFl(*app.add_subcommand("ldpfl", "Train a neural network with LDP-FL (one configuration)"),
             ldpfl);
  ReproduceOptions reproduce;
  auto* reproduce_app = app.add_subcommand("reproduce", "Recompute a paper's tables and figures");
  SetupReproduce(*reproduce_app, reproduce);
  ReproduceLdpFlOptions reproduce_ldpfl;
  SetupReproduceLdpFl(*reproduce_app, reproduce_ldpfl);
  AuditOptions audit;
  SetupAudit(
      *app.add_subcommand("audit", "Check every mechanism and selector against its mathematics"),
      audit);

  EnrolOptions enrol;
  SetupEnrol(*app.add_subcommand("enrol", "Issue client tokens for a deployment's server"), enrol);
  ServeOptions serve;
  SetupServe(*app.add_subcommand("serve", "Run a FedSel or LDP-FL task as a deployment's server (gRPC)"),
             serve);
  LoadOptions load;
  SetupLoad(*app.add_subcommand("load", "Load-test a FedSel server with many concurrent clients"),
            load);
  ShuffleOptions shuffle;
  SetupShuffle(*app.add_subcommand("shuffle", "Stand between LDP-FL clients and the server"),
               shuffle);
  ClientOptions client;
  SetupClient(*app.add_subcommand("client", "Take part in a deployed task as a client"), client);

  const std::string command = argc > 1 ? std::string(argv[1]) : std::string();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help: usage on stdout
    err << "fedldp: error: " << e.what() << " (see --help)\n";
    return kUsageExit;
  }
  try {
    if (app.got_subcommand("sample")) return RunSample(sample, out, err);
    if (app.got_subcommand("audit")) return RunAudit(audit, out, err);
    if (app.got_subcommand("train")) return RunTrain(train, out, err);
    if (app.got_subcommand("ldpfl")) return RunLdpFl(ldpfl, out, err);
    if (app.got_subcommand("enrol")) return RunEnrol(enrol, out, err);
    if (app.got_subcommand("serve")) return RunServe(serve, out, err);
    if (app.got_subcommand("client")) return RunClient(client, out, err);
    if (app.got_subcommand("shuffle")) return RunShuffle(shuffle, out, err);
    if (app.got_subcommand("load")) return RunLoad(load, out, err);
    if (reproduce_app->got_subcommand("fedsel")) return RunReproduceFedSel(reproduce, out, err);
    if (reproduce_app->got_subcommand("ldpfl")) {
      return RunReproduceLdpFl(reproduce_ldpfl, out, err);
    }
  } catch (const UsageError& e) {
    err << "fedldp " << command << ": error: " << e.what() << "\n";
    return kUsageExit;
  } catch (const std::exception& e) {
    err << "fedldp " << command << ": failed: " << e.what() << "\n";
    return 1;
  }
  return kUsageExit;
}

}  // namespace fedldp::cli
