#include "figure.h"

#include <sstream>

#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>

#include "experiment.h"

namespace fedldp::cli {

namespace {

// A series name as one CSV field and one gnuplot string: no separators, no
// quotes (a comma in a name would split its rows and lose the series).
std::string Field(std::string name) {
  for (char& c : name) {
    if (c == ',' || c == '\'' || c == '"' || c == '\n') c = ' ';
  }
  return name;
}

}  // namespace

bool WriteFigure(const Figure& f, const std::string& dir, std::ostream& log) {
  const std::string stem = dir + "/" + f.id;
  {
    std::ostringstream csv;
    csv << "series,x,mean,sd\n";
    for (const auto& s : f.series) {
      for (const auto& p : s.points)
        csv << Field(s.name) << "," << p.x << "," << p.mean << "," << p.sd << "\n";
    }
    ReplaceOut(stem + ".csv", csv.str());
  }
  {
    std::ostringstream gp;
    gp << "# " << f.title << "\n"
       << "set terminal pngcairo size 900,600 font ',11'\n"
       << "set output '" << f.id << ".png'\n"
       << "set title '" << f.title << "'\n"
       << "set xlabel '" << f.xlabel << "'\nset ylabel '" << f.ylabel << "'\n"
       << "set key outside right\nset grid\nset datafile separator ','\n"
       << (f.log_x ? "set logscale x\n" : "");
    gp << "plot ";
    for (std::size_t i = 0; i < f.series.size(); ++i) {
      const auto& s = f.series[i];
      gp << (i ? ", \\\n     " : "") << "'" << f.id << ".csv' using 2:(stringcolumn(1) eq '"
         << Field(s.name) << "' ? $3 : 1/0)" << (s.reference ? "" : ":4")
         << (s.reference ? " with lines dashtype 2 lw 2" : " with yerrorlines lw 2") << " title '"
         << Field(s.name) << "'";
    }
    gp << "\n";
    ReplaceOut(stem + ".gp", gp.str());
  }
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    log << "  gnuplot not found: kept " << stem << ".csv and " << stem << ".gp (no PNG)\n";
    return false;
  }
  if (dir.find('\'') != std::string::npos) {
    log << "  output folder contains a quote: run gnuplot on " << stem << ".gp yourself\n";
    return false;
  }
  const std::string command =
      "cd '" + dir + "' && gnuplot '" + f.id + ".gp' 2> '" + f.id + ".gnuplot.log'";
  if (std::system(command.c_str()) != 0) {
    log << "  gnuplot failed on " << stem << ".gp (see " << stem << ".gnuplot.log)\n";
    return false;
  }
  std::remove((stem + ".gnuplot.log").c_str());
  return true;
}

}  // namespace fedldp::cli
