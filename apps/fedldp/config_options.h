// A library configuration's options (base/options.h) as command-line flags:
// each row is bound once, as --flag, and what the user gives is kept as
// text for ApplyOptions, which parses and checks it as Python's keywords
// are. So no option, default or rule is written out again here.
#ifndef FEDLDP_APPS_FEDLDP_CONFIG_OPTIONS_H_
#define FEDLDP_APPS_FEDLDP_CONFIG_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/base/options.h"

namespace fedldp::cli {

// Given options, by key, as typed on the command line.
using GivenText = std::map<std::string, std::string>;

// Binds every row of `options` on `app`; `shown` gives the defaults --help
// shows (none for a row whose default varies; None shows as auto).
template <typename Config>
void BindOptions(CLI::App& app, std::span<const ConfigOption<Config>> options, const Config& shown,
                 GivenText& given) {
  for (const auto& o : options) {
    const std::string key(o.key), flag = "--" + std::string(o.flag), help(o.help);
    if (o.is_flag()) {
      app.add_flag_callback(
          flag, [&given, key] { given[key] = "true"; }, help);
      continue;
    }
    const OptionValue value = o.get(shown);
    auto* option = app.add_option_function<std::string>(
        flag, [&given, key](const std::string& text) { given[key] = text; }, help);
    const std::string kind = std::holds_alternative<std::int64_t>(value)  ? "INT"
                             : std::holds_alternative<std::string>(value) ? "TEXT"
                                                                          : "FLOAT";
    // A plain INT or FLOAT is checked strictly as the command line's own
    // numbers are (cli.cc); one that also takes a word, by the library.
    option->type_name(o.word.empty() ? kind : kind + "|" + std::string(o.word));
    if (o.varies) continue;
    option->default_str(std::holds_alternative<std::monostate>(value) ? "auto"
                                                                      : OptionString(value));
  }
}

inline std::vector<std::pair<std::string, OptionValue>> GivenOptions(const GivenText& given) {
  std::vector<std::pair<std::string, OptionValue>> out;
  for (const auto& [key, text] : given) out.emplace_back(key, OptionValue(text));
  return out;
}

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_CONFIG_OPTIONS_H_
