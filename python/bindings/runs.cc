// Datasets, FedSel and LDP-FL runs (dicts in, dicts out), and the
// update-level randomizers a PyTorch training loop calls: LDP-FL's
// per-weight two-point perturbation with its aggregator, and a vector
// randomizer on a whole update (PrivatizeUpdate, as the simulator's and the
// deployed clients report).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <vector>

#include "common.h"
#include "fedldp/base/units.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/fl/fedsel_options.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/model/linear.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/pipeline/ldpfl.h"
#include "fedldp/sim/thread_pool.h"

namespace fedldp::python {
namespace {

// ---- datasets ------------------------------------------------------------

py::dict DatasetDict(const Dataset& d) {
  py::dict out;
  py::array_t<float> X(std::vector<py::ssize_t>{static_cast<py::ssize_t>(d.size()),
                                                static_cast<py::ssize_t>(d.dimension)});
  std::copy(d.features.begin(), d.features.end(), X.mutable_data());
  out["X"] = X;
  out["y"] =
      py::array_t<std::int64_t>(static_cast<py::ssize_t>(d.size()),
                                std::vector<std::int64_t>(d.labels.begin(), d.labels.end()).data());
  out["classes"] = d.classes;
  out["name"] = d.name;
  out["feature_names"] = d.feature_names;
  return out;
}

// A Dataset from numpy: X of shape (n, d), y of n labels in 0..classes-1.
// y (1-D integer labels, `rows` of them unless rows < 0) into d's labels
// and classes (0: from the labels, at least 2).
void SetLabels(Dataset& d, const py::object& y_arg, const std::string& name, int classes,
               py::ssize_t rows) {
  auto y = ArrayArgOf<std::int64_t>(y_arg, "y");
  if (y.ndim() != 1) Raise(name + ": y must be a 1-D array of integer labels");
  if (rows >= 0 && y.shape(0) != rows) {
    Raise(name + ": X has " + std::to_string(rows) + " rows but y has " +
          std::to_string(y.shape(0)) + " labels");
  }
  std::int64_t most = 0;
  d.labels.reserve(static_cast<std::size_t>(y.size()));
  for (py::ssize_t i = 0; i < y.size(); ++i) {
    const std::int64_t label = y.data()[i];
    if (label < 0 || label >= kClasses.max) {
      Raise(name + ": labels must be integers in 0..classes-1, found " + std::to_string(label));
    }
    most = std::max(most, label);
    d.labels.push_back(static_cast<int>(label));
  }
  d.classes = classes > 0 ? classes : std::max<int>(2, static_cast<int>(most) + 1);
  if (most >= d.classes) {
    Raise(name + ": label " + std::to_string(most) +
          " is not below classes = " + std::to_string(d.classes));
  }
}

Dataset MakeDataset(const py::object& X_arg, const py::object& y_arg, const std::string& name,
                    int classes) {
  FloatArray X = ArrayArgOf<float>(X_arg, "X");
  if (X.ndim() != 2) Raise(name + ": X must be a 2-D array of shape (rows, features)");
  Dataset d;
  SetLabels(d, y_arg, name, classes, X.shape(0));
  if (X.shape(0) == 0 || X.shape(1) == 0) Raise(name + ": X is empty");
  d.name = name;
  d.dimension = static_cast<std::size_t>(X.shape(1));
  d.features.assign(X.data(), X.data() + X.size());
  if (!std::all_of(d.features.begin(), d.features.end(),
                   [](float v) { return std::isfinite(v); })) {
    Raise(name + ": X has a non-finite value");
  }
  return d;
}

// fedldp.partition: the simulators' PartitionRows on labels alone.
py::list PartitionPy(const py::object& y, const py::object& clients_arg, double dirichlet_alpha,
                     const py::object& label_shards_arg, std::uint64_t seed,
                     const py::object& run_arg) {
  if (!run_arg.is_none() && !py::isinstance<py::str>(run_arg)) {
    throw py::type_error("run must be \"fedsel\", \"ldpfl\" or None, not " + TypeName(run_arg));
  }
  const std::string run = run_arg.is_none() ? "" : run_arg.cast<std::string>();
  Dataset d;
  SetLabels(d, y, "y", 0, -1);
  const auto clients = static_cast<std::size_t>(CountArg(clients_arg, kClientCount));
  const Partition how{dirichlet_alpha,
                      static_cast<std::size_t>(CountArg(label_shards_arg, kLabelShards))};
  if (run != "" && run != "ldpfl" && run != "fedsel") {
    Raise("run must be \"fedsel\", \"ldpfl\" or None, not \"" + run + "\"");
  }
  // LDP-FL partitions with the run's seed; FedSel with one of its own.
  const std::uint64_t drawn = run == "fedsel" ? FedSelPartitionSeed(seed) : seed;
  const auto shards = Take(WithoutGil([&] { return PartitionRows(d, {}, clients, how, drawn); }));
  py::list out;
  for (const auto& s : shards) {
    py::array_t<std::int64_t> a(static_cast<py::ssize_t>(s.size()));
    std::copy(s.begin(), s.end(), a.mutable_data());
    out.append(a);
  }
  return out;
}

py::dict LoadDataset(const std::string& name, const std::string& dir, std::size_t pool,
                     double center) {
  Dataset d;
  for (const std::string& image : DatasetNames(true)) {
    if (name == image || name == image + "-test") {
      auto split = Take(WithoutGil([&] { return LoadImageSplit(image, dir); }));
      d = name == image ? std::move(split.train) : std::move(split.test);
      d.name = name;
    }
  }
  if (d.dimension == 0) d = Take(WithoutGil([&] { return LoadNamed(name, dir); }));
  if (pool > 1) d = Take(AveragePool(d, pool));
  Check(CenterFeatures(d, center));
  return DatasetDict(d);
}

// ---- options -------------------------------------------------------------

// A keyword's value as an option's (base/options.h); TypeError for a type
// no option takes.
OptionValue ToOptionValue(const std::string& name, const py::handle& v, const char* function) {
  if (v.is_none()) return std::monostate{};
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<std::int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  throw py::type_error(std::string(function) + "(): option '" + name + "' has the wrong type (" +
                       std::string(py::str(py::type::of(v).attr("__name__"))) + ")");
}

// The keyword options of a config described by `options`: an unknown name
// raises TypeError listing the known ones.
template <typename Config>
std::vector<std::pair<std::string, OptionValue>> GivenOptions(
    std::span<const ConfigOption<Config>> options, const py::kwargs& given, const char* function) {
  std::vector<std::pair<std::string, OptionValue>> out;
  for (const auto& [key, value] : given) {
    const auto name = py::cast<std::string>(key);
    const ConfigOption<Config>* option = FindOption(options, name);
    if (option == nullptr) {
      std::string known;
      for (const auto& o : options) known += (known.empty() ? "" : ", ") + std::string(o.key);
      throw py::type_error(std::string(function) + "() got an unknown option '" + name +
                           "'; it takes: " + known);
    }
    OptionValue typed = ToOptionValue(name, value, function);
    // Text is the command line's way to give a number; from Python a str
    // for a number or a flag is a mistake (epsilon="4"), unless it is the
    // option's word ("auto").
    const auto* text = std::get_if<std::string>(&typed);
    if (text != nullptr && !std::holds_alternative<std::string>(option->get(Config{})) &&
        *text != option->word) {
      throw py::type_error(std::string(function) + "(): option '" + name + "' takes " +
                           (option->is_flag() ? "True or False" : "a number") +
                           (option->word.empty() ? "" : " or '" + std::string(option->word) + "'") +
                           ", not the str '" + *text + "'");
    }
    out.emplace_back(name, std::move(typed));
  }
  return out;
}

py::object ToPython(const OptionValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) {
          return py::none();
        } else {
          return py::cast(v);
        }
      },
      value);
}

// A run's options as the library describes them (base/options.h): the
// rows the command line binds its flags from, with `shown`'s defaults.
template <typename Config>
py::list OptionsPy(std::span<const ConfigOption<Config>> options, const Config& shown) {
  py::list out;
  for (const auto& o : options) {
    py::dict row;
    row["name"] = std::string(o.key);
    row["flag"] = o.flag.empty() ? py::object(py::none()) : py::str("--" + std::string(o.flag));
    row["record"] = o.record.empty() ? py::object(py::none()) : py::str(std::string(o.record));
    row["help"] = std::string(o.help);
    row["default"] = o.varies ? py::object(py::none()) : ToPython(o.get(shown));
    row["default_varies"] = o.varies;
    row["choices"] = o.choices;
    out.append(row);
  }
  return out;
}

// A configuration's options by key, as its run took them.
template <typename Config>
void AddConfig(std::span<const ConfigOption<Config>> options, const Config& c, py::dict& d) {
  for (const auto& o : options) d[py::str(std::string(o.key))] = ToPython(o.get(c));
}

py::dict FedSelConfigDict(const FedSelConfig& c) {
  py::dict d;
  d["variant"] = FedSelVariantName(c.variant);
  AddConfig(FedSelOptions(), c, d);
  return d;
}

// ---- FedSel --------------------------------------------------------------

// The test set given as X_test and y_test (both or neither), with train's
// features.
std::optional<Dataset> TestSetOf(const py::object& X_test, const py::object& y_test,
                                 const Dataset& train) {
  if (X_test.is_none() != y_test.is_none()) Raise("give both X_test and y_test, or neither");
  if (X_test.is_none()) return std::nullopt;
  Dataset test = MakeDataset(X_test, y_test, "test", train.classes);
  if (test.dimension != train.dimension) {
    Raise("X_test has " + std::to_string(test.dimension) + " features but X has " +
          std::to_string(train.dimension));
  }
  return test;
}

// A run's budget and the accountant's statement of it (None for np).
void AddFedSelPrivacy(const FedSelVariant& variant, const FedSelRun& run, const FedSelPlan& plan,
                      const FedSelConfig& config, double central_delta, py::dict& out) {
  if (!variant.is_private()) {
    out["budget"] = py::none();
    out["privacy"] = py::none();
    return;
  }
  py::dict budget;
  budget["epsilon"] = run.budget.epsilon;
  budget["select_epsilon"] = run.budget.select_epsilon;
  budget["value_epsilon"] = run.budget.value_epsilon;
  budget["report_epsilon"] = plan.ReportEpsilon();
  budget["total_per_client"] = run.budget.TotalPerClient();
  out["budget"] = budget;
  const RunPrivacyConfig accounted = FedSelRunPrivacy(plan, config, central_delta);
  const RunPrivacy stated = Take(WithoutGil([&] { return AccountRun(accounted); }));
  out["privacy"] = PrivacyObject(FedSelPrivacyRecord(stated, variant));
}

// The data's FeatureScaleWarning, raised as a UserWarning and listed for the
// run's dict (empty when the features are near unit scale).
py::list WarnOfScale(const Dataset& train) {
  py::list warnings;
  if (const std::string w = FeatureScaleWarning(train); !w.empty()) {
    warnings.append(w);
    if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0) throw py::error_already_set();
  }
  return warnings;
}

// What a run did: its batches, rounds, updates, and the selector's k.
void AddFedSelCounts(const FedSelVariant& variant, const FedSelRun& run, const FedSelPlan& plan,
                     py::dict& out) {
  out["batch"] = run.batch;
  out["rounds"] = plan.rounds;
  out["smallest_round"] = run.smallest_round;
  out["iterations"] = run.iterations;
  out["updates"] = run.updates;
  out["rejected"] = run.rejected;
  out["most_reports"] = run.most_reports;
  out["declined"] = run.declined;
  if (TraitsOf(variant).selects) {
    out["k"] = run.k;
    out["selector"] = run.selector ? py::object(py::str(std::string(SelectorName(*run.selector))))
                                   : py::object(py::none());
  } else {
    out["k"] = py::none();
    out["selector"] = py::none();
  }
}

py::dict TrainFedSelPy(const py::object& X, const py::object& y, const py::object& variant_arg,
                       const py::object& X_test, const py::object& y_test,
                       const py::object& seed_arg, const py::object& threads_arg,
                       const py::object& central_epsilon_arg, const py::object& central_delta_arg,
                       const py::object& classes_arg, const py::kwargs& options) {
  const auto variant = ScalarArg<std::string>(variant_arg, "variant", "a str");
  const auto central_epsilon =
      ScalarArg<std::optional<double>>(central_epsilon_arg, "central_epsilon", "a number or None");
  const auto central_delta = ScalarArg<double>(central_delta_arg, "central_delta", "a number");
  const std::uint64_t seed = SeedArg(seed_arg);
  const auto threads = static_cast<std::size_t>(CountArg(threads_arg, kWorkerThreads));
  const int classes = static_cast<int>(CountArg(classes_arg, kClasses));
  const FedSelVariant parsed = Take(ParseFedSelVariant(variant));
  FedSelConfig config =
      Take(FedSelConfigWith(parsed, GivenOptions(FedSelOptions(), options, "train_fedsel")));
  const Dataset train = MakeDataset(X, y, "train", classes);
  const std::optional<Dataset> test = TestSetOf(X_test, y_test, train);
  const std::size_t d = LinearParameters(train);
  const py::list warnings = WarnOfScale(train);
  if (central_epsilon) {
    Check(CheckCentralTarget(config, *central_epsilon, options.contains("epsilon")));
    config = Take(WithoutGil([&] {
      return CalibrateToCentral(config, train.size(), d, *central_epsilon, central_delta);
    }));
  }
  const FedSelPlan plan = Take(PlanFedSel(config, train.size(), d));
  PythonSignals signals;
  auto trained = WithoutGil([&] {
    ThreadPool pool(threads);
    const ParallelFor parallel = pool.AsParallelFor();
    return TrainFedSel(
        config, train, {}, seed, parallel, [&](std::size_t, std::size_t) { signals.Poll(); },
        OneProcess(), signals.token());
  });
  signals.RaiseIfInterrupted();
  const FedSelRun run = Take(std::move(trained));

  py::dict out;
  out["version"] = std::string(Version());
  out["accuracy_unit"] = kAccuracyUnit;
  out["seed"] = seed;
  out["config"] = FedSelConfigDict(config);
  out["weights"] =
      py::array_t<double>(static_cast<py::ssize_t>(run.weights.size()), run.weights.data());
  out["train_accuracy"] = Percent(LinearModel::Accuracy(run.weights, train, {}));
  out["test_accuracy"] =
      test ? py::object(py::float_(Percent(LinearModel::Accuracy(run.weights, *test, {}))))
           : py::none();
  out["majority"] = Percent(test ? test->MajorityRate() : train.MajorityRate());
  out["warnings"] = warnings;
  AddFedSelCounts(parsed, run, plan, out);
  AddFedSelPrivacy(parsed, run, plan, config, central_delta, out);
  return out;
}

// ---- LDP-FL --------------------------------------------------------------

// train_ldpfl's data: all of X, y, X_test, y_test (784-pixel images), or
// the image dataset named.
TrainTest ImagesOf(const std::string& dataset, const py::object& X, const py::object& y,
                   const py::object& X_test, const py::object& y_test) {
  const bool arrays = !X.is_none() || !y.is_none() || !X_test.is_none() || !y_test.is_none();
  if (!arrays) return Take(WithoutGil([&] { return LoadImageSplit(dataset, ""); }));
  if (X.is_none() || y.is_none() || X_test.is_none() || y_test.is_none()) {
    Raise("give all of X, y, X_test and y_test, or a dataset name");
  }
  TrainTest split;
  split.train = MakeDataset(X, y, "train", 0);
  split.test = MakeDataset(X_test, y_test, "test", split.train.classes);
  return split;
}

py::dict RoundDict(const LdpFlRound& r) {
  py::dict d;
  d["round"] = r.round;
  d["accuracy"] = Percent(r.accuracy);
  d["train_seconds"] = r.train_seconds;
  d["perturb_seconds"] = r.perturb_seconds;
  d["shuffle_seconds"] = r.shuffle_seconds;
  d["aggregate_seconds"] = r.aggregate_seconds;
  return d;
}

py::dict TrainLdpFlPy(const std::string& dataset, const py::object& X, const py::object& y,
                      const py::object& X_test, const py::object& y_test,
                      const py::object& seed_arg, const py::object& threads_arg,
                      const std::optional<std::function<void(py::dict)>>& on_round,
                      const py::kwargs& options) {
  const std::uint64_t seed = SeedArg(seed_arg);
  const auto threads = static_cast<std::size_t>(CountArg(threads_arg, kWorkerThreads));
  const LdpFlConfig config = Take(ApplyCentralTarget(
      Take(LdpFlConfigWith({}, GivenOptions(LdpFlOptions(), options, "train_ldpfl")))));
  const TrainTest split = ImagesOf(dataset, X, y, X_test, y_test);
  const Dataset &train = split.train, &test = split.test;
  Check(CheckLdpFlConfig(config, train.size()));
  // A round's clients train at once, one per thread (see ldpfl_experiment.h).
  ThreadPool pool(threads);
  NeuralNet::SetThreads(NeuralNet::TrainsConcurrently(config.arch) ? 1
                                                                   : static_cast<int>(pool.size()));
  const ParallelFor parallel = pool.AsParallelFor();
  py::list rounds;
  PythonSignals signals;
  auto trained = WithoutGil([&] {
    return TrainLdpFl(
        config, train, test, seed,
        [&](const LdpFlRound& r) {
          signals.Poll();
          py::gil_scoped_acquire acquire;
          const py::dict d = RoundDict(r);
          rounds.append(d);
          if (on_round) (*on_round)(d);
        },
        signals.token(), parallel);
  });
  signals.RaiseIfInterrupted();
  const LdpFlRun run = Take(std::move(trained));
  py::dict out;
  out["version"] = std::string(Version());
  out["accuracy_unit"] = kAccuracyUnit;
  out["seed"] = seed;
  py::dict applied;
  AddConfig(LdpFlOptions(), config, applied);
  out["config"] = applied;
  out["rounds"] = rounds;
  out["final_accuracy"] = Percent(run.final_accuracy());
  out["majority"] = Percent(run.majority);
  out["parameters"] = run.parameters;
  out["trained"] = run.trained;
  out["report_bytes"] = run.report_bytes;
  out["reports"] = run.reports;
  out["most_reports"] = run.most_reports;
  out["weights"] =
      py::array_t<float>(static_cast<py::ssize_t>(run.weights.size()), run.weights.data());
  out["privacy"] = PrivacyObject(LdpFlPrivacyRecord(config, run.privacy, run.vector_privacy));
  return out;
}

// ---- update-level randomizers ---------------------------------------------

// LDP-FL's per-weight randomizer over a model cut into layers (tensors).
struct PyLdpFlRandomizer {
  LdpFlRandomizer randomizer;
};

// A client's report, kept opaque: the aggregator reads it; values() decodes.
struct PyLdpFlReport {
  std::shared_ptr<const PyLdpFlRandomizer> owner;
  LdpFlReport report;
};

struct PyLdpFlAggregator {
  explicit PyLdpFlAggregator(std::shared_ptr<const PyLdpFlRandomizer> r)
      : owner(std::move(r)), aggregator(owner->randomizer) {}
  std::shared_ptr<const PyLdpFlRandomizer> owner;
  LdpFlAggregator aggregator;
};

std::vector<LayerRange> ToRanges(const std::vector<std::pair<double, double>>& ranges) {
  std::vector<LayerRange> out;
  for (const auto& [c, r] : ranges) out.push_back({c, r});
  return out;
}

// The datasets: by name, or a user's file.
void BindData(py::module_& m) {
  m.def("load_dataset", &LoadDataset, py::arg("name"), py::arg("dir") = "", py::arg("pool") = 0,
        py::arg("center") = 0.0,
        R"doc(
A dataset fedldp carries or finds, as a dict: "X" (float32, rows x features),
"y" (int64 labels), "classes", "name", "feature_names". Names:
dataset_names() (an image dataset's name is its training split, NAME-test its
test split). pool=F averages F x F pixel blocks of an image dataset; center=C
then subtracts C from every feature (train --feature-center: |C| <= 1, the
features' scale; ValueError otherwise).)doc");
  m.def(
      "dataset_names", [](bool images) { return DatasetNames(images); }, py::arg("images") = false,
      "The tables load_dataset knows by name, or with images=True the image datasets.");

  m.def(
      "load_file",
      [](const std::string& path, const std::string& label_column) {
        return DatasetDict(Take(WithoutGil([&] { return LoadDataFile(path, label_column); })));
      },
      py::arg("path"), py::arg("label_column") = "",
      "Your own file as load_dataset's dict: CSV (.csv, .csv.gz; label_column a header name "
      "or 0-based index, default the last column) or LIBSVM text.");
}

// The training runs and the options they take.
void BindPartition(py::module_& m) {
  m.def("partition", &PartitionPy, py::arg("y"), py::arg("clients"), py::kw_only(),
        py::arg("dirichlet_alpha") = 0.0, py::arg("label_shards") = 0, py::arg("seed") = 1,
        py::arg("run") = py::none(), R"doc(
The rows 0..len(y)-1 split among `clients` clients, as the simulators split
them (data/partition.h): a list of int64 index arrays, one per client, for
your own loop. Equal IID shards (the remainder left out) by default;
dirichlet_alpha > 0 a Dirichlet(alpha) label skew (a client may get none);
label_shards k > 0 each client k shards of the label-sorted rows (McMahan et
al. 2017). seed as the run's: run="ldpfl" or None draws with it as
train_ldpfl(seed=...) does, run="fedsel" as train_fedsel(seed=...) does
for its clients.)doc");
}

void BindTraining(py::module_& m) {
  BindPartition(m);
  m.def(
      "fedsel_options", [] { return OptionsPy(FedSelOptions(), DefaultFedSelVariantConfig()); },
      R"doc(
train_fedsel's keyword options, as the library describes them once (the rows
`fedldp train` binds its flags from): a list of dicts with name, flag, record
(the JSON record's key, or None), help, default (the default variant's,
privunitg's; None where it
varies by variant), default_varies and choices (empty unless it takes one of
a few words).)doc");
  m.def(
      "ldpfl_options", [] { return OptionsPy(LdpFlOptions(), LdpFlConfig{}); },
      R"doc(
train_ldpfl's keyword options, as the library describes them once (the rows
`fedldp ldpfl` binds its flags from; flag None: Python's only), as
fedsel_options() lists them; the defaults are MNIST's.)doc");
  m.def("train_fedsel", &TrainFedSelPy, py::arg("X"), py::arg("y"),
        py::arg("variant") = std::string(kDefaultFedSelVariant), py::kw_only(),
        py::arg("X_test") = py::none(), py::arg("y_test") = py::none(), py::arg("seed") = 1,
        py::arg("threads") = 0, py::arg("central_epsilon") = py::none(),
        py::arg("central_delta") = 1e-6, py::arg("classes") = 0, R"doc(
Trains a linear model (logistic, or softmax for more than two classes) with
FedSel or a baseline, one client per row of X, as `fedldp train` does:
variant is one of fedldp train's (privunitg, the default; fastprojunit,
ps-pm, exp-hm, pm (flat), gaussian, np, ...); options are FedSelConfig's fields by name
(fedsel_options() lists them: epsilon, epochs, batch_fraction, learning_rate,
clip, shuffle, clients, dirichlet_alpha, ...); unset ones take the variant's
defaults, and an option the variant ignores raises ValueError with the
sentence `fedldp train` prints. central_epsilon (with shuffle=True) sets the
per-report epsilon whose shuffled run stays within (central_epsilon,
central_delta) per client. Returns a dict: weights, train/test accuracy (test
None without X_test), majority (the majority-class accuracy), the effective
config, budget, privacy (account_run's statement; None for np) and counts.
The GIL is released while it trains; threads=0 uses every core.)doc");

  m.def("train_ldpfl", &TrainLdpFlPy, py::arg("dataset") = "mnist", py::kw_only(),
        py::arg("X") = py::none(), py::arg("y") = py::none(), py::arg("X_test") = py::none(),
        py::arg("y_test") = py::none(), py::arg("seed") = 1, py::arg("threads") = 0,
        py::arg("on_round") = py::none(), R"doc(
Runs LDP-FL (Sun, Qian & Chen, IJCAI 2021) as `fedldp ldpfl` does, on an
image dataset by name (mnist, fmnist) or on arrays of 784-pixel images
(X, y, X_test, y_test). Options are LdpFlConfig's, by name (ldpfl_options()
lists them: clients, fraction, rounds, local_epochs, batch, learning_rate,
epsilon, range, perturb, center, radius, randomizer, clip, private, model
(your TorchScript network's file), ...); one the configuration ignores
raises ValueError with the sentence `fedldp ldpfl` prints. on_round(dict)
is called after every round.
Returns a dict: the effective config, rounds (accuracy per round),
final_accuracy, majority,
privacy (per weight for twopoint, per report for a vector randomizer), the
final weights and counts.)doc");
}

// LDP-FL's report pieces, for a client of one's own.
void BindLdpFlReports(py::module_& m) {
  py::class_<PyLdpFlRandomizer, std::shared_ptr<PyLdpFlRandomizer>>(m, "LdpFlRandomizer", R"doc(
LDP-FL's per-weight perturbation of a model cut into layers: every weight of
layer l is clipped to [c_l - r_l, c_l + r_l] and replaced by c_l + r_l B or
c_l - r_l B (B = (e^eps + 1) / (e^eps - 1)), unbiased, eps-LDP per weight.
layer_sizes: weights per layer, in model order; ranges: (center, radius) per
layer, as the server announced them for the round.)doc")
      .def(py::init([](double epsilon, std::vector<std::size_t> layer_sizes,
                       const std::vector<std::pair<double, double>>& ranges) {
             return std::make_shared<PyLdpFlRandomizer>(PyLdpFlRandomizer{
                 Take(LdpFlRandomizer::Create(epsilon, std::move(layer_sizes), ToRanges(ranges)))});
           }),
           py::arg("epsilon"), py::arg("layer_sizes"), py::arg("ranges"))
      .def_property_readonly(
          "epsilon", [](const PyLdpFlRandomizer& self) { return self.randomizer.epsilon(); })
      .def_property_readonly(
          "weights", [](const PyLdpFlRandomizer& self) { return self.randomizer.weights(); })
      .def(
          "randomize",
          [](const std::shared_ptr<PyLdpFlRandomizer>& self, const py::object& weights_arg,
             const py::object& rng_arg) {
            FloatArray w = ArrayArgOf<float>(weights_arg, "weights");
            if (w.ndim() != 1 || static_cast<std::size_t>(w.size()) != self->randomizer.weights()) {
              Raise("weights must be a 1-D array of " + std::to_string(self->randomizer.weights()) +
                    " values (every layer's, flattened, in order)");
            }
            auto rng = ResolveRng(rng_arg);
            auto report =
                WithRng(rng, [&](Rng& r) { return self->randomizer.Randomize(View(w), r); });
            return PyLdpFlReport{self, std::move(report)};
          },
          py::arg("weights"), py::arg("rng") = py::none(),
          "One client's report of its flattened weights: a bit per weight.")
      .def_static(
          "layer_ranges",
          [](const py::object& weights_arg, const py::object& layer_sizes_arg,
             const py::object& margin_arg) {
            const auto layer_sizes = ScalarArg<std::vector<std::size_t>>(
                layer_sizes_arg, "layer_sizes", "a sequence of whole numbers >= 0");
            const auto margin = ScalarArg<double>(margin_arg, "margin", "a number");
            FloatArray w = ArrayArgOf<float>(weights_arg, "weights");
            if (w.ndim() != 1) Raise("weights must be a 1-D array of float32 values");
            std::vector<std::pair<double, double>> out;
            for (const auto& r : Take(LayerRangesOf(View(w), layer_sizes, margin))) {
              out.emplace_back(r.center, r.radius);
            }
            return out;
          },
          py::arg("weights"), py::arg("layer_sizes"), py::arg("margin") = 1.0,
          "LDP-FL's adaptive rule: per layer, the centre and half-width of its weights (times "
          "margin), from the global model the server announces.");
}

// A report, and the server's side of the reports.
void BindAggregation(py::module_& m) {
  py::class_<PyLdpFlReport>(m, "LdpFlReport")
      .def_property_readonly(
          "bytes", [](const PyLdpFlReport& self) { return self.report.EncodedBytes(); },
          "The report's wire size: a bit per weight, two float64 per layer.")
      .def(
          "values",
          [](const PyLdpFlReport& self) {
            const auto& rz = self.owner->randomizer;
            py::array_t<float> out(static_cast<py::ssize_t>(self.report.weights));
            float* o = out.mutable_data();
            std::size_t i = 0;
            for (std::size_t l = 0; l < rz.layer_sizes().size(); ++l) {
              for (std::size_t j = 0; j < rz.layer_sizes()[l]; ++j, ++i) {
                o[i] = static_cast<float>(rz.Decode(l, self.report.Bit(i)));
              }
            }
            return out;
          },
          "The perturbed weights the report stands for.");

  py::class_<PyLdpFlAggregator>(m, "LdpFlAggregator", R"doc(
The server's side of LdpFlRandomizer: adds reports (checked against the
announced ranges) and returns the mean weight per weight, from integer counts
of ones, so the order of the reports (shuffled or not) never matters.)doc")
      .def(py::init([](const std::shared_ptr<PyLdpFlRandomizer>& r) {
             return std::make_unique<PyLdpFlAggregator>(r);
           }),
           py::arg("randomizer"))
      .def(
          "add",
          [](PyLdpFlAggregator& self, const PyLdpFlReport& report) {
            if (report.owner != self.owner) {
              Raise("the report was made by another LdpFlRandomizer (other ranges)");
            }
            Check(self.aggregator.Add(report.report));
          },
          py::arg("report"))
      .def_property_readonly("count",
                             [](const PyLdpFlAggregator& self) { return self.aggregator.count(); })
      .def(
          "mean",
          [](const PyLdpFlAggregator& self) {
            if (self.aggregator.count() == 0) Raise("no report was added");
            const auto mean = self.aggregator.Mean();
            return py::array_t<float>(static_cast<py::ssize_t>(mean.size()), mean.data());
          },
          "The mean of the reports, per weight (unbiased for the mean of the clipped weights).");
}

// A client's whole-update report of a vector randomizer.
void BindVectorReports(py::module_& m) {
  m.def(
      "privatize_update",
      [](const py::object& randomizer_arg, const py::object& local_arg,
         const py::object& global_arg, const py::object& rng_arg) {
        const auto randomizer = ScalarArg<std::shared_ptr<VectorRandomizer>>(
            randomizer_arg, "randomizer", "a fedldp.VectorRandomizer");
        FloatArray local = ArrayArgOf<float>(local_arg, "local");
        FloatArray global = ArrayArgOf<float>(global_arg, "global_model");
        const std::size_t d = randomizer->dimension();
        if (local.ndim() != 1 || global.ndim() != 1 ||
            static_cast<std::size_t>(local.size()) != d ||
            static_cast<std::size_t>(global.size()) != d) {
          Raise("local and global_model must be 1-D arrays of the randomizer's dimension, " +
                std::to_string(d));
        }
        auto rng = ResolveRng(rng_arg);
        const auto report = WithRng(rng, [&](Rng& r) {
          return PrivatizeUpdate(*randomizer, TrainedWeights(d), View(local), View(global), r);
        });
        return LikeInput(
            py::array_t<double>(static_cast<py::ssize_t>(report.size()), report.data()), local_arg);
      },
      py::arg("randomizer"), py::arg("local"), py::arg("global_model"), py::arg("rng") = py::none(),
      "A client's whole-update report: (local - global_model) l2-clipped and privatised by a "
      "VectorRandomizer, as fedldp's simulated and deployed clients report.");
}

}  // namespace

void BindRuns(py::module_& m) {
  BindData(m);
  BindTraining(m);
  BindLdpFlReports(m);
  BindAggregation(m);
  BindVectorReports(m);
}

}  // namespace fedldp::python
