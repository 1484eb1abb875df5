// LdpFlConfig's options, each described once (base/options.h): `fedldp
// ldpfl` and `serve --protocol ldpfl` bind their flags from these rows,
// Python's train_ldpfl takes them as keywords (fedldp.ldpfl_options() lists
// them), and the JSON records write the recorded ones. Rows without a flag
// (private, shuffle, arch) are Python's only: the command line runs the
// noise-free reference itself, always shuffles, and picks the network by
// the dataset or --model.
#ifndef FEDLDP_FL_LDPFL_OPTIONS_H_
#define FEDLDP_FL_LDPFL_OPTIONS_H_

#include <span>
#include <string>
#include <utility>

#include "fedldp/base/options.h"
#include "fedldp/fl/ldpfl.h"

namespace fedldp {

using LdpFlOption = ConfigOption<LdpFlConfig>;
std::span<const LdpFlOption> LdpFlOptions();

// `config` (LdpFlConfig{}, or a dataset's defaults) with the options given
// applied (ApplyOptions): what the CLI, serve and Python run.
Result<LdpFlConfig> LdpFlConfigWith(LdpFlConfig config,
                                    std::span<const std::pair<std::string, OptionValue>> given);

}  // namespace fedldp

#endif  // FEDLDP_FL_LDPFL_OPTIONS_H_
