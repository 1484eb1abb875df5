#include "cli.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "commands.h"
#include "fedldp/base/version.h"

namespace fedldp::cli {
namespace {

// "" if `text` is a number of CLI11's kind `type` (UINT, INT, FLOAT), else why
// not. Strict: CLI11 itself reads "-1" as 18446744073709551615 for an unsigned
// option and takes "inf", "nan" and "" for a floating one.
std::string CheckNumber(const std::string& type, const std::string& text) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  if (type == "UINT") {
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(begin, end, v);
    if (begin == end || ec != std::errc() || p != end) {
      return "'" + text + "' is not a whole number from 0 to 18446744073709551615";
    }
  } else if (type == "INT") {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(begin, end, v);
    if (begin == end || ec != std::errc() || p != end) return "'" + text + "' is not a whole number";
  } else {
    double v = 0;
    const auto [p, ec] = std::from_chars(begin, end, v);
    if (begin == end || ec != std::errc() || p != end || !std::isfinite(v)) {
      return "'" + text + "' is not a finite number";
    }
  }
  return "";
}

// host:port with a port from 1 to 65535 ([v6]:port too).
std::string CheckAddress(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return "'" + text + "' is not host:port";
  const std::string port = text.substr(colon + 1);
  unsigned v = 0;
  const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || v < 1 || v > 65535) {
    return "'" + text + "': the port must be a number from 1 to 65535";
  }
  return "";
}

// Every numeric option of every subcommand gets CheckNumber (on the command
// line and in config files alike; list items one by one: EmptyListItem
// catches the empty ones CLI11 drops),
// and every address option CheckAddress.
void StrictOptions(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string full = option->get_type_name();
    const std::string type = full.substr(0, full.find(':'));
    if (type == "UINT" || type == "INT" || type == "FLOAT") {
      option->check(CLI::Validator(
          [type](std::string& text) { return CheckNumber(type, text); }, "", "number"));
    }
    for (const char* name : {"--address", "--server", "--shuffler"}) {
      if (option->check_name(name)) {
        option->check(CLI::Validator([](std::string& text) { return CheckAddress(text); }, "",
                                     "address"));
      }
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) StrictOptions(*sub);
}

// CLI11 splits a list option ("--epsilon 0.1,1,8") and silently drops empty
// items, so "0.1,,8" would audit two budgets: such a value is refused here,
// before parsing. "" if none, else the one-line error.
std::string EmptyListItem(CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> lists;
  std::vector<CLI::App*> apps = {&app};
  for (std::size_t i = 0; i < apps.size(); ++i) {
    for (CLI::Option* option : apps[i]->get_options()) {
      if (option->get_delimiter() != '\0') lists.push_back(option->get_name());
    }
    for (CLI::App* sub : apps[i]->get_subcommands([](CLI::App*) { return true; })) {
      apps.push_back(sub);
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    for (const std::string& name : lists) {
      std::string value;
      if (arg == name && i + 1 < argc) {
        value = argv[i + 1];
      } else if (arg.rfind(name + "=", 0) == 0) {
        value = arg.substr(name.size() + 1);
      } else {
        continue;
      }
      if (value.empty() || value.front() == ',' || value.back() == ',' ||
          value.find(",,") != std::string::npos) {
        return name + ": '" + value + "' has an empty item";
      }
    }
  }
  return "";
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"fedldp: federated learning under local differential privacy (FedSel, LDP-FL)",
               "fedldp"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fedldp " + std::string(Version()),
                       "Print fedldp's version and exit");
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  // Options of a subcommand may come from a TOML/INI file, under a section
  // named after it ([train], ...); flags on the command line win. A key or
  // section the subcommand does not know is an error that names it (set
  // before the subcommands are added: they inherit it).
  app.set_config("--config", "", "Read options from a TOML/INI file");
  app.allow_config_extras(CLI::config_extras_mode::error);

  SampleOptions sample;
  SetupSample(
      *app.add_subcommand("sample", "Draw outputs of one mechanism or selector (for audits)"),
      sample);
  TrainOptions train;
  SetupTrain(*app.add_subcommand("train", "Train a linear model with FedSel or a baseline"), train);
  TrainOptions tune;
  SetupTune(*app.add_subcommand("tune", "Choose a variant's hyper-parameters on validation data"),
            tune);
  LdpFlOptions ldpfl;
  SetupLdpFl(*app.add_subcommand("ldpfl", "Train a neural network with LDP-FL (one configuration)"),
             ldpfl);
  ReproduceOptions reproduce;
  auto* reproduce_app = app.add_subcommand("reproduce", "Recompute a paper's tables and figures");
  SetupReproduce(*reproduce_app, reproduce);
  ReproduceLdpFlOptions reproduce_ldpfl;
  SetupReproduceLdpFl(*reproduce_app, reproduce_ldpfl);
  ReproduceFrontierOptions reproduce_frontier;
  SetupReproduceFrontier(*reproduce_app, reproduce_frontier);
  AuditOptions audit;
  SetupAudit(
      *app.add_subcommand("audit", "Check every mechanism and selector against its mathematics"),
      audit);

  auto* account_app =
      app.add_subcommand("account", "What a configuration costs in privacy, before it runs");
  account_app->require_subcommand(1);
  AccountShuffleOptions account_shuffle;
  SetupAccountShuffle(*account_app->add_subcommand(
                          "shuffle", "Central (eps, delta) of N shuffled eps0-LDP reports"),
                      account_shuffle);
  AccountRunOptions account_run;
  SetupAccountRun(*account_app->add_subcommand(
                      "run", "A client's local, per-round and total (eps, delta) over a run"),
                  account_run);

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

  StrictOptions(app);
  if (auto e = EmptyListItem(app, argc, argv); !e.empty()) {
    err << "fedldp: error: " << e << " (see --help)\n";
    return kUsageExit;
  }

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
    if (app.got_subcommand("tune")) return RunTune(tune, out, err);
    if (app.got_subcommand("ldpfl")) return RunLdpFl(ldpfl, out, err);
    if (app.got_subcommand("enrol")) return RunEnrol(enrol, out, err);
    if (app.got_subcommand("serve")) return RunServe(serve, out, err);
    if (app.got_subcommand("client")) return RunClient(client, out, err);
    if (app.got_subcommand("shuffle")) return RunShuffle(shuffle, out, err);
    if (app.got_subcommand("load")) return RunLoad(load, out, err);
    if (account_app->got_subcommand("shuffle")) return RunAccountShuffle(account_shuffle, out, err);
    if (account_app->got_subcommand("run")) return RunAccountRun(account_run, out, err);
    if (reproduce_app->got_subcommand("fedsel")) return RunReproduceFedSel(reproduce, out, err);
    if (reproduce_app->got_subcommand("frontier")) {
      return RunReproduceFrontier(reproduce_frontier, out, err);
    }
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
