// --config files that mean one thing. CLI11's TOML reader keeps the first of
// two [train] sections and silently drops the second (a privacy parameter
// among them), and merges a key given twice into a list. StrictConfig reads
// the file as CLI11 does but first refuses any section or key given twice
// (`train.epochs` at the top and `epochs` under [train] are one key), naming
// both lines.
#ifndef FEDLDP_APPS_FEDLDP_CONFIG_FILE_H_
#define FEDLDP_APPS_FEDLDP_CONFIG_FILE_H_

#include <CLI/CLI.hpp>
#include <istream>
#include <string>
#include <vector>

namespace fedldp::cli {

// "" if no section or key of `text` (a TOML/INI file) is given twice, else one
// sentence naming the first repeat and both its lines.
std::string RepeatedConfigEntry(const std::string& text);

class StrictConfig : public CLI::ConfigTOML {
 public:
  // Throws CLI::ConfigError for a repeated section or key.
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_CONFIG_FILE_H_
