// The frontier: one row per (method, mode, eps), honest totals, the
// Gaussian refused the shuffler, the references beside.
#include "fedldp/sim/frontier.h"

#include <gtest/gtest.h>

#include "testing/synthetic.h"

namespace fedldp {
namespace {

TEST(RunFrontier, EveryRowSpendsAtMostItsTargetBesideTheReferences) {
  const Dataset data = testing::SmallSynthetic(3000);
  FrontierConfig config;
  config.methods = {ParseFedSelVariant("privunitg").value(),
                    ParseFedSelVariant("gaussian").value()};
  config.epsilons = {1, 8};
  config.cv = {1, 2, 3};
  config.tuning.splits = 1;
  FedSelGrid grid;
  grid.learning_rates = {1, 4};
  grid.batch_fractions = {0.05};
  config.grid = grid;
  ThreadPool pool(2);
  std::size_t calls = 0;
  const auto f =
      RunFrontier(config, data, pool, [&](std::size_t done, std::size_t total, const std::string&) {
        ++calls;
        EXPECT_LE(done, total);
      }).value();
  ASSERT_EQ(f.rows.size(), 8u);  // 2 methods x 2 eps x {local, shuffled}
  EXPECT_EQ(calls, 9u);          // and the non-private model
  EXPECT_GT(f.nonprivate.cv.MeanAccuracy(), f.majority + 0.1);
  EXPECT_EQ(f.nonprivate.chosen.size(), 2u);
  for (const FrontierRow& r : f.rows) {
    SCOPED_TRACE(r.method + (r.shuffled ? " shuffled " : " local ") +
                 std::to_string(r.target_epsilon));
    if (r.shuffled && r.method == "gaussian") {
      EXPECT_NE(r.skipped.find("no amplification"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(r.skipped.empty()) << r.skipped;
    EXPECT_EQ(r.cv.folds.size(), 2u);
    EXPECT_LE(r.total_epsilon, r.target_epsilon * (1 + 1e-9));
    if (r.shuffled) {
      EXPECT_GE(r.local_epsilon, r.target_epsilon * (1 - 1e-9));  // never less than local
      EXPECT_EQ(r.total_delta, 1e-6);
    } else {
      EXPECT_DOUBLE_EQ(r.total_epsilon, r.target_epsilon);
      EXPECT_EQ(r.total_delta, r.method == "gaussian" ? 1e-6 : 0.0);
    }
  }
  // PrivUnitG at eps 8 learns on this task.
  EXPECT_TRUE(f.rows[1].learned);
  EXPECT_EQ(f.rows[1].method, "privunitg");
  EXPECT_EQ(f.rows[1].target_epsilon, 8);
}

TEST(FrontierConfig, RefusesWhatCannotRun) {
  FrontierConfig c;
  EXPECT_TRUE(c.Validate().ok());
  c.methods = {ParseFedSelVariant("np").value()};
  EXPECT_NE(c.Validate().error().find("not private"), std::string::npos);
  c.methods = {ParseFedSelVariant("pm").value()};
  c.methods[0].control = true;  // parts that make no variant
  EXPECT_NE(c.Validate().error().find("no FedSel variant"), std::string::npos);
  c = {};
  c.epsilons = {0};
  EXPECT_FALSE(c.Validate().ok());
  c = {};
  c.local = c.shuffled = false;
  EXPECT_FALSE(c.Validate().ok());
  c = {};
  c.delta = 1;
  EXPECT_FALSE(c.Validate().ok());
}

}  // namespace
}  // namespace fedldp
