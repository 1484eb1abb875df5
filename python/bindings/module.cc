// The native part of the Python module `fedldp` (python/fedldp/__init__.py
// re-exports it): the same library calls the CLI makes.
#include <pybind11/stl.h>

#include "common.h"
#include "fedldp/base/version.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/secure_rng.h"

namespace fedldp::python {

PyRng::PyRng(std::optional<std::uint64_t> seed, std::uint64_t stream)
    : seed_(seed), stream_(stream) {
  if (seed) {
    rng_ = std::make_unique<CounterRng>(*seed, stream);
  } else {
    rng_ = std::make_unique<SecureRng>();
  }
}

std::uint64_t PyRng::position() const {
  if (!seed_) throw py::value_error("a secure generator has no position");
  return static_cast<const CounterRng&>(*rng_).position();
}

std::shared_ptr<PyRng> ResolveRng(const py::object& rng) {
  if (rng.is_none()) return std::make_shared<PyRng>(std::nullopt, 0);
  if (py::isinstance<PyRng>(rng)) return rng.cast<std::shared_ptr<PyRng>>();
  if (py::isinstance<py::int_>(rng) && !py::isinstance<py::bool_>(rng)) {
    const auto seed = rng.cast<long long>();
    if (seed < 0) throw py::value_error("a seed must be >= 0");
    return std::make_shared<PyRng>(static_cast<std::uint64_t>(seed), 0);
  }
  throw py::type_error(
      "rng must be None (a fresh secure generator), an int seed or a fedldp.Rng, not " +
      std::string(py::str(py::type::of(rng).attr("__name__"))));
}

Rows CheckRows(const py::array& a, std::size_t d, const char* what) {
  if (a.ndim() == 1 && static_cast<std::size_t>(a.shape(0)) == d) return {1, true};
  if (a.ndim() == 2 && static_cast<std::size_t>(a.shape(1)) == d) {
    return {static_cast<std::size_t>(a.shape(0)), false};
  }
  std::string shape = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    shape += (i ? ", " : "") + std::to_string(a.shape(i));
  }
  shape += a.ndim() == 1 ? ",)" : ")";
  Raise(std::string(what) + " must have shape (" + std::to_string(d) + ",) or (n, " +
        std::to_string(d) + "), not " + shape);
}

void BindRandom(py::module_& m) {
  py::class_<PyRng, std::shared_ptr<PyRng>>(m, "Rng", R"doc(
A random generator for fedldp's calls.

Rng() draws from libsodium's ChaCha20 keyed by the operating system: what a
deployment must use. Rng(seed, stream=0) is fedldp's counter-based generator:
reproducible, and therefore no privacy at all against anyone who knows the
seed; use it for simulations and tests. Every randomized call takes
rng=None (a fresh secure generator), an int (a fresh seeded generator for that
call only) or an Rng (its stream continues from call to call). An Rng may be
shared between threads: each call locks it.)doc")
      .def(py::init([](std::optional<long long> seed, long long stream) {
             if (seed && *seed < 0) throw py::value_error("seed must be >= 0");
             if (stream < 0) throw py::value_error("stream must be >= 0");
             std::optional<std::uint64_t> s;
             if (seed) s = static_cast<std::uint64_t>(*seed);
             return std::make_shared<PyRng>(s, static_cast<std::uint64_t>(stream));
           }),
           py::arg("seed") = py::none(), py::arg("stream") = 0)
      .def_property_readonly("secure", &PyRng::secure)
      .def_property_readonly("seed", &PyRng::seed)
      .def_property_readonly("stream", &PyRng::stream)
      .def_property_readonly("position", &PyRng::position,
                             "Words drawn so far (seeded generators only).")
      .def(
          "integers",
          [](const std::shared_ptr<PyRng>& self, const py::object& count) {
            const auto n = static_cast<std::size_t>(CountArg(count, kDraws));
            py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(n));
            std::span<std::uint64_t> view(out.mutable_data(), n);
            WithRng(self, [&](Rng& rng) { rng.Fill(view); });
            return out;
          },
          py::arg("n"), "n uniformly distributed 64-bit words.")
      .def("__repr__", [](const PyRng& self) {
        if (self.secure()) return std::string("fedldp.Rng(secure)");
        return "fedldp.Rng(seed=" + std::to_string(*self.seed()) +
               ", stream=" + std::to_string(self.stream()) + ")";
      });
}

}  // namespace fedldp::python

PYBIND11_MODULE(_fedldp, m) {
  namespace fp = fedldp::python;
  m.doc() = "fedldp's native core: mechanisms, randomizers, accountant and runs.";
  m.attr("__version__") = std::string(fedldp::Version());
  fp::BindRandom(m);
  fp::BindMechanisms(m);
  fp::BindVectors(m);
  fp::BindAccounting(m);
  fp::BindRuns(m);
}
