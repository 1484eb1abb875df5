// A configuration's options described once: each row names an option
// (Python keyword, command-line flag, JSON record key), says what it does,
// sets and reads the field, and states when it may be given. The command
// line, Python and the records are derived from the rows, and both
// front ends apply what a user gave through ApplyOptions, so they accept
// the same values and refuse with the same sentences.
#ifndef FEDLDP_BASE_OPTIONS_H_
#define FEDLDP_BASE_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "fedldp/base/names.h"
#include "fedldp/base/status.h"

namespace fedldp {

// A value given for an option: typed (from Python) or text (from the
// command line or a config file); monostate is Python's None.
using OptionValue = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

// An option's value read as a type, or why it is not one (text is parsed
// whole and strictly: "2x" is no number).
Result<double> OptionNumber(const OptionValue& value);
Result<std::int64_t> OptionInteger(const OptionValue& value);
Result<bool> OptionFlag(const OptionValue& value);
Result<std::string> OptionText(const OptionValue& value);
// As text: a --help default, a refusal.
std::string OptionString(const OptionValue& value);

template <typename Config>
struct ConfigOption {
  std::string_view key;     // Python's keyword, and the name refusals use
  std::string_view flag;    // the command line's, without "--"
  std::string_view record;  // the JSON record's key; empty: not recorded
  std::string_view help;
  std::function<Status(Config&, const OptionValue&)> set;
  std::function<OptionValue(const Config&)> get;
  // OK if the option may be given for the configuration it ends in, else
  // why not ("clip applies to the vector variants only"); unset: always.
  std::function<Status(const Config&)> applies;
  // The default depends on another option (e.g. the variant's tuned one).
  bool varies = false;
  // A word the option takes besides a value of its kind ("auto"), if any.
  std::string_view word;
  // A text option's values, when it takes one of a few (--help lists them).
  std::vector<std::string> choices;
  // A deployment serves it (`serve` binds it); false: the simulator's only
  // (how rows are split among simulated clients, say).
  bool deployed = true;
  bool is_flag() const { return std::holds_alternative<bool>(get(Config{})); }
};

// set and get of a field that takes one of `names`, the i-th meaning
// values[i] (a plain enum, a mode kept as a bool): text only, exactly.
template <typename Config, typename T>
std::pair<std::function<Status(Config&, const OptionValue&)>,
          std::function<OptionValue(const Config&)>>
ChoiceField(T Config::*field, std::vector<std::string> names, std::vector<T> values) {
  auto set = [=](Config& c, const OptionValue& v) -> Status {
    FEDLDP_ASSIGN_OR_RETURN(const std::string text, OptionText(v));
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == text) {
        c.*field = values[i];
        return {};
      }
    }
    return Error{"'" + text + "' is not " + Listed(names, " or ")};
  };
  auto get = [=](const Config& c) -> OptionValue {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] == c.*field) return names[i];
    }
    return std::string("?");
  };
  return {set, get};
}

// set and get of a plain field: a number, an integer, a flag or text.
template <typename Config, typename T>
std::function<Status(Config&, const OptionValue&)> SetField(T Config::*field) {
  return [field](Config& c, const OptionValue& v) -> Status {
    if constexpr (std::is_same_v<T, bool>) {
      FEDLDP_ASSIGN_OR_RETURN(c.*field, OptionFlag(v));
    } else if constexpr (std::is_same_v<T, std::string>) {
      FEDLDP_ASSIGN_OR_RETURN(c.*field, OptionText(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      FEDLDP_ASSIGN_OR_RETURN(c.*field, OptionNumber(v));
    } else {
      FEDLDP_ASSIGN_OR_RETURN(const std::int64_t n, OptionInteger(v));
      if (std::is_unsigned_v<T> && n < 0) return Error{"a count cannot be negative"};
      c.*field = static_cast<T>(n);
    }
    return {};
  };
}

template <typename Config, typename T>
std::function<OptionValue(const Config&)> GetField(T Config::*field) {
  return [field](const Config& c) -> OptionValue {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
      return c.*field;
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<double>(c.*field);
    } else {
      return static_cast<std::int64_t>(c.*field);
    }
  };
}

// `row`, marked as the simulator's only.
template <typename Config>
ConfigOption<Config> SimulatedOnly(ConfigOption<Config> row) {
  row.deployed = false;
  return row;
}

// A table's rows: `first`'s (the recorded ones, say), then `then`'s.
template <typename Config>
std::vector<ConfigOption<Config>> JoinedRows(std::vector<ConfigOption<Config>> first,
                                             std::vector<ConfigOption<Config>> then) {
  for (ConfigOption<Config>& o : then) first.push_back(std::move(o));
  return first;
}

template <typename Config>
const ConfigOption<Config>* FindOption(std::span<const ConfigOption<Config>> options,
                                       std::string_view key) {
  for (const auto& o : options) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

// Sets the options given (key, value) on `config`, in order: a whole
// configuration read back (a task off the wire), with no rule of when an
// option may be given. A refusal names the option by its key.
template <typename Config>
Status SetOptions(std::span<const ConfigOption<Config>> options,
                  std::span<const std::pair<std::string, OptionValue>> given, Config& config) {
  for (const auto& [key, value] : given) {
    const ConfigOption<Config>* o = FindOption(options, key);
    if (o == nullptr) return Error{"unknown option '" + key + "'"};
    if (Status s = o->set(config, value); !s.ok()) {
      return Error{key + " = " + OptionString(value) + ": " + s.error()};
    }
  }
  return {};
}

// Sets the options given (key, value) on `config`, in order, then checks
// that each given one that changed its field applies to the configuration
// they make (one left at its default passes, so a configuration read back
// whole can be given again). A refusal names the option by its key.
template <typename Config>
Status ApplyOptions(std::span<const ConfigOption<Config>> options,
                    std::span<const std::pair<std::string, OptionValue>> given, Config& config) {
  const Config before = config;
  FEDLDP_RETURN_IF_ERROR(SetOptions(options, given, config));
  for (const auto& [key, value] : given) {
    const ConfigOption<Config>* o = FindOption(options, key);
    if (o->applies && o->get(config) != o->get(before)) {
      FEDLDP_RETURN_IF_ERROR(o->applies(config));
    }
  }
  return {};
}

}  // namespace fedldp

#endif  // FEDLDP_BASE_OPTIONS_H_
