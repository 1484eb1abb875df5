#include "fedldp/fl/fedsel_options.h"

#include "fedldp/fl/server_options.h"
#include "fedldp/model/linear.h"

namespace fedldp {
namespace {

using Set = std::function<Status(FedSelConfig&, const OptionValue&)>;
using Get = std::function<OptionValue(const FedSelConfig&)>;
using Applies = std::function<Status(const FedSelConfig&)>;

// A field named by `parse` and shown by `name` (the loss, the scaling).
template <typename T, typename Parse, typename Name>
std::pair<Set, Get> Named(T FedSelConfig::*field, Parse parse, Name name) {
  return {[=](FedSelConfig& c, const OptionValue& v) -> Status {
            FEDLDP_ASSIGN_OR_RETURN(const std::string text, OptionText(v));
            FEDLDP_ASSIGN_OR_RETURN(c.*field, parse(text));
            return {};
          },
          [=](const FedSelConfig& c) -> OptionValue { return name(c.*field); }};
}

// mu: a share in [0, 1), or None / "auto" for the hyper-parameter-free rule.
Status SetMu(FedSelConfig& c, const OptionValue& v) {
  const auto* text = std::get_if<std::string>(&v);
  if (std::holds_alternative<std::monostate>(v) || (text != nullptr && *text == "auto")) {
    c.mu = std::nullopt;
    return {};
  }
  auto mu = OptionNumber(v);
  if (!mu.ok() || !(*mu >= 0 && *mu < 1)) return Error{"mu must be in [0, 1), or auto"};
  c.mu = *mu;
  return {};
}

Applies Only(bool (*fits)(const FedSelVariant&), std::string sentence) {
  return [=](const FedSelConfig& c) -> Status {
    if (fits(c.variant)) return {};
    return Error{sentence};
  };
}

FedSelOption Row(std::string_view key, std::string_view flag, std::string_view record,
                 std::string_view help, Set set, Get get, Applies applies = {}, bool varies = false,
                 std::string_view word = {}) {
  return {key,    flag, record, help, std::move(set), std::move(get), std::move(applies),
          varies, word, {}};
}

Status PartitionNeedsClients(const FedSelConfig& c) {
  if (!c.partition().iid() && c.clients == 0) {
    return Error{std::string(c.label_shards > 0 ? "label_shards" : "dirichlet_alpha") +
                 " needs clients (the rows are split among them)"};
  }
  return {};
}

bool IsVector(const FedSelVariant& v) { return TraitsOf(v).whole_vector; }

// The recorded options of the model and its steps, in the records' order.
std::vector<FedSelOption> TrainingOptions() {
  const auto loss = Named(&FedSelConfig::loss, ParseLoss, LossName);
  const auto scaling =
      Named(&FedSelConfig::gradient_scaling, ParseGradientScaling, GradientScalingName);
  return {
      Row("loss", "model", "model", "logistic or svm", loss.first, loss.second),
      Row("gradient_scaling", "gradient-scaling", "gradient_scaling",
          "clip (coordinate-wise to [-1, 1]) or normalize (to max |g_j| = 1)", scaling.first,
          scaling.second),
      Row("epsilon", "epsilon", "epsilon", "Total budget per client",
          SetField(&FedSelConfig::epsilon), GetField(&FedSelConfig::epsilon)),
      Row("epochs", "epochs", "epochs", "Epochs E", SetField(&FedSelConfig::epochs),
          GetField(&FedSelConfig::epochs)),
      Row("learning_rate", "lr", "lr", "Learning rate alpha (vector variants: their tuned default)",
          SetField(&FedSelConfig::learning_rate), GetField(&FedSelConfig::learning_rate)),
      Row("momentum", "momentum", "momentum",
          "Momentum eta in [0, 1) of FedSel's two-stage clients (ps-pm, exp-hm...); the flat, "
          "compressed, vector, np and np-rs variants have none",
          SetField(&FedSelConfig::momentum), GetField(&FedSelConfig::momentum)),
      Row("batch_fraction", "batch-fraction", "batch_fraction",
          "m / N (vector variants: their tuned default)", SetField(&FedSelConfig::batch_fraction),
          GetField(&FedSelConfig::batch_fraction)),
      Row("lambda_", "lambda", "lambda", "l2 regularisation", SetField(&FedSelConfig::lambda),
          GetField(&FedSelConfig::lambda)),
      Row("clip", "clip", "clip",
          "Vector variants (privunitg, fastprojunit, gaussian...): l2 clip norm C of a gradient "
          "(default: the variant's tuned value)",
          SetField(&FedSelConfig::clip), GetField(&FedSelConfig::clip),
          Only(IsVector, "clip applies to the vector variants only"), true),
      SimulatedOnly(Row(
          "tail_average", "tail-average", "tail_average",
          "Return the mean of the server's iterates over this final share of the iterations, in "
          "[0, 1) (0: the last iterate; post-processing, no privacy cost)",
          SetField(&FedSelConfig::tail_average), GetField(&FedSelConfig::tail_average), {}, true))};
}

// The server optimiser's (fl/server_options.h): the simulator's only, as
// the deployment's FedSel server steps by the mean.
std::vector<FedSelOption> ServerOptions() {
  std::vector<FedSelOption> rows = ServerOptimizerOptions(&FedSelConfig::server);
  for (FedSelOption& row : rows) row = SimulatedOnly(std::move(row));
  return rows;
}

// The recorded options of who reports in a round, in the records' order.
std::vector<FedSelOption> RoundOptions() {
  return {
      Row("shuffle", "shuffle", "shuffle",
          "Private variants with pure eps-LDP reports: each round's reports pass a shuffler "
          "(rounds of at least m); the statement adds the per-round central and total (eps, delta) "
          "of `fedldp account run`. The variants' defaults are tuned for local eps 2: shuffled, "
          "use "
          "--tune, or on Adult the frontier's choice (privunitg: --epochs 4 --batch-fraction 0.2 "
          "--lr 8 --clip 1)",
          SetField(&FedSelConfig::shuffle), GetField(&FedSelConfig::shuffle)),
      Row("shuffle_batch", "shuffle-batch", "",
          "With --shuffle: the statement's n, each report shuffled among at least this many "
          "(0: the smallest round). Served, the server refuses any smaller batch, so several "
          "shufflers, or clients that drop out, are stated honestly by a smaller n",
          SetField(&FedSelConfig::shuffle_batch), GetField(&FedSelConfig::shuffle_batch),
          [](const FedSelConfig& c) -> Status {
            if (c.shuffle) return {};
            return Error{"shuffle_batch applies with the shuffler only"};
          }),
      Row("sample_clients", "sample-clients", "sample_clients",
          "Each round samples m = (m / N) N clients uniformly, for E N / m rounds, instead of "
          "epochs of disjoint rounds; with --shuffle, the shuffler draws them in secret from the "
          "server and each round is amplified by sampling; without it, a client declines after E "
          "reports",
          SetField(&FedSelConfig::sample_clients), GetField(&FedSelConfig::sample_clients)),
      SimulatedOnly(
          Row("poisson_clients", "poisson-clients", "poisson_clients",
              "With --sample-clients and --shuffle: each client takes part in a round on its own "
              "with probability m / N (Poisson participation: the round's size varies and the "
              "shuffler shows it) instead of m of the N; stated by its binomial mixture over the "
              "count (account run --poisson)",
              SetField(&FedSelConfig::poisson_clients), GetField(&FedSelConfig::poisson_clients))),
      SimulatedOnly(Row(
          "random_allocation", "random-allocation", "random_allocation",
          "With --shuffle and epochs of disjoint rounds: the shuffler draws each epoch's order in "
          "secret, so the server is not told which round of the epoch a client is in (random "
          "allocation); each epoch is stated as one shuffle of all its reports (account run "
          "--allocation)",
          SetField(&FedSelConfig::random_allocation), GetField(&FedSelConfig::random_allocation))),
      SimulatedOnly(Row(
          "clients", "clients", "clients",
          "Split the training rows among N clients, each reporting the mean gradient of its rows "
          "(0: one client per row, as in the papers)",
          SetField(&FedSelConfig::clients), GetField(&FedSelConfig::clients))),
      SimulatedOnly(
          Row("dirichlet_alpha", "dirichlet-alpha", "dirichlet_alpha",
              "With clients: 0 gives equal IID shards; alpha > 0 a Dirichlet(alpha) label skew per "
              "client (small alpha: few classes each)",
              SetField(&FedSelConfig::dirichlet_alpha), GetField(&FedSelConfig::dirichlet_alpha),
              PartitionNeedsClients)),
      SimulatedOnly(
          Row("label_shards", "label-shards", "label_shards",
              "With clients: give each client K shards of the label-sorted rows (McMahan et al. "
              "2017: at most about K labels each; 0: off)",
              SetField(&FedSelConfig::label_shards), GetField(&FedSelConfig::label_shards),
              PartitionNeedsClients))};
}

// The options the JSON records write, in the records' order.
std::vector<FedSelOption> RecordedOptions() {
  return JoinedRows(JoinedRows(TrainingOptions(), RoundOptions()), ServerOptions());
}

std::vector<FedSelOption> OtherOptions() {
  return {
      Row(
          "mu", "mu", "", "Share of eps' for selection, or 'auto' (theta-capped rule)", SetMu,
          [](const FedSelConfig& c) -> OptionValue {
            if (c.mu) return *c.mu;
            return std::monostate{};
          },
          {}, false, "auto"),
      Row("theta", "theta", "", "Cap of the automatic mu", SetField(&FedSelConfig::theta),
          GetField(&FedSelConfig::theta)),
      Row("k_fraction", "k-fraction", "", "k / d for the Top-k set",
          SetField(&FedSelConfig::k_fraction), GetField(&FedSelConfig::k_fraction)),
      SimulatedOnly(Row("delta", "delta", "", "Vector gaussian variants: delta per report",
                        SetField(&FedSelConfig::delta), GetField(&FedSelConfig::delta),
                        Only(NeedsDelta, "delta applies to the gaussian variants only"))),
      SimulatedOnly(Row(
          "projection_ratio", "projection-ratio", "",
          "Compressed variants: q / d, the share of dimensions a report projects onto",
          SetField(&FedSelConfig::projection_ratio), GetField(&FedSelConfig::projection_ratio))),
      Row("projection_k", "projection-k", "", "FastProjUnit's k (0: min(d, 1000))",
          SetField(&FedSelConfig::projection_k), GetField(&FedSelConfig::projection_k)),
      SimulatedOnly(Row("max_iterations", "max-iterations", "",
                        "Stop after this many global iterations (0: run all epochs)",
                        SetField(&FedSelConfig::max_iterations),
                        GetField(&FedSelConfig::max_iterations))),
      Row("even_rounds", "even-rounds", "",
          "Rounds of floor(N / m) even parts without a shuffler (the vector variants' default)",
          SetField(&FedSelConfig::even_rounds), GetField(&FedSelConfig::even_rounds), {}, true)};
}

}  // namespace

std::span<const FedSelOption> FedSelOptions() {
  static const std::vector<FedSelOption> options = JoinedRows(RecordedOptions(), OtherOptions());
  return options;
}

Result<FedSelConfig> FedSelConfigWith(const FedSelVariant& variant,
                                      std::span<const std::pair<std::string, OptionValue>> given) {
  FedSelConfig config = DefaultFedSelConfig(variant);
  FEDLDP_RETURN_IF_ERROR(ApplyOptions(FedSelOptions(), given, config));
  return config;
}

}  // namespace fedldp
