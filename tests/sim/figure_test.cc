// A figure's files and images: names and titles with quotes or commas in
// them are drawn, not left to break the gnuplot script.
#include "fedldp/sim/figure.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

using FigureTest = testing::TempDirTest;

// An empty figure of accuracy against a log x axis.
Figure AccuracyFigure(const char* id, const char* title, const char* xlabel) {
  Figure f;
  f.id = id;
  f.title = title;
  f.xlabel = xlabel;
  f.ylabel = "test accuracy (%)";
  f.log_x = true;
  return f;
}

TEST_F(FigureTest, QuotesInTitlesAndNamesAreDrawn) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  Figure f =
      AccuracyFigure("quotes", "mnist, the paper's CNN: 'shuffled'", "central eps (the clients')");
  f.series = {{"privunitg, the 'exact' one", {{1, 50, 1}, {8, 90, 2}}, false},
              {"majority class", {{0.5, 11.35, 0}, {8, 11.35, 0}}, true}};
  const auto drawn = WriteFigure(f, dir_.string());
  ASSERT_TRUE(drawn.ok()) << drawn.error();
  EXPECT_EQ(*drawn, "");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "quotes.png"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "quotes.svg"));
}

// As a reviewer reads a figure (issue 43, item 7): a tick at every x a
// series has (a log axis ticked only 0.1, 1, 10), each measured series its
// own marker and dash, drawn a little to the side of the others so that no
// error bar hides another, while the data file keeps the true x.
TEST_F(FigureTest, EveryBudgetIsTickedAndNoSeriesHidesAnother) {
  Figure f = AccuracyFigure("budgets", "frontier", "eps per client, total");
  for (const char* name : {"a", "b", "c"}) {
    f.series.push_back(
        {name, {{0.5, 60, 2}, {1, 70, 2}, {2, 75, 2}, {4, 78, 1}, {8, 80, 1}}, false});
  }
  f.series.push_back({"majority class", {{0.5, 50, 0}, {8, 50, 0}}, true});
  ASSERT_TRUE(WriteFigure(f, dir_.string()).ok());
  std::ifstream in(dir_ / "budgets.gp");
  const std::string gp((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(gp.find("set xtics ('0.5' 0.5, '1' 1, '2' 2, '4' 4, '8' 8)"), std::string::npos) << gp;
  std::set<std::string> dashes, points, xs;
  for (std::size_t at = gp.find("yerrorlines"); at != std::string::npos;
       at = gp.find("yerrorlines", at + 1)) {
    const std::string line = gp.substr(at, gp.find('\n', at) - at);
    dashes.insert(line.substr(line.find(" dt "), line.find(" pt ") - line.find(" dt ")));
    points.insert(line.substr(line.find(" pt "), 6));
  }
  for (std::size_t at = gp.find("using ($2*"); at != std::string::npos;
       at = gp.find("using ($2*", at + 1)) {
    xs.insert(gp.substr(at, gp.find(')', at) - at));
  }
  EXPECT_EQ(dashes.size(), 3u) << gp;
  EXPECT_EQ(points.size(), 3u) << gp;
  EXPECT_EQ(xs.size(), 3u) << gp;  // three different shifts; the middle one is x itself
  EXPECT_NE(gp.find("using ($2*1)"), std::string::npos) << gp;
  std::ifstream csv(dir_ / "budgets.csv");
  const std::string data((std::istreambuf_iterator<char>(csv)), {});
  EXPECT_NE(data.find("a,0.5,60,2"), std::string::npos) << data;  // the true x
}

// A reference of one value (the majority class, a non-private model) is a
// line across the whole plot, also when the measured series have one budget
// (a CNN frontier point at one eps drew its references as single points:
// no line); a reference that varies keeps its points.
TEST_F(FigureTest, AConstantReferenceSpansThePlot) {
  Figure f = AccuracyFigure("one", "one budget", "central eps");
  f.series = {{"privunitg", {{3, 90, 0.3}}, false},
              {"majority class", {{3, 11.35, 0}}, true},
              {"varies", {{1, 40, 0}, {3, 45, 0}}, true}};
  const auto drawn = WriteFigure(f, dir_.string());
  ASSERT_TRUE(drawn.ok()) << drawn.error();
  std::ifstream in(dir_ / "one.gp");
  const std::string gp((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(gp.find("11.35 with lines dashtype 2"), std::string::npos) << gp;
  EXPECT_NE(gp.find("? $3 : 1/0) with lines dashtype 2"), std::string::npos) << gp;  // varies
  EXPECT_NE(gp.find("set xrange [1.875:4.8"), std::string::npos) << gp;
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    EXPECT_EQ(*drawn, "");
    EXPECT_TRUE(std::filesystem::exists(dir_ / "one.png"));
  }
  f.log_x = false;  // one x on a linear axis: a range around it
  ASSERT_TRUE(WriteFigure(f, dir_.string()).ok());
  std::ifstream again(dir_ / "one.gp");
  const std::string linear((std::istreambuf_iterator<char>(again)), {});
  EXPECT_NE(linear.find("set xrange [1.5:4.5]"), std::string::npos) << linear;
}

}  // namespace
}  // namespace fedldp
