// Status and Result carry an ErrorCode beside their sentence: kOk when OK,
// the Error's code otherwise, kept when a Result's error becomes a Status.
#include "fedldp/base/status.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "fedldp/base/checked.h"

namespace fedldp {
namespace {

TEST(Status, CarriesItsCodeAndIsNeverAnOkError) {
  EXPECT_EQ(Status().code(), ErrorCode::kOk);
  EXPECT_EQ(Status(Error{"bad"}).code(), ErrorCode::kInvalidArgument);  // the default
  const Status io = Error{"cannot write x", ErrorCode::kIo};
  EXPECT_FALSE(io.ok());
  EXPECT_EQ(io.code(), ErrorCode::kIo);
  EXPECT_EQ(io.error(), "cannot write x");
  // An Error that claims kOk is still an error.
  const Status odd = Error{"odd", ErrorCode::kOk};
  EXPECT_FALSE(odd.ok());
  EXPECT_EQ(odd.code(), ErrorCode::kInvalidArgument);
}

TEST(Result, CarriesItsCode) {
  const Result<int> value = 3;
  EXPECT_EQ(value.code(), ErrorCode::kOk);
  const Result<int> ended = Error{"join again", ErrorCode::kFailedPrecondition};
  EXPECT_EQ(ended.code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(ended.error(), "join again");
  // A failed Status passes on as it is; an OK one cannot stand for a value.
  const Status unread = Error{"cannot read x", ErrorCode::kIo};
  const Result<int> passed = unread;
  EXPECT_EQ(passed.code(), ErrorCode::kIo);
  EXPECT_EQ(passed.error(), "cannot read x");
  EXPECT_THROW(Result<int>{Status::Ok()}, BadResultAccess);
}

// The builders' shared checks: OK inside their range, kInvalidArgument with
// the parameter's name outside it.
// The macros pass an error on with its message and code, and go on past an
// OK one; ASSIGN_OR_RETURN's value is usable after it, twice in one scope.
Result<int> Half(int x) {
  if (x % 2 != 0) return Error{"odd: " + std::to_string(x), ErrorCode::kFailedPrecondition};
  return x / 2;
}
Status Positive(int x) { return x > 0 ? Status() : Status(Error{"not positive", ErrorCode::kIo}); }
Result<int> Quarter(int x) {
  FEDLDP_RETURN_IF_ERROR(Positive(x));
  FEDLDP_ASSIGN_OR_RETURN(const int half, Half(x));
  FEDLDP_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}
Status CheckQuarter(int x) {
  FEDLDP_RETURN_IF_ERROR(Quarter(x));  // a Result's error, as a Status
  return {};
}

TEST(StatusMacros, PassTheErrorOnWithItsCode) {
  EXPECT_EQ(Quarter(8).value(), 2);
  EXPECT_EQ(Quarter(6).error(), "odd: 3");  // the second step's
  EXPECT_EQ(Quarter(6).code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(Quarter(-4).error(), "not positive");
  EXPECT_EQ(Quarter(-4).code(), ErrorCode::kIo);
  EXPECT_TRUE(CheckQuarter(4).ok());
  EXPECT_EQ(CheckQuarter(5).code(), ErrorCode::kFailedPrecondition);
}

TEST(ParameterChecks, NameTheParameterAndSayInvalidArgument) {
  EXPECT_TRUE(CheckEpsilon(500).ok());
  EXPECT_TRUE(CheckEpsilon(1e-9).ok());
  for (double bad : {0.0, -1.0, 500.001, std::nan(""), HUGE_VAL}) {
    const Status e = CheckEpsilon(bad, "central epsilon");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(e.error().rfind("central epsilon must be", 0), 0u) << e.error();
  }
  EXPECT_TRUE(CheckPositive(1e300, "radius").ok());
  EXPECT_EQ(CheckPositive(0, "radius").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(CheckPositive(-HUGE_VAL, "radius").code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(CheckDelta(1e-12).ok());
  EXPECT_TRUE(CheckDelta(0.999).ok());
  for (double bad : {0.0, 9.99e-13, 1.0, -1e-6, std::nan(""), HUGE_VAL}) {
    const Status e = CheckDelta(bad, "the total delta");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(e.error().rfind("the total delta must be in [1e-12, 1)", 0), 0u) << e.error();
  }
  EXPECT_TRUE(CheckFinite(-3, "center").ok());
  EXPECT_NE(CheckFinite(std::nan(""), "center").error().find("center must be"), std::string::npos);
}

// Sizes from outside are summed and multiplied only through checked.h
// (issue 41): a sum that wraps around 2^64, or an empty part, is an error
// naming the part; in range, the arithmetic is exact.
TEST(Checked, SumsAndProductsRefuseOverflowAndEmptyParts) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(CheckedAdd(kMax - 1, 1), kMax);
  EXPECT_FALSE(CheckedAdd(kMax, 1).has_value());
  EXPECT_EQ(CheckedMul(std::size_t{1} << 32, (std::size_t{1} << 32) - 1),
            (std::size_t{1} << 63) + ((std::size_t{1} << 63) - (std::size_t{1} << 32)));
  EXPECT_FALSE(CheckedMul(std::size_t{1} << 32, std::size_t{1} << 32).has_value());
  struct Case {
    std::vector<std::size_t> sizes;
    std::string expected;  // in the error; "" = the sum
    std::size_t sum = 0;
  };
  const std::vector<Case> cases = {
      {{3, 4, 5}, "", 12},
      {{}, "", 0},
      {{kMax - 4, 4}, "", kMax},
      {{kMax, 5}, "overflow at layer 1 (5)"},
      {{std::size_t{1} << 63, std::size_t{1} << 63, 4}, "overflow at layer 1"},
      {{2, 0, 2}, "layer 1 is empty"},
  };
  for (const Case& c : cases) {
    const auto sum = SumOfSizes(c.sizes, "layer");
    if (c.expected.empty()) {
      ASSERT_TRUE(sum.ok()) << sum.error();
      EXPECT_EQ(*sum, c.sum);
    } else {
      ASSERT_FALSE(sum.ok()) << c.expected;
      EXPECT_NE(sum.error().find(c.expected), std::string::npos) << sum.error();
    }
  }
}

// A refusal is one line on a terminal and in a log, whatever its message
// holds: lines joined with "; ", blank ones and trailing blanks dropped.
TEST(OneLine, JoinsTheLinesOfAMessage) {
  EXPECT_EQ(OneLine("one line"), "one line");
  EXPECT_EQ(OneLine("first\nsecond\n"), "first; second");
  EXPECT_EQ(OneLine("a  \r\n\n\t\nb\t"), "a; b");
  EXPECT_EQ(OneLine("\n"), "");
  EXPECT_EQ(OneLine(""), "");
}

}  // namespace
}  // namespace fedldp
