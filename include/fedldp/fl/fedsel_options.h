// FedSelConfig's options, each described once (base/options.h): `train`
// and `tune` bind their flags from these rows (`serve` the deployed ones),
// Python's train_fedsel takes them as keywords and returns them as its
// config, and the JSON records write the recorded ones. The variant is not a row: it is chosen
// first, and its defaults (DefaultFedSelConfig) are what the options change.
#ifndef FEDLDP_FL_FEDSEL_OPTIONS_H_
#define FEDLDP_FL_FEDSEL_OPTIONS_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/base/options.h"
#include "fedldp/fl/fedsel.h"

namespace fedldp {

using FedSelOption = ConfigOption<FedSelConfig>;
std::span<const FedSelOption> FedSelOptions();

// The variant's defaults with the options given applied (ApplyOptions):
// what the CLI and Python both run.
Result<FedSelConfig> FedSelConfigWith(const FedSelVariant& variant,
                                      std::span<const std::pair<std::string, OptionValue>> given);

}  // namespace fedldp

#endif  // FEDLDP_FL_FEDSEL_OPTIONS_H_
