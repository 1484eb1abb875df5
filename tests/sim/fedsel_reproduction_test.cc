// `fedldp reproduce fedsel` as a library call: its checks, the observer's
// order, and a stop that keeps the finished configurations in runs.jsonl
// and writes no half table. (The CLI test runs the whole --quick
// reproduction with its figures.)
#include "fedldp/sim/fedsel_reproduction.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stop_token>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using FedSelReproductionTest = testing::TempDirTest;

TEST_F(FedSelReproductionTest, ValidateSaysWhatIsWrongAndARefusalTouchesNothing) {
  FedSelReproductionConfig c;
  c.out = Path("out");
  EXPECT_TRUE(c.Validate().ok());
  c.epsilon = 0;
  EXPECT_NE(c.Validate().error().find("epsilon"), std::string::npos);
  c.epsilon = 2;
  c.out.clear();
  EXPECT_EQ(c.Validate().error(), "out must name a folder");
  c.out = Path("never");
  c.data_dir = Path("no-such-folder");
  const auto refused = ReproduceFedSel(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("cannot open"), std::string::npos) << refused.error();
  EXPECT_FALSE(std::filesystem::exists(Path("never")));
}

TEST_F(FedSelReproductionTest, AStopAfterTheFirstRowKeepsItsRunsAndWritesNoTable) {
  FedSelReproductionConfig c;
  c.out = Path("out");
  c.quick = true;
  c.threads = 1;
  std::stop_source stop;
  std::vector<std::string> rows;
  std::string summary;
  bool table = false;
  FedSelReproductionObserver observer;
  observer.started = [&](const std::string& s) { summary = s; };
  observer.row = [&](const std::string& row) {
    rows.push_back(row);
    stop.request_stop();
  };
  observer.table3 = [&](const FedSelReproduction&) { table = true; };
  const auto r = ReproduceFedSel(c, observer, stop.get_token());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->stopped);
  EXPECT_EQ(rows, std::vector<std::string>{"syn-L-0.01-0.9/logistic"});
  EXPECT_NE(summary.find("eps = 2, gradients clip, 1 x 2-fold CV"), std::string::npos) << summary;
  EXPECT_FALSE(table);
  // The row's nine configurations: np, pm, uniform-pm and {exp, pe, ps}-pm(-c).
  EXPECT_EQ(testing::LineCount(c.out + "/runs.jsonl"), 9u);
  EXPECT_FALSE(std::filesystem::exists(c.out + "/table3.md"));
  EXPECT_TRUE(r->table3.empty());
  EXPECT_TRUE(r->figures.empty());
}

}  // namespace
}  // namespace fedldp
