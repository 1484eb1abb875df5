// `fedldp reproduce frontier` as a library call: its checks, the --quick
// grid, and a stop that writes nothing. (The CLI test runs the whole
// --quick frontier with its files and figures.)
#include "fedldp/sim/frontier_reproduction.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stop_token>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using FrontierReproductionTest = testing::TempDirTest;

TEST_F(FrontierReproductionTest, ValidateSaysWhatIsWrongAndQuickIsSmall) {
  FrontierReproductionConfig c;
  c.out = Path("out");
  EXPECT_TRUE(c.Validate().ok());
  EXPECT_EQ(c.Frontier().epsilons, (std::vector<double>{0.5, 1, 2, 4, 8}));
  EXPECT_EQ(c.Frontier().tuning.splits, 2);
  c.quick = true;
  EXPECT_EQ(c.Frontier().epsilons, (std::vector<double>{1, 4}));
  EXPECT_EQ(c.Frontier().cv.folds, 2);
  ASSERT_TRUE(c.Frontier().grid.has_value());
  EXPECT_EQ(c.Frontier().grid->learning_rates.size() * c.Frontier().grid->batch_fractions.size(),
            4u);
  auto wrong = [&](auto change) {
    FrontierReproductionConfig w = c;
    change(w);
    return w.Validate().error();
  };
  EXPECT_EQ(wrong([](auto& w) { w.folds = 1; }),
            "folds must be a whole number from 2 to 100, got 1");
  EXPECT_EQ(
      wrong([](auto& w) { w.delta = 1; }),
      "delta must be in [1e-12, 1) (below 1e-12 the accountants' rounding would matter), got 1");
  EXPECT_EQ(wrong([](auto& w) { w.out.clear(); }), "out must name a folder");
  // Data it cannot load is refused before anything is written.
  FrontierReproductionConfig unknown = c;
  unknown.dataset = "nope";
  unknown.out = Path("never");
  const auto refused = ReproduceFrontier(unknown);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("unknown dataset 'nope'"), std::string::npos) << refused.error();
  EXPECT_FALSE(std::filesystem::exists(Path("never")));
}

TEST_F(FrontierReproductionTest, AStopAfterTheNonPrivateRowWritesNothing) {
  FrontierReproductionConfig c;
  c.out = Path("out");
  c.quick = true;
  c.threads = 1;
  std::stop_source stop;
  std::vector<std::string> rows;
  FrontierReproductionObserver observer;
  observer.progress = [&](std::size_t, std::size_t total, const std::string& what) {
    EXPECT_EQ(total, 1u + 6 * 2 * 2);  // np, then 6 methods x 2 eps x local/shuffled
    rows.push_back(what);
    stop.request_stop();
  };
  const auto r = ReproduceFrontier(c, observer, stop.get_token());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->stopped);
  EXPECT_EQ(rows, std::vector<std::string>{"np"});
  EXPECT_TRUE(r->frontier.rows.empty());
  EXPECT_FALSE(std::filesystem::exists(c.out + "/frontier.csv"));
  EXPECT_FALSE(std::filesystem::exists(c.out + "/summary.md"));
}

}  // namespace
}  // namespace fedldp
