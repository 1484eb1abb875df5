// What every binding of the Python module `fedldp` shares: the generator a
// call draws from, numpy views, and how a library error becomes a Python
// exception.
//
// Threads: every call that loops over an array releases the GIL while it
// works; a generator is locked for the call (after the GIL is released, and
// the GIL is never taken while the lock is held), so two threads may share
// one fedldp.Rng safely, though their draws then interleave.
#ifndef FEDLDP_PYTHON_BINDINGS_COMMON_H_
#define FEDLDP_PYTHON_BINDINGS_COMMON_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>

#include "fedldp/base/limits.h"
#include "fedldp/base/status.h"
#include "fedldp/privacy/privacy_record.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/random/rng.h"

namespace fedldp::python {

namespace py = pybind11;

// fedldp.Rng: a seeded CounterRng (simulations: reproducible, NOT private
// against anyone who knows the seed) or a SecureRng (libsodium: what a
// deployment must use).
class PyRng {
 public:
  PyRng(std::optional<std::uint64_t> seed, std::uint64_t stream);
  bool secure() const { return !seed_; }
  std::optional<std::uint64_t> seed() const { return seed_; }
  std::uint64_t stream() const { return stream_; }
  // Words drawn so far (seeded generators only).
  std::uint64_t position() const;
  std::mutex& mutex() { return mutex_; }
  Rng& rng() { return *rng_; }

 private:
  std::optional<std::uint64_t> seed_;
  std::uint64_t stream_;
  std::unique_ptr<Rng> rng_;
  std::mutex mutex_;
};

// A call's `rng` argument: None draws from a fresh secure generator, an int
// seeds a fresh CounterRng for this call only, a fedldp.Rng continues its
// stream. Anything else raises TypeError.
std::shared_ptr<PyRng> ResolveRng(const py::object& rng);

// Runs f(Rng&) with the GIL released and the generator locked.
template <typename F>
auto WithRng(const std::shared_ptr<PyRng>& rng, F&& f) {
  py::gil_scoped_release release;
  std::lock_guard lock(rng->mutex());
  return f(rng->rng());
}

// f() with the GIL released (f must not touch Python objects).
template <typename F>
auto WithoutGil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

// Ctrl-C in a long call that runs without the GIL: Python's handlers only
// run once the call returns, hours later for a long training. Poll(), from
// the call's progress on the thread that called it, takes the GIL at most
// every 50 ms and runs them; an exception one raises (KeyboardInterrupt)
// requests the stop on token(), and RaiseIfInterrupted() throws it once the
// call has returned, with the GIL held.
class PythonSignals {
 public:
  std::stop_token token() const { return source_.get_token(); }
  void Poll();
  void RaiseIfInterrupted() const;

 private:
  std::stop_source source_;
  std::chrono::steady_clock::time_point next_{};
  std::optional<py::error_already_set> error_;
};

// A C-contiguous float64 array (converted if needed; the caller keeps it
// alive while the span is used).
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

inline std::span<const double> View(const DoubleArray& a) {
  return {a.data(), static_cast<std::size_t>(a.size())};
}
inline std::span<double> MutableView(DoubleArray& a) {
  return {a.mutable_data(), static_cast<std::size_t>(a.size())};
}
inline std::span<const float> View(const FloatArray& a) {
  return {a.data(), static_cast<std::size_t>(a.size())};
}

// The name of v's type ("dict", "ndarray"), for a TypeError.
inline std::string TypeName(const py::handle& v) {
  return std::string(py::str(py::type::of(v).attr("__name__")));
}

// A non-array argument of a call that takes arrays, cast to T; else a
// TypeError naming the argument and what it must be. (pybind11's own
// message for a mistyped argument prints every argument of the call, the
// arrays' data included.)
template <typename T>
T ScalarArg(const py::handle& value, const char* name, const char* expected) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(name) + " must be " + expected + ", not " + TypeName(value));
  }
}

// An array argument: a numpy array, a torch tensor (any device, with or
// without grad: detached and copied to the CPU) or a (nested) sequence of
// numbers, as a numpy array of a numeric kind (bool, int or float). Anything
// else raises TypeError naming the argument and its type, never the data.
py::array ArrayArg(const py::handle& value, const char* name);
// The same as a C-contiguous array of T.
template <typename T>
py::array_t<T, py::array::c_style | py::array::forcecast> ArrayArgOf(const py::handle& value,
                                                                     const char* name) {
  return py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(ArrayArg(value, name));
}
// A result for an array argument: a torch tensor when the input was one, on
// its device; otherwise the array. Its dtype stays the result's (float64
// reports, int64 indices): a report is a point of a float64 grid, which a
// float32 copy would leave (ValidateReport and the audit's support check
// would refuse it).
py::object LikeInput(const py::array& result, const py::handle& input);

// The library's errors are sentences a user can act on: ValueError carries
// them to Python unchanged.
[[noreturn]] inline void Raise(const std::string& message) { throw py::value_error(message); }
template <typename T>
T Take(Result<T> r) {
  if (!r.ok()) Raise(r.error());
  return std::move(r).value();
}
inline void Check(const Status& s) {
  if (!s.ok()) Raise(s.error());
}

// A count argument (threads, classes) within the library's limit, with the
// CLI's sentence (base/limits.h): TypeError for what is not an int (a bool,
// a str, a float), ValueError out of range.
inline std::int64_t CountArg(const py::handle& v, const CountLimit& limit) {
  if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v)) {
    throw py::type_error(std::string(limit.name) + " must be an int, not " +
                         std::string(py::str(py::type::of(v).attr("__name__"))));
  }
  const py::int_ big = py::reinterpret_borrow<py::int_>(v);
  if (big < py::int_(limit.min) || big > py::int_(limit.max)) {
    Raise(std::string(limit.name) + " must be a whole number from " + std::to_string(limit.min) +
          " to " + std::to_string(limit.max) +
          (limit.note.empty() ? "" : " (" + std::string(limit.note) + ")") + ", got " +
          std::string(py::str(v)));
  }
  return big.cast<std::int64_t>();
}

// A seed: an int from 0 to 2^64 - 1, said as the CLI says it.
inline std::uint64_t SeedArg(const py::handle& v) {
  if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v)) {
    throw py::type_error("seed must be an int, not " +
                         std::string(py::str(py::type::of(v).attr("__name__"))));
  }
  const py::int_ big = py::reinterpret_borrow<py::int_>(v);
  if (big < py::int_(0) || big > py::int_(~std::uint64_t{0})) {
    Raise("seed must be " + std::string(kSeedRange) + ", got " + std::string(py::str(v)));
  }
  return big.cast<std::uint64_t>();
}

// A (rows, d) view of a 1-D (one row) or 2-D array; raises ValueError unless
// its last axis has d entries.
struct Rows {
  std::size_t rows = 0;
  bool one = false;  // the input was 1-D
};
Rows CheckRows(const py::array& a, std::size_t d, const char* what);

// account_run's dict for a statement (accounting.cc) of a run of
// `mechanism`'s reports (fl/fedsel.h's FloatingPointStatementFor names).
py::dict RunPrivacyDict(const RunPrivacy& p, const std::string& mechanism);

// A result's "privacy": the record's one layout (sim/records.h's
// PrivacyJson, read back as Python objects), None without one.
py::object PrivacyObject(const std::optional<PrivacyRecord>& record);

// The module's parts, one per source file.
void BindRandom(py::module_& m);
void BindMechanisms(py::module_& m);
void BindVectors(py::module_& m);
void BindAccounting(py::module_& m);
void BindRuns(py::module_& m);
void BindReproduce(py::module_& m);

}  // namespace fedldp::python

#endif  // FEDLDP_PYTHON_BINDINGS_COMMON_H_
