#include "fedldp/sim/figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/files.h"

namespace fedldp {

namespace {

// A series name as one CSV field and one gnuplot string: no separators, no
// quotes (a comma in a name would split its rows and lose the series).
std::string Field(std::string name) {
  for (char& c : name) {
    if (c == ',' || c == '\'' || c == '"' || c == '\n') c = ' ';
  }
  return name;
}

// `text` as a gnuplot single-quoted string: a quote doubled (a title may
// say "the paper's CNN"), a line break a space.
std::string Quoted(std::string_view text) {
  std::string s = "'";
  for (const char c : text) {
    if (c == '\'') {
      s += "''";
    } else {
      s += c == '\n' ? ' ' : c;
    }
  }
  return s + "'";
}

// Measured series take Okabe & Ito's colours (told apart with any colour
// vision; their yellow darkened and last, for contrast on white); dashed
// references take black, grey and darker hues, so a reference never shares a
// colour with a measured series unless there are more than seven of either.
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#B8A000"};
constexpr const char* kReferenceColours[] = {"#000000", "#999999", "#8C510A", "#5E3C99",
                                             "#1B7837", "#B2182B", "#4D4D4D"};
// Filled circle, square, triangles, diamond, then the open shapes: a series
// stays recognisable in grey print too.
constexpr int kPoints[] = {7, 5, 9, 11, 13, 6, 4, 8, 10, 12, 1, 2, 3};
// And a dash pattern of its own (the first solid), so that two series whose
// lines coincide still show both; references keep the long dash "2".
constexpr const char* kDashes[] = {"1",      "(8,3)", "(2,2)",        "(8,3,2,3)",
                                   "(14,4)", "(4,4)", "(8,3,2,3,2,3)"};

// The i-th measured series' style, or the i-th reference's.
std::string Style(std::size_t i, bool reference) {
  std::ostringstream s;
  s << (reference ? "with lines dashtype 2 lw 2" : "with yerrorlines lw 2") << " lc rgb '"
    << (reference ? kReferenceColours[i % std::size(kReferenceColours)]
                  : kColours[i % std::size(kColours)])
    << "'";
  if (!reference) {
    s << " dt " << kDashes[i % std::size(kDashes)] << " pt " << kPoints[i % std::size(kPoints)]
      << " ps 1.2";
  }
  return s.str();
}

// Every x a measured series has (at most 12 of them): a tick at each, so a
// reader finds each budget plotted (a log axis ticked only 0.1, 1, 10).
std::vector<double> PlottedX(const Figure& f) {
  std::vector<double> xs;
  for (const Series& s : f.series) {
    if (s.reference) continue;
    for (const Point& p : s.points) xs.push_back(p.x);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  return xs;
}

std::string XTics(const Figure& f) {
  const std::vector<double> xs = PlottedX(f);
  if (xs.empty() || xs.size() > 12) return "";
  std::ostringstream s;
  s << "set xtics (";
  for (std::size_t i = 0; i < xs.size(); ++i) s << (i ? ", " : "") << "'" << xs[i] << "' " << xs[i];
  s << ")\n";
  // Room on either side for the dodged points (below) and the ticks' labels.
  if (f.log_x && xs.front() > 0) {
    s << "set xrange [" << xs.front() / 1.6 << ":" << xs.back() * 1.6 << "]\n";
  } else {
    const double pad =
        xs.size() > 1 ? 0.08 * (xs.back() - xs.front()) : std::max(1.0, 0.5 * std::abs(xs.front()));
    s << "set xrange [" << xs.front() - pad << ":" << xs.back() + pad << "]\n";
  }
  return s.str();
}

// A reference's one value when all its points share it (a majority class,
// a non-private model): drawn as a line across the whole plot, not only
// between the x its points happen to have (one budget: no line at all).
std::optional<double> ConstantY(const Series& s) {
  if (!s.reference || s.points.empty()) return std::nullopt;
  for (const Point& p : s.points) {
    if (p.mean != s.points.front().mean) return std::nullopt;
  }
  return s.points.front().mean;
}

// The x column for the i-th of n measured series: shifted a little to the
// side (a few percent on a log axis, a share of the range on a linear one)
// so that no series' error bars hide another's; the ticks mark the true x.
std::string DodgedX(const Figure& f, std::size_t i, std::size_t n) {
  const double offset = static_cast<double>(i) - (static_cast<double>(n) - 1) / 2;
  std::ostringstream s;
  if (f.log_x) {
    s << "($2*" << std::exp(0.025 * offset) << ")";
  } else {
    const std::vector<double> xs = PlottedX(f);
    const double range = xs.size() > 1 ? xs.back() - xs.front() : 1;
    s << "($2+" << 0.006 * range * offset << ")";
  }
  return s.str();
}

// The gnuplot script drawing `f` from ID.csv into ID.png, .svg and .pdf.
std::string GnuplotScript(const Figure& f) {
  std::ostringstream gp;
  gp << "# " << f.title << "\n"
     << "set encoding utf8\n"
     << "set terminal pngcairo size 900,600 font ',11'\n"
     << "set output '" << f.id << ".png'\n"
     << "set title " << Quoted(f.title) << "\n"
     << (f.error_bars.empty() ? ""
                              : "set label 1 '" + Field(f.error_bars) +
                                    "' at screen 0.01, screen 0.02 left font ',9'\n"
                                    "set bmargin 5\n")
     << "set xlabel " << Quoted(f.xlabel) << "\nset ylabel " << Quoted(f.ylabel) << "\n"
     << "set key outside right\nset grid\nset datafile separator ','\n"
     << (f.log_x ? "set logscale x\n" : "") << (f.log_y ? "set logscale y\n" : "") << XTics(f);
  gp << "plot ";
  std::size_t measured = 0, references = 0;
  const std::size_t all_measured = static_cast<std::size_t>(std::count_if(
      f.series.begin(), f.series.end(), [](const Series& s) { return !s.reference; }));
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    const auto& s = f.series[i];
    const std::size_t k = s.reference ? references++ : measured++;
    gp << (i ? ", \\\n     " : "");
    if (const auto y = ConstantY(s)) {
      gp << std::setprecision(10) << *y << std::setprecision(6) << " " << Style(k, true)
         << " title '" << Field(s.name) << "'";
      continue;
    }
    gp << "'" << f.id << ".csv' using "
       << (s.reference || !f.dodge ? "2" : DodgedX(f, k, all_measured)) << ":(stringcolumn(1) eq '"
       << Field(s.name) << "' ? $3 : 1/0)" << (s.reference ? "" : ":4") << " "
       << Style(k, s.reference) << " title '" << Field(s.name) << "'";
  }
  // The same plot as SVG and PDF, for papers and slides.
  gp << "\nset terminal svg size 900,600 dynamic font 'sans,11'\n"
     << "set output '" << f.id << ".svg'\nreplot\n"
     << "set terminal pdfcairo size 9in,6in font ',11'\n"
     << "set output '" << f.id << ".pdf'\nreplot\nunset output\n";
  return gp.str();
}

}  // namespace

Result<std::string> WriteFigure(const Figure& f, const std::string& dir) {
  const std::string stem = dir + "/" + f.id;
  auto replace = [](const std::string& path, const std::string& text) {
    return WriteFileAtomically(path, text, 0644, /*overwrite=*/true);
  };
  {
    std::ostringstream csv;
    csv << "series,x,mean,sd\n";
    for (const auto& s : f.series) {
      for (const auto& p : s.points)
        csv << Field(s.name) << "," << p.x << "," << p.mean << "," << p.sd << "\n";
    }
    if (Status s = replace(stem + ".csv", csv.str()); !s.ok()) return Error{s.error(), s.code()};
  }
  if (Status s = replace(stem + ".gp", GnuplotScript(f)); !s.ok()) {
    return Error{s.error(), s.code()};
  }
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    return "gnuplot not found: kept " + stem + ".csv and " + stem + ".gp (no images)";
  }
  if (dir.find('\'') != std::string::npos) {
    return "the output folder contains a quote: run gnuplot on " + stem + ".gp yourself";
  }
  const std::string command =
      "cd '" + dir + "' && gnuplot '" + f.id + ".gp' 2> '" + f.id + ".gnuplot.log'";
  if (std::system(command.c_str()) != 0) {
    return "gnuplot failed on " + stem + ".gp (see " + stem + ".gnuplot.log)";
  }
  std::remove((stem + ".gnuplot.log").c_str());
  return std::string();
}

}  // namespace fedldp
