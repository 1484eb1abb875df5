// `fedldp reproduce ldpfl` as a library call: its checks, the observer's
// counter, and a stop that keeps every finished run for the next resume.
// (The CLI test runs the whole --quick reproduction with its figures.)
#include "fedldp/sim/ldpfl_reproduction.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stop_token>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using LdpFlReproductionTest = testing::TempDirTest;

LdpFlReproductionConfig Quick(const std::string& out) {
  LdpFlReproductionConfig c;
  c.data_dir = FEDLDP_MNIST_DIR;
  c.out = out;
  c.quick = true;
  c.rounds = 1;
  c.figures = false;  // Table 1: the noise-free run and four private ones
  c.threads = 1;
  return c;
}

TEST_F(LdpFlReproductionTest, ValidateSaysWhatIsWrong) {
  auto wrong = [&](auto change) {
    LdpFlReproductionConfig c = Quick(Path("out"));
    change(c);
    return c.Validate().error();
  };
  EXPECT_EQ(wrong([](auto&) {}), "");
  EXPECT_EQ(wrong([](auto& c) { c.dataset = ImageDataset::kCifar10; }),
            "dataset must be mnist or fmnist (the paper's two)");
  EXPECT_EQ(wrong([](auto& c) { c.out.clear(); }), "out must name a folder");
  EXPECT_EQ(wrong([](auto& c) { c.repeats = 0; }),
            "repeats must be a whole number from 1 to 1000, got 0");
  EXPECT_EQ(wrong([](auto& c) { c.rounds = 0; }),
            "rounds must be a whole number from 1 to 100000, got 0");
  EXPECT_EQ(wrong([](auto& c) { c.batch = 0; }),
            "batch size must be a whole number from 1 to 100000, got 0");
  EXPECT_EQ(wrong([](auto& c) { c.batch = std::size_t{1} << 63; }),
            "batch size must be a whole number from 1 to 100000, got 9223372036854775808");
  // A refused configuration or missing data touches nothing.
  LdpFlReproductionConfig missing = Quick(Path("never"));
  missing.data_dir = Path("no-such-folder");
  const auto refused = ReproduceLdpFl(missing);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(Path("never")));
}

TEST_F(LdpFlReproductionTest, AStopKeepsTheFinishedRunsAndResumeTrainsTheRest) {
  const std::string dir = Path("out");
  std::stop_source stop;
  std::size_t finished = 0, rounds_seen = 0;
  std::string summary;
  LdpFlReproductionObserver observer;
  observer.started = [&](const std::string& s, std::size_t) { summary = s; };
  observer.round = [&](const LdpFlReproductionRun&, int, int) { ++rounds_seen; };
  observer.finished = [&](const LdpFlReproductionRun& run) {
    EXPECT_EQ(run.index, finished + 1);
    EXPECT_EQ(run.planned, 5u);
    ++finished;
    if (finished == 2) stop.request_stop();
  };
  const auto stopped = ReproduceLdpFl(Quick(dir), observer, stop.get_token());
  ASSERT_TRUE(stopped.ok()) << stopped.error();
  EXPECT_TRUE(stopped->stopped);
  EXPECT_EQ(stopped->trained, 2u);
  EXPECT_EQ(finished, 2u);
  EXPECT_EQ(rounds_seen, 2u);  // one round per run
  EXPECT_NE(summary.find("mnist (6000 train, 1000 test)"), std::string::npos) << summary;
  EXPECT_EQ(testing::LineCount(dir + "/runs.jsonl"), 2u);
  EXPECT_FALSE(std::filesystem::exists(dir + "/table1.md"));  // nothing half-done

  // Resumed, it trains the three runs left and writes the table.
  LdpFlReproductionConfig again = Quick(dir);
  again.resume = true;
  std::size_t resumed = 0;
  finished = 0;
  LdpFlReproductionObserver counter;
  counter.started = [&](const std::string&, std::size_t n) { resumed = n; };
  counter.finished = [&](const LdpFlReproductionRun& run) {
    EXPECT_EQ(run.planned, 3u);
    ++finished;
  };
  const auto rest = ReproduceLdpFl(again, counter);
  ASSERT_TRUE(rest.ok()) << rest.error();
  EXPECT_FALSE(rest->stopped);
  EXPECT_EQ(resumed, 2u);
  EXPECT_EQ(rest->resumed, 2u);
  EXPECT_EQ(rest->trained, 3u);
  EXPECT_EQ(finished, 3u);
  EXPECT_EQ(testing::LineCount(dir + "/runs.jsonl"), 5u);
  EXPECT_EQ(testing::LineCount(dir + "/table1.csv"), 3u);
  EXPECT_NE(rest->table1.find("| 5 | "), std::string::npos) << rest->table1;
  EXPECT_EQ(rest->privacy.size(), 2u);  // eps 5 and 10 at n = 10
  EXPECT_TRUE(std::filesystem::exists(dir + "/privacy.md"));
  EXPECT_TRUE(rest->figures.empty());
}

}  // namespace
}  // namespace fedldp
