#include "fedldp/base/status.h"

#include <cmath>
#include <sstream>

namespace fedldp {

std::string CheckFinite(double value, const char* name) {
  if (std::isfinite(value)) return {};
  std::ostringstream out;
  out << name << " must be a finite number, got " << value;
  return out.str();
}

std::string CheckPositive(double value, const char* name) {
  if (std::isfinite(value) && value > 0) return {};
  std::ostringstream out;
  out << name << " must be a finite number > 0, got " << value;
  return out.str();
}

std::string CheckEpsilon(double epsilon, const char* name) {
  // Above ~700 exp(epsilon) overflows a double; no mechanism here is useful
  // (or meaningful as privacy) long before that.
  if (std::isfinite(epsilon) && epsilon > 0 && epsilon <= 500) return {};
  std::ostringstream out;
  out << name << " must be a finite number in (0, 500], got " << epsilon;
  return out.str();
}

}  // namespace fedldp
