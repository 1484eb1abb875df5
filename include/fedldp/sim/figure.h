// A figure as data: series of (x, mean, sd) points. Written as DIR/ID.csv,
// DIR/ID.gp (a gnuplot script) and, when gnuplot is installed, DIR/ID.png,
// DIR/ID.svg and DIR/ID.pdf. Every series has its own colour (Okabe & Ito's
// palette for colour-blind readers, then greys), its own point shape and its
// own dash pattern, and is drawn a little to the side of the others (a few
// percent of x) so that no error bar hides another; the x axis has a tick
// at every x plotted (up to 12), the data file the true x. Reference lines
// are dashed. Accuracies are drawn in percent.
#ifndef FEDLDP_SIM_FIGURE_H_
#define FEDLDP_SIM_FIGURE_H_

#include <string>
#include <vector>

#include "fedldp/base/status.h"

namespace fedldp {

struct Point {
  double x, mean, sd;
};

struct Series {
  std::string name;
  std::vector<Point> points;
  bool reference = false;  // drawn as a dashed line without error bars
};

struct Figure {
  std::string id;  // file stem, e.g. fig2f
  std::string title, xlabel, ylabel;
  bool log_x = false;
  std::vector<Series> series;
  // What the error bars are, printed under the plot, e.g. "error bars: +-1 sd
  // over 50 folds" ("": no line).
  std::string error_bars;
  // Last: the figures built before list the fields above in order.
  bool log_y = false;
  bool dodge = true;  // measured series a little to the side (curves without error bars: no)
};

// Writes DIR/ID.csv and DIR/ID.gp (an error if either cannot be written),
// then renders the images with gnuplot. The value is "" when they were
// rendered, else one sentence saying why not (no gnuplot, a quote in `dir`,
// gnuplot failed): the data and the script are there either way.
Result<std::string> WriteFigure(const Figure& figure, const std::string& dir);

}  // namespace fedldp

#endif  // FEDLDP_SIM_FIGURE_H_
