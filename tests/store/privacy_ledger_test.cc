#include "fedldp/store/privacy_ledger.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "testing/failing_sync_vfs.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

class PrivacyLedgerTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    path_ = Path("ledger.sqlite");
  }
  std::string path_;
};

TEST_F(PrivacyLedgerTest, RefusesTheReportThatWouldExceedTheTotalAndRecordsNothing) {
  auto ledger = PrivacyLedger::Open(path_, 1.0).value();
  for (int round = 0; round < 10; ++round) {  // ten charges of 0.1 fit 1.0 despite rounding
    ASSERT_TRUE(ledger.Charge("fedsel-adult", static_cast<std::uint64_t>(round), 0.1, "r").ok());
  }
  EXPECT_NEAR(ledger.spent(), 1.0, 1e-12);
  const Status refused = ledger.Charge("fedsel-adult", 10, 0.1, "r10");
  EXPECT_EQ(refused.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.error().find("refused"), std::string::npos) << refused.error();
  EXPECT_NE(refused.error().find("left"), std::string::npos) << refused.error();
  EXPECT_EQ(ledger.reports(), 10u);
  EXPECT_FALSE(ledger.Find("fedsel-adult", 10));
}

TEST_F(PrivacyLedgerTest, SurvivesReopeningAndKeepsItsTotal) {
  {
    auto ledger = PrivacyLedger::Open(path_, 4.0).value();
    ASSERT_TRUE(ledger.Charge("t", 1, 3.0, std::string("\0\x01\x02", 3)).ok());
  }
  {
    auto again = PrivacyLedger::Open(path_, 4.0).value();
    EXPECT_DOUBLE_EQ(again.spent(), 3.0);
    EXPECT_DOUBLE_EQ(again.remaining(), 1.0);
    EXPECT_EQ(again.Find("t", 1), std::string("\0\x01\x02", 3));  // bytes kept exactly
    EXPECT_FALSE(again.Charge("t", 2, 1.5, "x").ok());
  }
  // The total cannot be raised by reopening with another one.
  const auto raised = PrivacyLedger::Open(path_, 100.0);
  ASSERT_FALSE(raised.ok());
  EXPECT_NE(raised.error().find("cannot be changed"), std::string::npos) << raised.error();
}

TEST_F(PrivacyLedgerTest, AnOpenLedgerIsHeldByOneHolderAtATime) {
  {
    auto first = PrivacyLedger::Open(path_, 2.0).value();
    ASSERT_TRUE(first.Charge("t", 1, 1.0, "a").ok());
    // A second holder (here in the same process; another process alike) is
    // refused rather than spending the same budget behind the first's back.
    const auto second = PrivacyLedger::Open(path_, 2.0);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.error().find("in use"), std::string::npos) << second.error();
    EXPECT_TRUE(first.Charge("t", 2, 1.0, "b").ok());  // the first is unaffected
  }
  // Closed, it opens again, with both charges.
  auto again = PrivacyLedger::Open(path_, 2.0).value();
  EXPECT_DOUBLE_EQ(again.spent(), 2.0);
}

TEST_F(PrivacyLedgerTest, ASecondReportForTheSameRoundIsRefusedTheFirstCanBeResent) {
  auto ledger = PrivacyLedger::Open(path_, 10.0).value();
  ASSERT_TRUE(ledger.Charge("t", 5, 1.0, "first").ok());
  const Status again = ledger.Charge("t", 5, 1.0, "second");
  EXPECT_EQ(again.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(again.error().find("already reported"), std::string::npos) << again.error();
  EXPECT_EQ(ledger.Find("t", 5), "first");
  EXPECT_TRUE(ledger.Charge("other-task", 5, 1.0, "x").ok());  // rounds are per task
  EXPECT_DOUBLE_EQ(ledger.spent(), 2.0);
}

TEST_F(PrivacyLedgerTest, BadInputsAreClearErrors) {
  EXPECT_FALSE(PrivacyLedger::Open(path_, 0).ok());
  EXPECT_FALSE(PrivacyLedger::Open(path_, -1).ok());
  EXPECT_FALSE(PrivacyLedger::Open((dir_ / "no" / "such" / "dir.sqlite").string(), 1).ok());
  auto ledger = PrivacyLedger::Open(path_, 1e6).value();  // LDP-FL-sized totals are fine
  EXPECT_EQ(ledger.Charge("t", 1, -0.5, "x").code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ledger.Charge("t", 1, std::nan(""), "x").ok());
  EXPECT_EQ(ledger.reports(), 0u);
  // A file that is not a database.
  const std::string junk = (dir_ / "junk").string();
  {
    std::FILE* f = std::fopen(junk.c_str(), "w");
    std::fputs("not an SQLite database, only text of some length", f);
    std::fclose(f);
  }
  const auto opened = PrivacyLedger::Open(junk, 1);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.error().find(junk), std::string::npos) << opened.error();
}

TEST_F(PrivacyLedgerTest, AccountsHaveTheirOwnBudgetsAndOneCallChargesMany) {
  auto ledger = PrivacyLedger::Open(path_, 1.0).value();
  using E = PrivacyLedger::Entry;
  const std::vector<E> first = {
      {"u1", "t", 0, 0.6, "a"}, {"u2", "t", 0, 0.6, "b"}, {"u1", "t", 0, 0.1, "dup"}};
  const auto v = ledger.ChargeMany(first);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(v[0].ok());
  EXPECT_TRUE(v[1].ok());  // u2's budget is its own
  EXPECT_NE(v[2].error().find("already reported"), std::string::npos) << v[2].error();
  EXPECT_DOUBLE_EQ(ledger.spent("u1"), 0.6);
  EXPECT_DOUBLE_EQ(ledger.spent("u2"), 0.6);
  EXPECT_DOUBLE_EQ(ledger.spent(), 0.0);  // the single-device account is untouched
  // u1 cannot spend 0.6 again; u3 can; the refusal names the account.
  const std::vector<E> second = {{"u1", "t", 1, 0.6, "c"}, {"u3", "t", 1, 0.6, "d"}};
  const auto w = ledger.ChargeMany(second);
  EXPECT_NE(w[0].error().find("refused"), std::string::npos) << w[0].error();
  EXPECT_NE(w[0].error().find("u1"), std::string::npos) << w[0].error();
  EXPECT_TRUE(w[1].ok());
  EXPECT_FALSE(ledger.Find("u1", "t", 1));
  EXPECT_EQ(ledger.Find("u3", "t", 1), "d");
  EXPECT_EQ(ledger.Find("u1", "t", 0), "a");
  EXPECT_EQ(ledger.reports(), 3u);
}

// A disk whose fdatasync starts failing: no charge returns as made (a
// charge that returned is on disk, synchronous=FULL).
TEST_F(PrivacyLedgerTest, ADiskThatStopsSyncingRefusesEveryCharge) {
  testing::FailingSyncVfs disk(/*failing=*/false);
  auto ledger = PrivacyLedger::Open(path_, 1.0).value();
  ASSERT_TRUE(ledger.Charge("t", 0, 0.1, "r").ok());
  disk.fail(true);
  for (std::uint64_t round = 1; round < 4; ++round) {
    EXPECT_EQ(ledger.Charge("t", round, 0.1, "r").code(), ErrorCode::kIo) << round;
  }
  EXPECT_GE(disk.failed(), 3);
}

}  // namespace
}  // namespace fedldp
