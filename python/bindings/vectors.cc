// fedldp.VectorRandomizer: PrivUnitG, FastProjUnit and the baselines on
// numpy vectors, one report per row.
#include <pybind11/stl.h>

#include <vector>

#include "common.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp::python {
namespace {

// pybind11 does not take shared_ptr<const T> holders.
using Randomizer = std::shared_ptr<VectorRandomizer>;

py::object Randomize(const Randomizer& self, const py::object& x_arg, const py::object& rng_arg) {
  DoubleArray x = ArrayArgOf<double>(x_arg, "x");
  const std::size_t d = self->dimension();
  const Rows rows = CheckRows(x, d, "x");
  auto rng = ResolveRng(rng_arg);
  DoubleArray out(std::vector<py::ssize_t>(x.shape(), x.shape() + x.ndim()));
  auto in_view = View(x);
  auto out_view = MutableView(out);
  WithRng(rng, [&](Rng& r) {
    for (std::size_t i = 0; i < rows.rows; ++i) {
      self->Randomize(in_view.subspan(i * d, d), out_view.subspan(i * d, d), r);
    }
    return 0;
  });
  return LikeInput(out, x_arg);
}

// VectorRandomizer's docstring: the registered randomizers, one a line.
const char* VectorRandomizerDoc() {
  static const std::string doc = [] {
    std::string d =
        "A randomizer of whole vectors of `dimension` entries, (epsilon, delta)-LDP over\n"
        "the l2 ball of radius `clip`. A longer input is scaled onto the ball first\n"
        "(non-finite entries count as 0), so the guarantee holds for every input.\n"
        "Reports are unbiased estimates of the clipped input (FastProjUnit's shrink\n"
        "slightly: see `unbiased`). The randomizers (vector_randomizer_names()):\n";
    for (const VectorRandomizerKind* k : VectorRandomizerKinds()) {
      d += "  " + std::string(k->name) + ": " + std::string(k->summary) +
           (k->traits.needs_delta ? " (delta > 0)" : "") + (k->traits.takes_k ? " (k)" : "") +
           (k->traits.shared_seed ? " (public_seed)" : "") + "\n";
    }
    return d;
  }();
  return doc.c_str();
}

// The report as a client sends it: encode_sent, decode_sent, max_sent_bytes.
void BindSentBytes(py::class_<VectorRandomizer, Randomizer>& cls) {
  cls.def_property_readonly("max_sent_bytes", &VectorRandomizer::MaxSentBytes,
                            "The most bytes encode_sent returns (0: the report is its d "
                            "values).")
      .def(
          "encode_sent",
          [](const VectorRandomizer& self, const py::object& x_arg,
             const py::object& rng_arg) -> py::object {
            DoubleArray x = ArrayArgOf<double>(x_arg, "x");
            if (x.ndim() != 1 || static_cast<std::size_t>(x.shape(0)) != self.dimension()) {
              Raise("x must be a 1-D array of " + std::to_string(self.dimension()) + " values");
            }
            auto rng = ResolveRng(rng_arg);
            const auto sent = WithRng(rng, [&](Rng& r) { return self.EncodeSent(View(x), r); });
            if (!sent) return py::none();
            return py::bytes(*sent);
          },
          py::arg("x"), py::arg("rng") = py::none(),
          "The report of x as a client sends it, as bytes (privunitg-seed: 16), or None for a "
          "randomizer whose report is its d values.")
      .def(
          "decode_sent",
          [](const VectorRandomizer& self, const py::bytes& sent) {
            const std::string bytes = sent;
            DoubleArray out(static_cast<py::ssize_t>(self.dimension()));
            Check(self.DecodeSent(bytes, MutableView(out)));
            return out;
          },
          py::arg("sent"),
          "The d values of bytes encode_sent returned; ValueError if they are not such a report.");
}

}  // namespace

void BindVectors(py::module_& m) {
  m.def("vector_randomizer_names", &VectorMechanismNames,
        "Names VectorRandomizer accepts, in the registry's order.");
  auto cls = py::class_<VectorRandomizer, Randomizer>(m, "VectorRandomizer", VectorRandomizerDoc());
  BindSentBytes(cls);
  cls.def(py::init([](const std::string& name, const py::object& dimension, double epsilon,
                      double clip, double delta, std::size_t k, std::uint64_t public_seed) {
            VectorRandomizerConfig c;
            c.mechanism = Take(ParseVectorMechanism(name));
            c.dimension = static_cast<std::size_t>(CountArg(dimension, kDimension));
            c.epsilon = epsilon;
            c.clip = clip;
            c.delta = delta;
            c.k = k;
            c.public_seed = public_seed;
            return Randomizer(Take(MakeVectorRandomizer(c)));
          }),
          py::arg("name"), py::arg("dimension"), py::arg("epsilon"), py::arg("clip") = 1.0,
          py::arg("delta") = 0.0, py::arg("k") = 0, py::arg("public_seed") = 0)
      .def_property_readonly("name", &VectorRandomizer::name)
      .def_property_readonly("dimension", &VectorRandomizer::dimension)
      .def_property_readonly("clip", &VectorRandomizer::clip)
      .def_property_readonly("epsilon", &VectorRandomizer::epsilon)
      .def_property_readonly("delta", &VectorRandomizer::delta)
      .def_property_readonly("deviation", &VectorRandomizer::deviation,
                             "Each report's total variation from the ideal law (0: exact), "
                             "which the accountant charges to delta.")
      .def_property_readonly("unbiased", &VectorRandomizer::unbiased,
                             "True iff E[report] = x for every x in the ball.")
      .def_property_readonly("worst_case_squared_error", &VectorRandomizer::WorstCaseSquaredError)
      .def(
          "squared_error",
          [](const VectorRandomizer& self, const py::object& norm) {
            return py::vectorize([&self](double n) { return self.SquaredError(n); })(norm);
          },
          py::arg("norm"), "E||R(x) - x||^2 for an input of l2 norm `norm` <= clip.")
      .def("randomize", &Randomize, py::arg("x"), py::arg("rng") = py::none(),
           "One report of x (shape (dimension,)), or one per row of an (n, dimension) array, "
           "each from its own draws; the GIL is released.")
      .def(
          "validate",
          [](const VectorRandomizer& self, const py::object& report_arg) {
            DoubleArray report = ArrayArgOf<double>(report_arg, "report");
            if (report.ndim() != 1) Raise("a report is a 1-D array");
            Check(self.ValidateReport(View(report)));
          },
          py::arg("report"),
          "Raises ValueError unless `report` could have been produced by this randomizer.")
      .def("__repr__", [](const VectorRandomizer& self) {
        return "fedldp.VectorRandomizer('" + self.name() +
               "', dimension=" + std::to_string(self.dimension()) +
               ", epsilon=" + py::repr(py::float_(self.epsilon())).cast<std::string>() +
               ", clip=" + py::repr(py::float_(self.clip())).cast<std::string>() + ")";
      });
}

}  // namespace fedldp::python
