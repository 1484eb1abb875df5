#include "fedldp/base/bisect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fedldp {
namespace {

TEST(Bisect, NarrowsToTheToleranceAndKeepsEachSide) {
  const auto above = [](double x) { return x * x >= 2; };
  const Bracket b = Bisect(1, 2, above, 1e-12);
  EXPECT_FALSE(above(b.lo));
  EXPECT_TRUE(above(b.hi));
  EXPECT_LE(b.hi - b.lo, 1e-12 * b.hi);
  EXPECT_NEAR(b.hi, std::sqrt(2.0), 1e-11);
  const Bracket a = Bisect(1, 2, above, 0, 1e-3);
  EXPECT_LE(a.hi - a.lo, 1e-3);
  EXPECT_GT(a.hi - a.lo, 1e-4);  // stops at the absolute tolerance, not before
}

// Tolerances no pair of doubles can meet: before, a loop of this form spun
// for ever (the Gaussian's calibration at clip 4.9e-324). It now ends with
// lo and hi neighbours.
TEST(Bisect, EndsWhereNoDoubleLiesBetween) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  const auto at_least = [](double edge) { return [edge](double x) { return x >= edge; }; };
  Bracket b = Bisect(0, 4 * tiny, at_least(3 * tiny), 1e-13);
  EXPECT_EQ(b.lo, 2 * tiny);  // 2.5 tiny rounds to 2 tiny: nothing lies between
  EXPECT_EQ(b.hi, 3 * tiny);
  b = Bisect(0, tiny, at_least(tiny), 1e-13);
  EXPECT_EQ(b.lo, 0);
  EXPECT_EQ(b.hi, tiny);
  b = Bisect(1, 2, at_least(1.5), 0, 0);  // no tolerance: down to neighbours
  EXPECT_EQ(b.hi, 1.5);
  EXPECT_EQ(b.lo, std::nextafter(1.5, 1.0));
}

}  // namespace
}  // namespace fedldp
