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

void PythonSignals::Poll() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_ || error_) return;
  next_ = now + std::chrono::milliseconds(50);
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return;
  error_.emplace();  // takes the handler's exception
  source_.request_stop();
}

void PythonSignals::RaiseIfInterrupted() const {
  if (error_) throw *error_;
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

namespace {

bool IsTorchTensor(const py::handle& v) {
  const py::object module = py::type::of(v).attr("__module__");
  return py::isinstance<py::str>(module) && module.cast<std::string>().rfind("torch", 0) == 0 &&
         py::hasattr(v, "detach") && py::hasattr(v, "device");
}

}  // namespace

py::array ArrayArg(const py::handle& value, const char* name) {
  const std::string expected = std::string(name) +
                               " must be an array of numbers (a numpy array, a torch tensor or a "
                               "sequence), not ";
  py::object plain = py::reinterpret_borrow<py::object>(value);
  if (IsTorchTensor(value)) {
    const py::object cpu = value.attr("detach")().attr("cpu")();
    try {
      plain = cpu.attr("numpy")();
    } catch (py::error_already_set&) {  // a dtype numpy lacks: bfloat16, complex32
      try {
        plain = cpu.attr("double")().attr("numpy")();
      } catch (py::error_already_set& e) {  // a sparse layout, a complex dtype
        throw py::type_error(std::string(name) + ": the tensor cannot become a numpy array (" +
                             std::string(py::str(e.value())).substr(0, 120) + ")");
      }
    }
  }
  if (py::isinstance<py::str>(plain) || py::isinstance<py::bytes>(plain)) {
    throw py::type_error(expected + TypeName(value));
  }
  py::array a = py::array::ensure(plain);
  if (!a) throw py::type_error(expected + TypeName(value));
  const char kind = a.dtype().kind();
  if (kind == 'O' && a.ndim() == 0) throw py::type_error(expected + TypeName(value));
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') {
    throw py::type_error(std::string(name) + " must hold real numbers, not values of dtype " +
                         std::string(py::str(a.dtype())));
  }
  return a;
}

py::object LikeInput(const py::array& result, const py::handle& input) {
  if (!IsTorchTensor(input)) return result;
  const py::module_ torch = py::module_::import("torch");
  return torch.attr("from_numpy")(result).attr("to")(input.attr("device"));
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
  fp::BindReproduce(m);
}
