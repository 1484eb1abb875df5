// fedldp.ValueMechanism (scalar mechanisms) and fedldp.Selector (FedSel's
// private dimension selection) on numpy arrays.
#include <pybind11/stl.h>

#include <cmath>
#include <vector>

#include "common.h"
#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/select/selector.h"

namespace fedldp::python {
namespace {

// Holders are non-const: pybind11 does not take shared_ptr<const T>.
using Mechanism = std::shared_ptr<ValueMechanism>;
using SelectorPtr = std::shared_ptr<Selector>;

py::tuple AsTuple(const Interval& i) { return py::make_tuple(i.lo, i.hi); }

// M(x) for every entry of x, same shape; a Python float for a float.
py::object Sample(const Mechanism& m, const py::object& x, const py::object& rng_arg) {
  auto rng = ResolveRng(rng_arg);
  if (py::isinstance<py::float_>(x) || py::isinstance<py::int_>(x)) {
    const double v = x.cast<double>();
    return py::float_(WithRng(rng, [&](Rng& r) { return m->Sample(v, r); }));
  }
  DoubleArray in = ArrayArgOf<double>(x, "x");
  DoubleArray out(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  auto out_view = MutableView(out);
  WithRng(rng, [&](Rng& r) {
    m->SampleMany(View(in), out_view, r);
    return 0;
  });
  return LikeInput(out, x);
}

// Selects one index per row of r (1-D: one index, None for PE's "none").
py::object Select(const SelectorPtr& s, const py::object& r_arg, const py::object& rng_arg) {
  DoubleArray r = ArrayArgOf<double>(r_arg, "r");
  const Rows rows = CheckRows(r, s->dimension(), "r");
  auto rng = ResolveRng(rng_arg);
  const std::size_t d = s->dimension();
  std::vector<std::int64_t> picked(rows.rows);
  WithRng(rng, [&](Rng& g) {
    for (std::size_t i = 0; i < rows.rows; ++i) {
      picked[i] = s->Select(View(r).subspan(i * d, d), g);
    }
    return 0;
  });
  if (rows.one) {
    if (picked[0] == Selector::kNone) return py::none();
    return py::int_(picked[0]);
  }
  return LikeInput(py::array_t<std::int64_t>(static_cast<py::ssize_t>(rows.rows), picked.data()),
                   r_arg);
}

using ValueClass = py::class_<ValueMechanism, Mechanism>;

// ValueMechanism: its construction, description and sampling.
ValueClass DefineValueMechanism(py::module_& m) {
  m.def("value_mechanism_names", &ValueMechanismNames,
        "Names ValueMechanism accepts: duchi, pm, hm, laplace, twopoint.");
  return py::class_<ValueMechanism, Mechanism>(m, "ValueMechanism", R"doc(
A scalar eps-LDP mechanism: duchi, pm (Piecewise), hm (Hybrid), laplace, or
twopoint (LDP-FL's, on [center - radius, center + radius]; the others take
inputs in [-1, 1]). Inputs outside the domain are clipped to it first (NaN to
its centre), so the guarantee holds for every input. Outputs are unbiased
estimates of the clipped input.)doc")
      .def(py::init([](const std::string& name, double epsilon, double center, double radius) {
             return std::const_pointer_cast<ValueMechanism>(
                 Take(MakeValueMechanism(name, epsilon, center, radius)));
           }),
           py::arg("name"), py::arg("epsilon"), py::arg("center") = 0.0, py::arg("radius") = 1.0)
      .def_property_readonly("name", &ValueMechanism::name)
      .def_property_readonly("epsilon", &ValueMechanism::epsilon)
      .def_property_readonly(
          "input_domain", [](const ValueMechanism& self) { return AsTuple(self.input_domain()); })
      .def_property_readonly(
          "output_domain", [](const ValueMechanism& self) { return AsTuple(self.output_domain()); })
      .def_property_readonly("atoms", &ValueMechanism::Atoms,
                             "Outputs listed one by one with positive probability.")
      .def_property_readonly(
          "grid",
          [](const ValueMechanism& self) -> py::object {
            const auto g = self.Grid();
            if (!g) return py::none();
            return py::make_tuple(g->step, g->lo, g->hi);
          },
          "(step, lo, hi): the public grid of outputs m * step, lo <= m <= hi, fixed before\n"
          "any input is seen (pm, hm, laplace), or None.")
      .def("sample", &Sample, py::arg("x"), py::arg("rng") = py::none(),
           "M(x) for every entry of x (a number or an array, same shape), the GIL released.");
}

// f over the entries of x (a number, array, tensor or sequence: ArrayArg),
// numpy-vectorised; a tensor's result as a tensor on its device.
template <typename F>
py::object Elementwise(F f, const py::object& x, const char* name) {
  py::object r = py::vectorize(f)(ArrayArg(x, name));
  return py::isinstance<py::array>(r) ? LikeInput(py::reinterpret_borrow<py::array>(r), x) : r;
}
// The same over y and x, broadcast together; a tensor when either was one.
template <typename F>
py::object Elementwise2(F f, const py::object& y, const py::object& x) {
  py::object r = py::vectorize(f)(ArrayArg(y, "y"), ArrayArg(x, "x"));
  if (!py::isinstance<py::array>(r)) return r;
  const auto a = py::reinterpret_borrow<py::array>(r);
  py::object as_y = LikeInput(a, y);
  return as_y.is(a) ? LikeInput(a, x) : as_y;
}

// ValueMechanism's exact law, elementwise in x (and y).
void AddExactLaw(ValueClass& cls) {
  cls.def(
         "clip",
         [](const ValueMechanism& self, const py::object& x) {
           return Elementwise([&self](double v) { return self.Clip(v); }, x, "x");
         },
         py::arg("x"), "x as the mechanism sees it: clipped to the input domain.")
      .def(
          "mean",
          [](const ValueMechanism& self, const py::object& x) {
            return Elementwise([&self](double v) { return self.Mean(v); }, x, "x");
          },
          py::arg("x"), "The exact E[M(x)].")
      .def(
          "variance",
          [](const ValueMechanism& self, const py::object& x) {
            return Elementwise([&self](double v) { return self.Variance(v); }, x, "x");
          },
          py::arg("x"), "The exact Var[M(x)].")
      .def(
          "cdf",
          [](const ValueMechanism& self, const py::object& y, const py::object& x) {
            return Elementwise2([&self](double a, double b) { return self.Cdf(a, b); }, y, x);
          },
          py::arg("y"), py::arg("x"), "P[M(x) <= y].")
      .def(
          "likelihood",
          [](const ValueMechanism& self, const py::object& y, const py::object& x) {
            return Elementwise2([&self](double a, double b) { return self.Likelihood(a, b); }, y,
                                x);
          },
          py::arg("y"), py::arg("x"),
          "The probability of y given x if y is an atom or a grid point, else the density\n"
          "at y (0 for every fedldp mechanism: all are discrete).")
      .def(
          "can_output",
          [](const ValueMechanism& self, const py::object& y) {
            return Elementwise([&self](double v) { return self.CanOutput(v); }, y, "y");
          },
          py::arg("y"))
      .def("__repr__", [](const ValueMechanism& self) {
        return "fedldp.ValueMechanism('" + self.name() +
               "', epsilon=" + py::repr(py::float_(self.epsilon())).cast<std::string>() + ")";
      });
}

void BindSelectors(py::module_& m) {
  m.def("selector_names", &SelectorNames,
        "Names Selector accepts: exp, pe, pe-published, ps, topk, uniform.");
  py::class_<Selector, SelectorPtr>(m, "Selector", R"doc(
FedSel's private selection of one of the Top-k dimensions of a vector r of d
entries (by |r|), eps-LDP with respect to r's ranking: exp, pe (calibrated: its
published lemma does not hold as written), pe-published, ps; topk and uniform
are the non-private and 0-LDP baselines.)doc")
      .def(
          py::init([](const std::string& name, double epsilon, const py::object& d, std::size_t k) {
            const auto dimension = static_cast<std::size_t>(CountArg(d, kDimension));
            return std::const_pointer_cast<Selector>(
                Take(MakeSelector(name, epsilon, dimension, k)));
          }),
          py::arg("name"), py::arg("epsilon"), py::arg("d"), py::arg("k"))
      .def_property_readonly("name", &Selector::name)
      .def_property_readonly("epsilon", &Selector::epsilon)
      .def_property_readonly("d", &Selector::dimension)
      .def_property_readonly("k", &Selector::k)
      .def_property_readonly("none_probability", &Selector::NoneProbability)
      .def_property_readonly("worst_case_ratio", &Selector::WorstCaseRatio,
                             "max over positions of P[M = m] / min: e^eps when the claim holds.")
      .def(
          "position_probability",
          [](const Selector& self, std::size_t position) {
            if (position >= self.dimension()) Raise("position must be < d");
            return self.PositionProbability(position);
          },
          py::arg("position"), "P[the selected rank position is `position`] (0 = largest |r|).")
      .def(
          "probabilities",
          [](const Selector& self, const py::object& r_arg) {
            DoubleArray r = ArrayArgOf<double>(r_arg, "r");
            const Rows rows = CheckRows(r, self.dimension(), "r");
            if (!rows.one) Raise("probabilities takes one vector r of d entries");
            const auto p = self.Probabilities(View(r));
            return LikeInput(py::array_t<double>(static_cast<py::ssize_t>(p.size()), p.data()),
                             r_arg);
          },
          py::arg("r"), "The exact P[select(r) = j] for every j.")
      .def("select", &Select, py::arg("r"), py::arg("rng") = py::none(),
           "An index of r (None for pe's empty set); for an (n, d) array, one index per row "
           "(-1 for none).")
      .def("__repr__", [](const Selector& self) {
        return "fedldp.Selector('" + self.name() + "', d=" + std::to_string(self.dimension()) +
               ", k=" + std::to_string(self.k()) + ")";
      });
}

}  // namespace

void BindMechanisms(py::module_& m) {
  ValueClass value = DefineValueMechanism(m);
  AddExactLaw(value);
  BindSelectors(m);
}

}  // namespace fedldp::python
