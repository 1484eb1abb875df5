// Numbers as fedldp's tables, summaries and logs print them.
#ifndef FEDLDP_BASE_FORMAT_H_
#define FEDLDP_BASE_FORMAT_H_

#include <iomanip>
#include <sstream>
#include <string>

#include "fedldp/base/units.h"

namespace fedldp {

// `decimals` digits after the point: Fixed(84.4712) is "84.47".
inline std::string Fixed(double v, int decimals = 2) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(decimals) << v;
  return s.str();
}

// At most `digits` significant digits: Significant(1.27349) is "1.273",
// Significant(0.001) "0.001", Significant(2e5) "2e+05".
inline std::string Significant(double v, int digits = 4) {
  std::ostringstream s;
  s << std::setprecision(digits) << v;
  return s.str();
}

// A fraction as percent with two decimals, without the sign: "84.47".
inline std::string PercentText(double fraction) { return Fixed(Percent(fraction), 2); }

}  // namespace fedldp

#endif  // FEDLDP_BASE_FORMAT_H_
