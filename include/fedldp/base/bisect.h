// Bisection that always ends. A loop `while (hi - lo > tolerance)` with
// mid = (lo + hi) / 2 never ends once no double lies strictly between lo
// and hi before the tolerance is met: in the denormals (a clip of 4.9e-324
// made the Gaussian's calibration spin for ever), or where a relative
// tolerance falls below one ulp. Every bisection of the library narrows
// through this one.
#ifndef FEDLDP_BASE_BISECT_H_
#define FEDLDP_BASE_BISECT_H_

#include <algorithm>
#include <cmath>

namespace fedldp {

struct Bracket {
  double lo = 0, hi = 0;
};

// Narrows [lo, hi], where `holds` is false at lo and true at hi and turns
// true once between them, until hi - lo <= max(absolute, relative |hi|), or
// until no double lies strictly between lo and hi (then they are as close
// as doubles get). The result keeps holds(lo) false and holds(hi) true.
template <typename Holds>
Bracket Bisect(double lo, double hi, const Holds& holds, double relative, double absolute = 0) {
  while (hi - lo > std::max(absolute, relative * std::fabs(hi))) {
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;
    (holds(mid) ? hi : lo) = mid;
  }
  return {lo, hi};
}

}  // namespace fedldp

#endif  // FEDLDP_BASE_BISECT_H_
