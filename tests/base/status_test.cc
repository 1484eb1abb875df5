// Status and Result carry an ErrorCode beside their sentence: kOk when OK,
// the Error's code otherwise, kept when a Result's error becomes a Status.
#include "fedldp/base/status.h"

#include <gtest/gtest.h>

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
}

}  // namespace
}  // namespace fedldp
