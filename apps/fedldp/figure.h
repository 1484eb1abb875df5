// A figure as data: series of (x, mean, sd) points. Written as DIR/ID.csv,
// DIR/ID.gp (a gnuplot script) and, when gnuplot is installed, DIR/ID.png,
// DIR/ID.svg and DIR/ID.pdf. Every series has its own colour (Okabe & Ito's
// palette for colour-blind readers, then greys) and its own point shape;
// reference lines are dashed. Accuracies are drawn in percent.
#ifndef FEDLDP_APPS_FEDLDP_FIGURE_H_
#define FEDLDP_APPS_FEDLDP_FIGURE_H_

#include <ostream>
#include <string>
#include <vector>

namespace fedldp::cli {

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
};

// Writes the files; returns false (after saying why on `log`) if the images
// could not be rendered. The CSV and the script are written regardless.
bool WriteFigure(const Figure& figure, const std::string& dir, std::ostream& log);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_FIGURE_H_
