#include "fedldp/fl/ldpfl_options.h"

#include <algorithm>
#include <vector>

#include "fedldp/fl/server_options.h"
#include "fedldp/model/neural_net.h"

namespace fedldp {
namespace {

using Set = std::function<Status(LdpFlConfig&, const OptionValue&)>;
using Get = std::function<OptionValue(const LdpFlConfig&)>;
using Applies = std::function<Status(const LdpFlConfig&)>;

struct Field {
  Set set;
  Get get;
  std::vector<std::string> choices;
};

template <typename T>
Field Plain(T LdpFlConfig::*field) {
  return {SetField(field), GetField(field), {}};
}

template <typename T>
Field Choice(T LdpFlConfig::*field, std::vector<std::string> names, std::vector<T> values) {
  auto [set, get] = ChoiceField(field, names, std::move(values));
  return {std::move(set), std::move(get), std::move(names)};
}

// A field of one of the config's parts (the server optimiser's, say).
template <typename Part, typename T>
Field Member(Part LdpFlConfig::*part, T Part::*field) {
  return {
      [=, set = SetField(field)](LdpFlConfig& c, const OptionValue& v) { return set(c.*part, v); },
      [=, get = GetField(field)](const LdpFlConfig& c) { return get(c.*part); },
      {}};
}

template <typename Part, typename T>
Field MemberChoice(Part LdpFlConfig::*part, T Part::*field, std::vector<std::string> names) {
  std::vector<T> values;
  for (std::size_t i = 0; i < names.size(); ++i) values.push_back(static_cast<T>(i));
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  auto accessors = ChoiceField(field, names, std::move(values));
  return {[=, set = std::move(accessors.first)](LdpFlConfig& c, const OptionValue& v) {
            return set(c.*part, v);
          },
          [=, get = std::move(accessors.second)](const LdpFlConfig& c) { return get(c.*part); },
          std::move(names)};
}

// The fixed range's centre or radius.
Field RangeEnd(double LayerRange::*end) {
  return {[end](LdpFlConfig& c, const OptionValue& v) -> Status {
            FEDLDP_ASSIGN_OR_RETURN(c.fixed_range.*end, OptionNumber(v));
            return {};
          },
          [end](const LdpFlConfig& c) -> OptionValue { return c.fixed_range.*end; },
          {}};
}

Field Randomizer() {
  const std::vector<std::string> names = LdpFlRandomizerNames();
  std::vector<std::optional<VectorMechanism>> values;
  for (const std::string& name : names) values.push_back(ParseLdpFlRandomizer(name).value());
  return Choice(&LdpFlConfig::vector, names, std::move(values));
}

// The architecture as a TorchScript file: a path, never read as a name.
Field ModelFile() {
  return {[](LdpFlConfig& c, const OptionValue& v) -> Status {
            FEDLDP_ASSIGN_OR_RETURN(const std::string path, OptionText(v));
            if (path.empty()) return {};  // the dataset's network
            c.arch = path.find('/') == std::string::npos ? "./" + path : path;
            return {};
          },
          [](const LdpFlConfig& c) -> OptionValue {
            return IsTorchScriptFile(c.arch) ? c.arch : std::string();
          },
          {}};
}

Applies VectorOnly(std::string sentence) {
  return [=](const LdpFlConfig& c) -> Status {
    if (c.vector) return {};
    return Error{sentence};
  };
}

Applies TwoPointOnly(std::string sentence) {
  return [=](const LdpFlConfig& c) -> Status {
    if (!c.vector) return {};
    return Error{sentence};
  };
}

LdpFlOption Row(std::string_view key, std::string_view flag, std::string_view record,
                std::string_view help, Field field, Applies applies = {}, bool varies = false) {
  return {key,
          flag,
          record,
          help,
          std::move(field.set),
          std::move(field.get),
          std::move(applies),
          varies,
          {},
          std::move(field.choices)};
}

// The registered networks (model/neural_net.h), or a model file.
std::string_view ArchHelp() {
  static const std::string help =
      "A registered network (" + ArchitectureNames() + ") or a TorchScript file (as model)";
  return help;
}

// The options the JSON records write, in the records' order.
std::vector<LdpFlOption> RecordedOptions() {
  return {
      Row("arch", "", "arch", ArchHelp(), Plain(&LdpFlConfig::arch), {}, true),
      Row("range", "range", "range", "fixed (c, r) for every layer, or adaptive per layer",
          Choice(&LdpFlConfig::adaptive, {"fixed", "adaptive"}, {false, true})),
      Row("perturb", "perturb", "perturb",
          "What clients perturb: their weights (Algorithm 2), or their update W - W_global "
          "(fixed range only)",
          Choice(&LdpFlConfig::perturb_updates, {"weights", "updates"}, {false, true})),
      Row("randomizer", "randomizer", "randomizer",
          "twopoint (the paper's, per weight), or a vector randomizer on the whole update",
          Randomizer()),
      Row("clip", "clip", "clip", "Vector randomizers: l2 clip norm of a client's update",
          Plain(&LdpFlConfig::clip), VectorOnly("clip applies to the vector randomizers only")),
      Row("epsilon", "epsilon", "epsilon",
          "Budget per weight (twopoint); per report (vector randomizers)",
          Plain(&LdpFlConfig::epsilon)),
      Row("center", "center", "center", "Fixed range: centre c", RangeEnd(&LayerRange::center),
          TwoPointOnly("center applies to the two-point randomizer only")),
      Row("radius", "radius", "radius",
          "Fixed range: radius r > 0 (default 0.075 mnist, 0.015 fmnist, 1 cifar10)",
          RangeEnd(&LayerRange::radius),
          TwoPointOnly("radius applies to the two-point randomizer only"), true),
      SimulatedOnly(Row("clients", "clients", "clients", "Clients n (equal shards)",
                        Plain(&LdpFlConfig::clients))),
      Row("fraction", "fraction", "fraction", "Fraction of clients per round",
          Plain(&LdpFlConfig::fraction)),
      SimulatedOnly(Row("dirichlet_alpha", "dirichlet", "dirichlet_alpha",
                        "Non-IID: Dirichlet alpha per class (0: IID)",
                        Plain(&LdpFlConfig::dirichlet_alpha))),
      SimulatedOnly(Row("label_shards", "label-shards", "label_shards",
                        "Non-IID: K shards of the label-sorted rows per client (McMahan et al. "
                        "2017; 0: off)",
                        Plain(&LdpFlConfig::label_shards))),
      Row("disjoint_rounds", "disjoint-rounds", "disjoint_rounds",
          "Cut each epoch of floor(1 / fraction) rounds from one random order, so a client "
          "reports at most once per epoch (default: a fresh subset every round, and the "
          "privacy statement counts every round)",
          Plain(&LdpFlConfig::disjoint_rounds)),
      SimulatedOnly(Row("schedule", "schedule", "schedule",
                        "Shuffler: permutation, or delay (Algorithm 3's random delays)",
                        Choice(&LdpFlConfig::schedule, {"permutation", "delay"},
                               {ShuffleSchedule::kPermutation, ShuffleSchedule::kRandomDelay}))),
      SimulatedOnly(Row("freeze", "freeze", "freeze",
                        "Layers kept at their initial (public, seeded) weights, neither trained "
                        "nor reported: layer or module names, comma-separated (e.g. fc1; the "
                        "cnn's: conv1, conv2, fc1, fc2); a vector randomizer's report then has "
                        "the other layers' dimension (vector randomizers and noise-free runs)",
                        Plain(&LdpFlConfig::freeze))),
      Row("rounds", "rounds", "rounds", "Communication rounds", Plain(&LdpFlConfig::rounds)),
      Row("local_epochs", "local-epochs", "local_epochs", "Local epochs E",
          Plain(&LdpFlConfig::local_epochs)),
      Row("batch", "batch", "batch", "Local mini-batch size B", Plain(&LdpFlConfig::batch)),
      Row("learning_rate", "lr", "lr", "Learning rate (default 0.03; 0.015 for cifar10)",
          Plain(&LdpFlConfig::learning_rate), {}, true),
      SimulatedOnly(
          Row("standardize_inputs", "raw-inputs", "standardized",
              "Feed [0, 1] pixels (default: standardised by the training set's mean and sd)",
              Plain(&LdpFlConfig::standardize_inputs)))};
}

// What the statement claims: who draws the clients, and a central target.
std::vector<LdpFlOption> StatementOptions() {
  return {
      SimulatedOnly(Row("secret_sampling", "secret-sampling", "secret_sampling",
                        "The shuffler draws each round's clients in secret from the server, and "
                        "the statement amplifies each round by that sampling (vector randomizers "
                        "of pure eps reports, with the shuffler; with --disjoint-rounds it draws "
                        "each epoch's order, and each epoch is stated as one shuffle of all its "
                        "reports: random allocation; default: the server draws them, and no "
                        "amplification is claimed)",
                        Plain(&LdpFlConfig::secret_sampling))),
      SimulatedOnly(Row("central_epsilon", "central-epsilon", "central_epsilon",
                        "The central epsilon per client over the run (at --delta) that sets the "
                        "epsilon per report: shuffled vector randomizers of pure eps reports "
                        "(0: none; not beside --epsilon)",
                        Plain(&LdpFlConfig::central_epsilon)))};
}

// A setting of one kind of iterate averaging only.
Applies ForAveraging(std::string sentence, IterateAveragingKind kind) {
  return [=](const LdpFlConfig& c) -> Status {
    if (c.averaging.kind == kind) return {};
    return Error{sentence};
  };
}

// The server's optimiser and iterate averaging (fl/server_optimizer.h).
std::vector<LdpFlOption> ServerOptions() {
  using A = IterateAveragingConfig;
  return JoinedRows(
      ServerOptimizerOptions(&LdpFlConfig::server),
      {Row("average", "average", "average",
           "Release the iterates' average: none, ema (moving average), or tail (the "
           "uniform mean of the last rounds)",
           MemberChoice(&LdpFlConfig::averaging, &A::kind, IterateAveragingNames())),
       Row("average_decay", "average-decay", "average_decay",
           "ema: the weight of the average so far, in [0, 1)",
           Member(&LdpFlConfig::averaging, &A::decay),
           ForAveraging("average_decay applies to average ema only", IterateAveragingKind::kEma)),
       Row("average_tail", "average-tail", "average_tail",
           "tail: the fraction of the run's rounds averaged, in (0, 1]",
           Member(&LdpFlConfig::averaging, &A::tail),
           ForAveraging("average_tail applies to average tail only",
                        IterateAveragingKind::kTail))});
}

std::vector<LdpFlOption> OtherOptions() {
  return {
      Row("model", "model", "",
          "Your own network, a TorchScript file (torch.jit.save): takes (batch, 784) rows, "
          "returns (batch, classes) logits or log-probabilities; each parameter tensor is a layer "
          "with its own range (default: the paper's CNN; VGG for cifar10). Served, the task "
          "carries the file and every client runs it",
          ModelFile()),
      Row("adaptive_margin", "adaptive-margin", "",
          "Adaptive ranges: each layer's half-width times this factor, >= 1",
          Plain(&LdpFlConfig::adaptive_margin)),
      Row("delta", "delta", "", "The shuffle-model statement's delta", Plain(&LdpFlConfig::delta)),
      Row("shuffle_batch", "shuffle-batch", "",
          "The shuffle-model statement's n: each report shuffled among at least this many (0: "
          "a round's clients). Served, the server refuses any smaller batch, so several "
          "shufflers, or clients that drop out, are stated honestly by a smaller n",
          Plain(&LdpFlConfig::shuffle_batch)),
      SimulatedOnly(Row("client_batch", "client-batch", "",
                        "One-step clients (local epochs 1, a batch >= every shard) train this "
                        "many at a time in one batched pass of per-example gradients, each with "
                        "the step it takes alone; 0: each client alone",
                        Plain(&LdpFlConfig::client_batch))),
      SimulatedOnly(Row("evaluate_every", "evaluate-every", "",
                        "Test the model after every k-th round and after the last (1: every "
                        "round)",
                        Plain(&LdpFlConfig::evaluate_every))),
      SimulatedOnly(Row("vector_delta", "vector-delta", "",
                        "Gaussian randomizers: delta per report", Plain(&LdpFlConfig::vector_delta),
                        [](const LdpFlConfig& c) -> Status {
                          if (c.vector && c.vector->traits().needs_delta) return {};
                          return Error{"vector_delta applies to the gaussian randomizers only"};
                        })),
      SimulatedOnly(Row("private", "", "", "False: the noise-free federated baseline",
                        Plain(&LdpFlConfig::is_private))),
      SimulatedOnly(Row("shuffle", "", "", "Pass the reports through the parameter shuffler",
                        Plain(&LdpFlConfig::shuffle)))};
}

}  // namespace

std::span<const LdpFlOption> LdpFlOptions() {
  static const std::vector<LdpFlOption> options =
      JoinedRows(JoinedRows(JoinedRows(RecordedOptions(), StatementOptions()), ServerOptions()),
                 OtherOptions());
  return options;
}

Result<LdpFlConfig> LdpFlConfigWith(LdpFlConfig config,
                                    std::span<const std::pair<std::string, OptionValue>> given) {
  const auto has = [&](std::string_view key) {
    return std::any_of(given.begin(), given.end(), [&](const auto& g) { return g.first == key; });
  };
  if (has("central_epsilon") && has("epsilon")) {
    return Error{"central_epsilon sets the epsilon per report: give one of them, not both"};
  }
  FEDLDP_RETURN_IF_ERROR(ApplyOptions(LdpFlOptions(), given, config));
  return config;
}

}  // namespace fedldp
