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
#include <string_view>
#include <utility>
#include <vector>

#include "cli.h"
#include "fedldp/base/options.h"

namespace fedldp::cli {

// Given options, by key, as typed on the command line.
using GivenText = std::map<std::string, std::string>;

// What --help says an option takes: INT, FLOAT, TEXT, or its choices
// (TEXT:{fixed,adaptive}); a plain INT or FLOAT is checked strictly as the
// command line's own numbers are (cli.cc), one that also takes a word
// (FLOAT|auto) by the library.
template <typename Config>
std::string TypeName(const ConfigOption<Config>& o, const OptionValue& value) {
  if (!o.choices.empty()) {
    std::string names;
    for (const std::string& c : o.choices) names += (names.empty() ? "" : ",") + c;
    return "TEXT:{" + names + "}";
  }
  const std::string kind = std::holds_alternative<std::int64_t>(value)  ? "INT"
                           : std::holds_alternative<std::string>(value) ? "TEXT"
                                                                        : "FLOAT";
  return o.word.empty() ? kind : kind + "|" + std::string(o.word);
}

// Binds every row of `options` that has a flag on `app`; `shown` gives the
// defaults --help shows (none for a row whose default varies; None shows
// as auto). A flag sets its option to the opposite of its default
// (--raw-inputs turns standardize_inputs off).
template <typename Config>
void BindOptions(CLI::App& app, std::span<const ConfigOption<Config>> options, const Config& shown,
                 GivenText& given) {
  for (const auto& o : options) {
    if (o.flag.empty()) continue;
    const std::string key(o.key), flag = "--" + std::string(o.flag), help(o.help);
    const OptionValue value = o.get(shown);
    if (o.is_flag()) {
      const std::string set = std::get<bool>(value) ? "false" : "true";
      app.add_flag_callback(
          flag, [&given, key, set] { given[key] = set; }, help);
      continue;
    }
    auto* option = app.add_option_function<std::string>(
        flag, [&given, key](const std::string& text) { given[key] = text; }, help);
    option->type_name(TypeName(o, value));
    if (o.varies) continue;
    option->default_str(std::holds_alternative<std::monostate>(value) ? "auto"
                                                                      : OptionString(value));
  }
}

// The deployed rows (ConfigOption::deployed) of two protocols' configs,
// each flag bound once on `app`: a flag both take is helped as "FedSel:
// ... (default 2); LDP-FL: ... (default 1)", and a flag sets its option to
// the opposite of its default, as in BindOptions. What is given is kept by
// flag (ServedOptions reads one protocol's from it).
template <typename A, typename B>
void BindServedOptions(CLI::App& app, std::span<const ConfigOption<A>> a, std::string_view a_name,
                       const A& a_shown, std::span<const ConfigOption<B>> b,
                       std::string_view b_name, const B& b_shown, GivenText& given) {
  struct Bound {
    std::string type, help, shown;  // type: a flag's value ("true"/"false"); shown "": no default
    std::vector<std::string> parts;
  };
  std::vector<std::string> order;
  std::map<std::string, Bound> bound;
  const auto add = [&](const auto& o, std::string_view name, const auto& shown) {
    if (o.flag.empty() || !o.deployed) return;
    const std::string flag(o.flag), help = std::string(name) + ": " + std::string(o.help);
    const OptionValue value = o.get(shown);
    const std::string default_text = o.varies || o.is_flag() ? "" : OptionString(value);
    if (!bound.contains(flag)) {
      order.push_back(flag);
      const std::string set = o.is_flag() && !std::get<bool>(value) ? "true" : "false";
      bound[flag] = {o.is_flag() ? set : TypeName(o, value), help, default_text, {}};
    }
    bound[flag].parts.push_back(help +
                                (default_text.empty() ? "" : " (default " + default_text + ")"));
  };
  for (const auto& o : a) add(o, a_name, a_shown);
  for (const auto& o : b) add(o, b_name, b_shown);
  for (const std::string& flag : order) {
    const Bound& f = bound[flag];
    const bool shared = f.parts.size() > 1;
    const std::string help = shared ? f.parts[0] + "; " + f.parts[1] : f.help;
    if (f.type == "true" || f.type == "false") {
      app.add_flag_callback(
          "--" + flag, [&given, flag, set = f.type] { given[flag] = set; }, help);
      continue;
    }
    auto* option = app.add_option_function<std::string>(
        "--" + flag, [&given, flag](const std::string& text) { given[flag] = text; }, help);
    option->type_name(f.type);
    if (!shared && !f.shown.empty()) option->default_str(f.shown);
  }
}

// The options given by flag (BindServedOptions) as `options`' keys; a
// flag none of its deployed rows has is refused, naming `protocol`.
template <typename Config>
std::vector<std::pair<std::string, OptionValue>> ServedOptions(
    std::span<const ConfigOption<Config>> options, const GivenText& given,
    std::string_view protocol) {
  std::vector<std::pair<std::string, OptionValue>> out;
  for (const auto& [flag, text] : given) {
    const ConfigOption<Config>* row = nullptr;
    for (const auto& o : options) {
      if (o.flag == flag && o.deployed) row = &o;
    }
    if (row == nullptr) {
      throw UsageError("--" + flag + " does not apply to --protocol " + std::string(protocol));
    }
    out.emplace_back(std::string(row->key), OptionValue(text));
  }
  return out;
}

inline std::vector<std::pair<std::string, OptionValue>> GivenOptions(const GivenText& given) {
  std::vector<std::pair<std::string, OptionValue>> out;
  for (const auto& [key, text] : given) out.emplace_back(key, OptionValue(text));
  return out;
}

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_CONFIG_OPTIONS_H_
