#include "fedldp/base/version.h"

#ifndef FEDLDP_VERSION
#error "FEDLDP_VERSION must be defined by the build (CMake's PROJECT_VERSION)"
#endif

namespace fedldp {

std::string_view Version() { return FEDLDP_VERSION; }

}  // namespace fedldp
