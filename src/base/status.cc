#include "fedldp/base/status.h"

#include <cmath>
#include <sstream>

namespace fedldp {

Status CheckFinite(double value, const char* name) {
  if (std::isfinite(value)) return Status::Ok();
  std::ostringstream out;
  out << name << " must be a finite number, got " << value;
  return Error{out.str(), ErrorCode::kInvalidArgument};
}

Status CheckPositive(double value, const char* name) {
  if (std::isfinite(value) && value > 0) return Status::Ok();
  std::ostringstream out;
  out << name << " must be a finite number > 0, got " << value;
  return Error{out.str(), ErrorCode::kInvalidArgument};
}

Status CheckEpsilon(double epsilon, const char* name) {
  // Above ~700 exp(epsilon) overflows a double; no mechanism here is useful
  // (or meaningful as privacy) long before that.
  if (std::isfinite(epsilon) && epsilon > 0 && epsilon <= 500) return Status::Ok();
  std::ostringstream out;
  out << name << " must be a finite number in (0, 500], got " << epsilon;
  return Error{out.str(), ErrorCode::kInvalidArgument};
}

Status CheckDelta(double delta, const char* name) {
  if (delta >= kMinDelta && delta < 1) return Status::Ok();
  std::ostringstream out;
  out << name << " must be in [1e-12, 1) (below 1e-12 the accountants' rounding would matter), got "
      << delta;
  return Error{out.str(), ErrorCode::kInvalidArgument};
}

}  // namespace fedldp
