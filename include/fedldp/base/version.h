// The release this library was built as: CMake's project version.
#ifndef FEDLDP_BASE_VERSION_H_
#define FEDLDP_BASE_VERSION_H_

#include <string_view>

namespace fedldp {

// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
std::string_view Version();

}  // namespace fedldp

#endif  // FEDLDP_BASE_VERSION_H_
