// The accuracy-privacy frontier from Python: fedldp.reproduce_frontier, the
// `fedldp reproduce frontier` command's library call (linear model), on a
// named dataset or the user's own file, its rows as the command's records.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <fstream>
#include <optional>
#include <string>

#include "common.h"
#include "fedldp/base/units.h"
#include "fedldp/base/version.h"
#include "fedldp/sim/frontier_reproduction.h"

namespace fedldp::python {
namespace {

using RowCallback = std::function<void(std::size_t, std::size_t, const std::string&)>;

FrontierReproductionConfig FrontierConfigOf(const std::string& out, const std::string& dataset,
                                            const py::object& data, const std::string& label_column,
                                            bool quick, const py::object& repeats,
                                            const py::object& folds, double delta,
                                            std::uint64_t seed, const py::object& threads,
                                            bool figures) {
  FrontierReproductionConfig c;
  c.out = out;
  c.dataset = dataset;
  if (!data.is_none()) {
    if (!py::isinstance<py::str>(data) && !py::hasattr(data, "__fspath__")) {
      throw py::type_error("data must be a path (str or os.PathLike), not " + TypeName(data));
    }
    c.data_file = py::str(py::module_::import("os").attr("fspath")(data)).cast<std::string>();
  }
  c.label_column = label_column;
  c.quick = quick;
  c.repeats = static_cast<int>(CountArg(repeats, kRepeats));
  c.folds = static_cast<int>(CountArg(folds, kFolds));
  c.delta = delta;
  c.seed = seed;
  c.threads = static_cast<int>(CountArg(threads, kWorkerThreads));
  c.figures = figures;
  Check(c.Validate());
  return c;
}

// The rows as the command wrote them (DIR/frontier.jsonl): one layout.
py::list RowsWritten(const std::string& out) {
  py::list rows;
  std::ifstream in(out + "/frontier.jsonl");
  const py::object loads = py::module_::import("json").attr("loads");
  for (std::string line; std::getline(in, line);) rows.append(loads(line));
  return rows;
}

py::dict ReproduceFrontierPy(const std::string& out, const std::string& dataset,
                             const py::object& data, const std::string& label_column, bool quick,
                             const py::object& repeats, const py::object& folds, double delta,
                             std::uint64_t seed, const py::object& threads, bool figures,
                             const std::optional<RowCallback>& on_row) {
  const FrontierReproductionConfig c = FrontierConfigOf(
      out, dataset, data, label_column, quick, repeats, folds, delta, seed, threads, figures);
  FrontierReproductionObserver observer;
  if (on_row) {
    observer.progress = [&](std::size_t done, std::size_t total, const std::string& what) {
      py::gil_scoped_acquire acquire;
      (*on_row)(done, total, what);
    };
  }
  const FrontierReproduction r =
      Take(WithoutGil([&] { return ReproduceFrontier(c, observer, {}); }));
  py::dict d;
  d["version"] = std::string(Version());
  d["accuracy_unit"] = kAccuracyUnit;
  d["data"] = c.data_label();
  d["out"] = c.out;
  d["rows"] = RowsWritten(c.out);
  d["summary"] = r.summary;
  d["figure_notes"] = r.figure_notes;
  return d;
}

}  // namespace

void BindReproduce(py::module_& m) {
  m.def("reproduce_frontier", &ReproduceFrontierPy, py::arg("out"), py::kw_only(),
        py::arg("dataset") = "adult", py::arg("data") = py::none(), py::arg("label_column") = "",
        py::arg("quick") = false, py::arg("repeats") = 1, py::arg("folds") = 5,
        py::arg("delta") = 1e-6, py::arg("seed") = 1, py::arg("threads") = 0,
        py::arg("figures") = true, py::arg("on_row") = py::none(), R"doc(
`fedldp reproduce frontier` (the linear model): every method, local and
through the shuffler, at each total eps per client, tuned per fold on
validation rows carved from its training rows (nested CV), beside the
non-private model and the majority class; on `dataset` or on your own
binary file `data` (CSV or LIBSVM; label_column names a CSV's label, default
the last). Writes out/frontier.{csv,jsonl}, out/summary.md and the figures,
as the command does, and returns {"rows": the command's records (each with
its "privacy"), "summary", "data", "out", "figure_notes", ...}. quick: a
smoke run (eps {1, 4}, 1 x 2-fold CV, a 4-point grid). on_row(done, total,
what) is called after each row. The GIL is released while it runs.)doc");
}

}  // namespace fedldp::python
