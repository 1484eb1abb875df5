#include "config_file.h"

#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fedldp::cli {
namespace {

std::string Trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::string Unquoted(std::string s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

// A [section] or [[section]] header's name; "" for the top level.
std::string SectionName(const std::string& line) {
  std::string name = line.substr(1, line.size() - 2);
  if (name.size() > 1 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  return CLI::detail::to_lower(name) == "default" ? "" : name;
}

// Where each section and each full key name was first given, as CLI11's
// ConfigBase::from_config reads lines (trimmed; shorter than 3 skipped;
// comments; `key = [ ...` continued until a line ends with `]`).
class Entries {
 public:
  std::string Add(const std::string& kind, const std::string& name, std::size_t line) {
    const auto [it, fresh] = first_.emplace(kind + " " + name, line);
    if (fresh) return "";
    return kind + " " + name + " is given twice, on lines " + std::to_string(it->second) + " and " +
           std::to_string(line) + "; give it once";
  }

 private:
  std::map<std::string, std::size_t> first_;
};

}  // namespace

std::string RepeatedConfigEntry(const std::string& text) {
  std::istringstream in(text);
  Entries entries;
  std::string section;
  std::size_t number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    const std::string line = Trimmed(raw);
    if (line.size() < 3 || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = SectionName(line);
      if (section.empty()) continue;
      if (std::string e = entries.Add("section", "[" + section + "]", number); !e.empty()) return e;
      continue;
    }
    const auto eq = line.find('=');
    const std::string key = Unquoted(Trimmed(line.substr(0, eq)));
    const std::string full = section.empty() ? key : section + "." + key;
    if (std::string e = entries.Add("key", full, number); !e.empty()) return e;
    if (eq == std::string::npos) continue;
    std::string value = Trimmed(line.substr(eq + 1));
    value = Trimmed(value.substr(0, value.find('#')));
    if (value.size() > 1 && value.front() == '[') {
      for (std::string more; value.back() != ']' && std::getline(in, more); ++number) {
        value += Trimmed(more);
      }
    }
  }
  return "";
}

std::vector<CLI::ConfigItem> StrictConfig::from_config(std::istream& input) const {
  std::ostringstream text;
  text << input.rdbuf();
  if (std::string repeat = RepeatedConfigEntry(text.str()); !repeat.empty()) {
    throw CLI::ConfigError("--config: " + repeat);
  }
  std::istringstream again(text.str());
  return CLI::ConfigTOML::from_config(again);
}

}  // namespace fedldp::cli
