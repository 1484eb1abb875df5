// A long job's runs.jsonl: what resume keeps, what it drops and trains
// again, and that nothing kept is lost when the file is reopened.
#include "fedldp/sim/run_journal.h"

#include <gtest/gtest.h>

#include <fstream>
#include <utility>

#include "fedldp/base/units.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using RunJournalTest = testing::TempDirTest;

nlohmann::ordered_json Record(const std::string& key, double accuracy) {
  nlohmann::ordered_json j;
  j["key"] = key;
  j["accuracy_unit"] = kAccuracyUnit;
  j["accuracy"] = accuracy;
  return j;
}

TEST_F(RunJournalTest, ResumeKeepsFinishedRunsAndDropsTornOrForeignLines) {
  const std::string path = Path("runs.jsonl");
  {
    auto opened = RunJournal::Open(path, /*resume=*/false);
    ASSERT_TRUE(opened.ok()) << opened.error();
    RunJournal journal = std::move(opened).value();
    ASSERT_TRUE(journal.Append(Record("a", 91.5)).ok());
    ASSERT_TRUE(journal.Append(Record("b", 12)).ok());
    EXPECT_EQ(journal.size(), 2u);
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"key\": \"c\", \"accuracy\": 0.5}\n";                     // no unit: an old build's
    out << "{\"key\": \"d\", \"accuracy_unit\": \"percent\", \"accur";  // torn by a kill
  }
  auto reopened = RunJournal::Open(path, /*resume=*/true);
  ASSERT_TRUE(reopened.ok()) << reopened.error();
  RunJournal resumed = std::move(reopened).value();
  EXPECT_EQ(resumed.size(), 2u);
  ASSERT_NE(resumed.Find("a"), nullptr);
  EXPECT_EQ((*resumed.Find("a"))["accuracy"].get<double>(), 91.5);
  EXPECT_EQ(resumed.Find("c"), nullptr);
  EXPECT_EQ(resumed.Find("d"), nullptr);
  EXPECT_EQ(testing::LineCount(path), 2u);  // the dropped lines are gone from the file too
  ASSERT_TRUE(resumed.Append(Record("c", 40)).ok());
  EXPECT_EQ(testing::LineCount(path), 3u);

  auto fresh = RunJournal::Open(path, /*resume=*/false);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->size(), 0u);
  EXPECT_EQ(testing::LineCount(path), 0u);
}

TEST_F(RunJournalTest, RefusesARecordWithoutAKeyAndAFolderItCannotWrite) {
  auto opened = RunJournal::Open(Path("runs.jsonl"), false);
  ASSERT_TRUE(opened.ok());
  RunJournal journal = std::move(opened).value();
  nlohmann::ordered_json keyless = Record("x", 1);
  keyless.erase("key");
  EXPECT_EQ(journal.Append(keyless).error(), "a journal record needs a string key");
  EXPECT_EQ(journal.size(), 0u);
  auto nowhere = RunJournal::Open(Path("missing/runs.jsonl"), false);
  ASSERT_FALSE(nowhere.ok());
  EXPECT_EQ(nowhere.code(), ErrorCode::kIo);
}

}  // namespace
}  // namespace fedldp
