// A figure's files and images: names and titles with quotes or commas in
// them are drawn, not left to break the gnuplot script.
#include "fedldp/sim/figure.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using FigureTest = testing::TempDirTest;

TEST_F(FigureTest, QuotesInTitlesAndNamesAreDrawn) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  Figure f;
  f.id = "quotes";
  f.title = "mnist, the paper's CNN: 'shuffled'";
  f.xlabel = "central eps (the clients')";
  f.ylabel = "test accuracy (%)";
  f.log_x = true;
  f.series = {{"privunitg, the 'exact' one", {{1, 50, 1}, {8, 90, 2}}, false},
              {"majority class", {{0.5, 11.35, 0}, {8, 11.35, 0}}, true}};
  const auto drawn = WriteFigure(f, dir_.string());
  ASSERT_TRUE(drawn.ok()) << drawn.error();
  EXPECT_EQ(*drawn, "");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "quotes.png"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "quotes.svg"));
}

}  // namespace
}  // namespace fedldp
