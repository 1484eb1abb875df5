#include "cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "commands.h"
#include "config_file.h"
#include "fedldp/base/limits.h"
#include "fedldp/base/version.h"
#include "fedldp/sim/fedsel_reproduction.h"
#include "fedldp/sim/frontier_reproduction.h"
#include "fedldp/sim/ldpfl_reproduction.h"

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
      return "'" + text + "' is not " + std::string(kSeedRange);
    }
  } else if (type == "INT") {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(begin, end, v);
    if (begin == end || ec != std::errc() || p != end)
      return "'" + text + "' is not a whole number";
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
      option->check(CLI::Validator([type](std::string& text) { return CheckNumber(type, text); },
                                   "", "number"));
    }
    for (const char* name : {"--address", "--server", "--shuffler"}) {
      if (option->check_name(name)) {
        option->check(
            CLI::Validator([](std::string& text) { return CheckAddress(text); }, "", "address"));
      }
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) StrictOptions(*sub);
}

// CLI11 splits a list option ("--epsilon 0.1,1,8") and silently drops empty
// items, so "0.1,,8" would audit two budgets: such a value is refused here,
// before parsing. OK if none, else the one-line error.
Status EmptyListItem(CLI::App& app, int argc, const char* const* argv) {
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
        return Error{name + ": '" + value + "' has an empty item"};
      }
    }
  }
  return {};
}

// Edit distance counting insertions, deletions, substitutions and swaps of
// two neighbouring letters ("trian" is one edit from "train").
std::size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The candidate nearest to `word`, if near enough to be a typo of it (at
// most a third of its letters, and at least one, differ); "" otherwise.
std::string Nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const std::size_t distance = EditDistance(word, c);
    if (distance < best_distance) best = c, best_distance = distance;
  }
  return best;
}

// " (did you mean --epsilon?)" for the first argument that names no option
// or subcommand of where it stands on the command line but is close to
// one; "" otherwise. A bare word is taken for a subcommand only right after
// a command that needs one (option values are bare words too).
std::string DidYouMean(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* at = &app;
  bool expect_subcommand = true;
  const auto all = [](CLI::App*) { return true; };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
      expect_subcommand = false;
      const std::string name =
          arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
      std::vector<std::string> names;
      bool known = false;
      for (CLI::App* a = at; a != nullptr; a = a->get_parent()) {
        for (const CLI::Option* option : a->get_options()) {
          for (const std::string& long_name : option->get_lnames()) {
            known |= long_name == name;
            names.push_back(long_name);
          }
        }
      }
      if (known) continue;
      const std::string best = Nearest(name, names);
      return best.empty() ? "" : " (did you mean --" + best + "?)";
    }
    if (arg.empty() || arg[0] == '-' || !expect_subcommand) continue;
    std::vector<std::string> names;
    CLI::App* next = nullptr;
    for (CLI::App* sub : at->get_subcommands(all)) {
      if (sub->get_name() == arg) next = sub;
      names.push_back(sub->get_name());
    }
    if (next == nullptr) {
      const std::string best = Nearest(arg, names);
      return best.empty() ? "" : " (did you mean " + best + "?)";
    }
    at = next;
    expect_subcommand = !at->get_subcommands(all).empty();
  }
  return "";
}

}  // namespace

namespace {

// A config-file value: numbers and booleans bare, anything else quoted.
std::string TomlValue(const std::string& v) {
  if (v == "true" || v == "false") return v;
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  if (!v.empty() && *end == '\0' && v.find_first_of("xX") == std::string::npos) return v;
  std::string quoted = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

// --print-config: the chosen subcommand's options as a config file section
// ([train], [reproduce.fedsel], ...): given ones with their values, the rest
// with their defaults, options without a default as comments. Reading the
// output back with --config runs the same configuration.
std::string EffectiveConfig(const CLI::App& app) {
  const CLI::App* sub = &app;
  std::string section, command;
  while (!sub->get_subcommands().empty()) {
    sub = sub->get_subcommands().front();
    section += (section.empty() ? "" : ".") + sub->get_name();
    command += " " + sub->get_name();
  }
  std::ostringstream s;
  s << "# fedldp " << Version() << ": the options of `fedldp" << command
    << "` as they would run (fedldp --config FILE" << command << ")\n";
  s << "[" << section << "]\n";
  for (const CLI::Option* opt : sub->get_options()) {
    if (!opt->get_configurable() || opt->get_lnames().empty()) continue;
    const std::string& name = opt->get_lnames().front();
    if (name == "help" || name == "help-all") continue;
    if (opt->get_items_expected_max() == 0) {  // a flag
      // Set on the command line, or to true or false in a --config file.
      // An unset flag stays a comment: a flag given at all, even as false,
      // counts for the options it excludes (--secure excludes --seed).
      const bool on = opt->count() > 0 && opt->as<bool>();
      s << (on ? "" : "# ") << name << " = " << (on ? "true" : "false") << "\n";
      continue;
    }
    std::vector<std::string> values =
        opt->count() > 0 ? opt->results() : std::vector<std::string>{};
    const std::string fallback = opt->get_default_str();
    if (values.empty() && fallback.size() > 1 && fallback.front() == '[' &&
        fallback.back() == ']') {
      s << name << " = " << fallback << "\n";  // a list default, already written as one
      continue;
    }
    if (values.empty() && !fallback.empty()) values = {fallback};
    if (values.empty()) {
      s << "# " << name << " =   (not set)\n";
    } else if (values.size() == 1 && opt->get_expected_max() <= 1) {
      s << name << " = " << TomlValue(values.front()) << "\n";
    } else {
      s << name << " = [";
      for (std::size_t i = 0; i < values.size(); ++i) {
        s << (i ? ", " : "") << TomlValue(values[i]);
      }
      s << "]\n";
    }
  }
  return s.str();
}

// A parsed subcommand's run.
using CommandRun = std::function<int(std::ostream& out, std::ostream& err, Cluster& processes)>;

// Sets up a subcommand's options on its CLI::App; returns its run. The
// options live as long as the run.
template <typename Options, typename Run>
std::function<CommandRun(CLI::App&)> Bind(void (*setup)(CLI::App&, Options&), Run run) {
  return [setup, run](CLI::App& app) -> CommandRun {
    auto options = std::make_shared<Options>();
    setup(app, *options);
    return [options, run](std::ostream& out, std::ostream& err, Cluster& processes) {
      if constexpr (std::is_invocable_v<Run, Options&, std::ostream&, std::ostream&, Cluster&>) {
        return run(*options, out, err, processes);
      } else {
        return run(*options, out, err);
      }
    };
  };
}

// --threads 0 is all cores: shared among the processes on this machine.
template <typename Threads>
void ShareCores(Threads& threads, const Cluster& processes) {
  if (processes.local_size() <= 1 || threads != 0) return;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<Threads>(std::max(1, cores / processes.local_size()));
}

// Every subcommand, once, in the order --help lists them: its group ("" at
// the top), name, help (none: its setup adds the subcommand to the group
// itself), whether it spreads its work over MPI processes, and its setup.
struct Command {
  const char* group;
  const char* name;
  const char* help;
  bool mpi;
  std::function<CommandRun(CLI::App&)> setup;
};

struct Group {
  const char* name;
  const char* help;
};
constexpr Group kGroups[] = {
    {"reproduce", "Recompute a paper's tables and figures"},
    {"account", "What a configuration costs in privacy, before it runs"},
};

std::vector<Command> Commands() {
  return {
      {"", "sample", "Draw outputs of one mechanism or selector (for audits)", false,
       Bind(SetupSample, RunSample)},
      {"", "train", "Train a linear model with FedSel or a baseline", true,
       Bind(SetupTrain,
            [](TrainOptions& o, std::ostream& out, std::ostream& err, Cluster& processes) {
              ShareCores(o.threads, processes);
              return RunTrain(o, out, err, processes);
            })},
      {"", "tune", "Choose a variant's hyper-parameters on validation data", false,
       Bind(SetupTune, RunTune)},
      {"", "ldpfl", "Train a neural network with LDP-FL (one configuration)", true,
       Bind(SetupLdpFl,
            [](LdpFlRunOptions& o, std::ostream& out, std::ostream& err, Cluster& processes) {
              ShareCores(o.threads, processes);
              return RunLdpFl(o, out, err, processes);
            })},
      {"reproduce", "fedsel", nullptr, false, Bind(SetupReproduce, RunReproduceFedSel)},
      {"reproduce", "ldpfl", nullptr, false, Bind(SetupReproduceLdpFl, RunReproduceLdpFl)},
      {"reproduce", "frontier", nullptr, false, Bind(SetupReproduceFrontier, RunReproduceFrontier)},
      {"", "audit", "Check every mechanism and selector against its mathematics", false,
       Bind(SetupAudit, RunAudit)},
      {"account", "shuffle", "Central (eps, delta) of N shuffled eps0-LDP reports", false,
       Bind(SetupAccountShuffle, RunAccountShuffle)},
      {"account", "run", "A client's local, per-round and total (eps, delta) over a run", false,
       Bind(SetupAccountRun, RunAccountRun)},
      {"account", "gaussian", "DP-SGD's Gaussian steps, Poisson-sampled or allocated", false,
       Bind(SetupAccountGaussian, RunAccountGaussian)},
      {"account", "curves", "The shuffle bounds side by side: central eps against N", false,
       Bind(SetupAccountCurves, RunAccountCurves)},
      {"", "enrol", "Issue client tokens for a deployment's server", false,
       Bind(SetupEnrol, RunEnrol)},
      {"", "serve", "Run a FedSel or LDP-FL task as a deployment's server (gRPC)", false,
       Bind(SetupServe, RunServe)},
      {"", "export", "Write a deployment's model to a file numpy or torch loads", false,
       Bind(SetupExport, RunExport)},
      {"", "load", "Load-test a FedSel server with many concurrent clients", false,
       Bind(SetupLoad, RunLoad)},
      {"", "shuffle", "Stand between LDP-FL clients and the server", false,
       Bind(SetupShuffle, RunShuffle)},
      {"", "client", "Take part in a deployed task as a client", false,
       Bind(SetupClient, RunClient)},
  };
}

// A subcommand as set up: its app and its run.
struct SetUp {
  const Command* command;
  CLI::App* app;
  CommandRun run;
};

// Adds every subcommand (and group) to `app`.
std::vector<SetUp> AddCommands(CLI::App& app, const std::vector<Command>& commands) {
  std::map<std::string, CLI::App*> groups = {{"", &app}};
  std::vector<SetUp> set_up;
  for (const Command& c : commands) {
    CLI::App*& parent = groups[c.group];
    if (parent == nullptr) {  // a group's first subcommand
      const auto* group = std::find_if(std::begin(kGroups), std::end(kGroups), [&](const Group& g) {
        return g.name == std::string(c.group);
      });
      parent = app.add_subcommand(group->name, group->help);
      parent->require_subcommand(1);
    }
    if (c.help != nullptr) {
      CLI::App* sub = parent->add_subcommand(c.name, c.help);
      set_up.push_back({&c, sub, c.setup(*sub)});
    } else {
      CommandRun run = c.setup(*parent);  // adds its own subcommand
      set_up.push_back({&c, parent->get_subcommand(c.name), std::move(run)});
    }
  }
  return set_up;
}

}  // namespace

CLI::Validator Within(const CountLimit& limit) {
  return CLI::Validator(
      [limit](std::string& text) -> std::string {
        std::int64_t v = 0;
        const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
          return "'" + text + "' is not a whole number";
        }
        const Status s = CheckCount(limit, v);
        return s.ok() ? std::string() : s.error();
      },
      "", std::string(limit.name));
}

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           Cluster* cluster) {
  CLI::App app{"fedldp: federated learning under local differential privacy (FedSel, LDP-FL)",
               "fedldp"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fedldp " + std::string(Version()),
                       "Print fedldp's version and exit");
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  // Options of a subcommand may come from a TOML/INI file, under a section
  // named after it ([train], ...); flags on the command line win. A key or
  // section the subcommand does not know is an error that names it (set
  // before the subcommands are added: they inherit it). A section or key
  // given twice is an error naming both lines (config_file.h).
  app.config_formatter(std::make_shared<StrictConfig>());
  app.set_config("--config", "", "Read options from a TOML/INI file");
  app.allow_config_extras(CLI::config_extras_mode::error);
  bool print_config = false;
  app.add_flag("--print-config", print_config,
               "Print the subcommand's effective options (command line, --config file and "
               "defaults) as a config file, and exit without running it");
  const std::vector<Command> commands = Commands();
  const std::vector<SetUp> set_up = AddCommands(app, commands);
  StrictOptions(app);
  if (Status e = EmptyListItem(app, argc, argv); !e.ok()) {
    err << "fedldp: error: " << e.error() << " (see --help)\n";
    return kUsageExit;
  }
  const std::string command = argc > 1 ? std::string(argv[1]) : std::string();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help: usage on stdout
    err << "fedldp: error: " << e.what() << DidYouMean(app, argc, argv) << " (see --help)\n";
    return kUsageExit;
  }
  if (print_config) {
    out << EffectiveConfig(app);
    return 0;
  }
  const auto ran =
      std::find_if(set_up.begin(), set_up.end(), [](const SetUp& s) { return s.app->parsed(); });
  if (ran == set_up.end()) return kUsageExit;
  if (cluster != nullptr && cluster->size() > 1 && !ran->command->mpi) {
    err << "fedldp " << command
        << ": error: only train and ldpfl spread their work over MPI processes; "
        << "run " << command << " without mpirun\n";
    return kUsageExit;
  }
  try {
    return ran->run(out, err, cluster != nullptr ? *cluster : OneProcess());
  } catch (const UsageError& e) {
    err << "fedldp " << command << ": error: " << OneLine(e.what()) << "\n";
    return kUsageExit;
  } catch (const std::exception& e) {
    err << "fedldp " << command << ": failed: " << OneLine(e.what()) << "\n";
    return 1;
  }
}

}  // namespace fedldp::cli
