// LDP-FL's Algorithm 1 (Sun, Qian & Chen, IJCAI 2021) as plain synchronous
// logic: per round the server picks round(fraction n) of the n clients; each
// starts from the global weights, runs `local_epochs` of mini-batch SGD on
// its shard, perturbs every weight with the two-point mechanism over its
// layer's range (pipeline/ldpfl.h) and sends the 1-bit report through the
// parameter shuffler; the server averages per weight.
//
// Ranges. Fixed: (c, r) for every layer (the paper: (0, 0.075) MNIST, (0,
// 0.015) Fashion-MNIST). Adaptive (our reading of "the cloud updates C and R
// from W_l", which the paper does not specify further): round 1 uses each
// layer's range of the initial weights; afterwards layer l gets
// c_l = (max + min) / 2 and r_l = (max - min) / 2 of the new global layer,
// widened by the factor `adaptive_margin` (1.0 = exactly the layer's range).
// With noise the averaged weights' spread includes the mechanism's noise;
// the rule is stable while that noise is small against the weights' spread
// (it is at eps >= 1 with 100 clients; docs/ldpfl.md).
//
// What is perturbed. Weights (Algorithm 2 as written, the default): the
// client reports its trained weights W and the server's new model is their
// mean. Updates (an alternative reading of the paper's "local weights
// update", tested in docs/ldpfl.md): the client reports W - W_global, clipped to the
// same fixed (c, r), and the server adds the mean update to W_global. The
// mechanism, reports, shuffler and privacy statement are the same; only the
// fixed range is used with updates.
//
// Shards: equal IID shards of a seeded permutation, or non-IID with each
// class split over the clients by Dirichlet(alpha) proportions.
//
// Vector randomizers (beyond the paper, issue 20): with `randomizer` one of
// privunitg, fastprojunit, gaussian, gaussian-classic (vector/), each client
// privatises its whole update W - W_global, l2-clipped to `clip`, at
// `epsilon` per report (not per weight); the server adds the mean report to
// W_global, after permuting the round's reports when `shuffle` is set. The
// ranges and `perturb_updates` do not apply. The privacy statement is
// `fedldp account run`'s for LdpFlReportsPerClient rounds of `fraction n`
// shuffled reports.
#ifndef FEDLDP_FL_LDPFL_H_
#define FEDLDP_FL_LDPFL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"
#include "fedldp/data/partition.h"
#include "fedldp/fl/cluster.h"
#include "fedldp/fl/parallel.h"
#include "fedldp/fl/server_optimizer.h"
#include "fedldp/pipeline/ldpfl.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/privacy_record.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/random/rng.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

struct LdpFlConfig {
  std::string arch = "cnn";
  std::size_t clients = 100;
  double fraction = 1.0;  // of clients per round
  int rounds = 10;
  int local_epochs = 1;
  std::size_t batch = 10;
  double learning_rate = 0.03;
  bool is_private = true;  // false: the noise-free federated baseline
  double epsilon = 1.0;    // per weight
  bool adaptive = false;
  LayerRange fixed_range{0, 0.075};
  bool perturb_updates = false;  // false: weights (see above)
  double adaptive_margin = 1.0;
  double dirichlet_alpha = 0;    // > 0: a Dirichlet label skew (data/partition.h)
  std::size_t label_shards = 0;  // > 0: shards of the label-sorted rows per client
  Partition partition() const { return {dirichlet_alpha, label_shards}; }
  bool shuffle = true;  // through the ParameterShuffler (same model either way)
  ShuffleSchedule schedule = ShuffleSchedule::kPermutation;
  double delta = 1e-5;  // for the shuffle-model statement
  // The statement's n: each report shuffled among at least this many (0 or
  // more than a round: the round's clients; ShuffleBatchOf). A deployment's
  // server refuses any smaller batch from a shuffler.
  std::uint64_t shuffle_batch = 0;
  // Inputs standardised by the training set's pixel mean and standard
  // deviation (one pair for all pixels: public constants of the dataset,
  // which the server would announce with the model), as in the PyTorch
  // MNIST example; false feeds the loader's [0, 1] pixels.
  bool standardize_inputs = true;
  // None ("twopoint"): the paper's per-weight mechanism (above); or a
  // vector randomizer on the whole update, with its l2 clip and, for the
  // Gaussians, delta per report.
  std::optional<VectorMechanism> vector;
  double clip = 1.0;
  double vector_delta = 1e-6;
  // Rounds with disjoint clients: an epoch is floor(clients / per round)
  // rounds cut from one random order, so a client reports at most once per
  // epoch (LdpFlReportsPerClient), instead of a fresh uniform subset every
  // round, in which a client may report in every round.
  bool disjoint_rounds = false;
  // One-step clients (local_epochs 1 and a batch >= every shard: a client's
  // update is one gradient step) train in batched passes of per-example
  // gradients (NeuralNet::GroupGradients), each client with the step it
  // takes alone: a round's clients in passes of equal size, at most
  // client_batch clients and 2^26 floats of gradients a pass, dealt to the
  // threads and processes; 0 trains each client alone.
  std::size_t client_batch = 64;
  // The model is tested after every evaluate_every-th round and after the
  // last one; other rounds' accuracy is NaN (not measured). Testing 10,000
  // MNIST images takes about a second on 2 cores, as long as training 2,000
  // noise-free one-step clients.
  int evaluate_every = 1;
  // What the server does with a round's estimate (fl/server_optimizer.h):
  // fedavg with lr 1 (the default) takes it as the new model.
  ServerOptimizerConfig server;
  IterateAveragingConfig averaging;
  // Each round's clients (fraction n of the n, uniformly) are drawn by the
  // shuffler in secret from the server, which sees only the shuffled
  // reports: the statement amplifies each round by that sampling (vector
  // randomizers of pure eps reports, with the shuffler). With disjoint
  // rounds the shuffler draws each epoch's order in secret instead (random
  // allocation: a client in one round of the epoch, the server not told
  // which), and each epoch is stated as one shuffle of all its reports
  // (account run --allocation). The clients drawn are the same either way;
  // only who draws them, and so what the server can know, differs.
  bool secret_sampling = false;
  // The central epsilon per client over the run (at `delta`) the run must
  // meet, 0 for none: with the shuffler and a vector randomizer of pure eps
  // reports. CalibrateLdpFlToCentral sets `epsilon` from it (fedldp ldpfl
  // --central-epsilon); TrainLdpFl refuses a run whose statement exceeds it.
  double central_epsilon = 0;
  // Layers kept at their initial weights (public: the seed's
  // initialisation): comma-separated layer names (conv1.weight) or module
  // names (fc1: fc1.weight and fc1.bias); empty: none. A client neither
  // trains nor reports them, so a vector randomizer's report has the other
  // layers' dimension (LdpFlTrainedWeights). Vector randomizers and noise-free
  // runs only: the two-point reports every weight.
  std::string freeze;

  // OK if the configuration is one TrainLdpFl runs, whatever the data; else
  // why not (CheckLdpFlConfig adds the client count against the rows).
  Status Validate() const;
};

// The most reports one client sends over the run: every round, or with
// disjoint rounds one per epoch begun. The privacy statements compose this
// many reports.
std::size_t LdpFlReportsPerClient(const LdpFlConfig& config);
// The clients of a round: round(fraction n), at least 1.
std::size_t LdpFlClientsPerRound(const LdpFlConfig& config);
// The rounds of an epoch with disjoint rounds: floor(clients / per round),
// at least 1.
std::size_t LdpFlRoundsPerEpoch(const LdpFlConfig& config);

struct LdpFlRound {
  int round = 0;
  double accuracy = 0;  // on the test set; NaN if not tested this round (evaluate_every)
  double train_seconds = 0, perturb_seconds = 0, shuffle_seconds = 0, aggregate_seconds = 0;
  std::vector<LayerRange> ranges;  // used in this round
};

struct LdpFlRun {
  std::vector<LdpFlRound> rounds;
  double majority = 0;  // majority-class accuracy on the test set
  std::size_t parameters = 0;
  std::size_t trained = 0;  // the weights a client trains and reports (all but the frozen)
  std::size_t report_bytes = 0, float32_bytes = 0;  // one client's report
  std::size_t reports = 0;
  std::size_t most_reports = 0;              // the most rounds one client took part in
  LdpFlPrivacy privacy;                      // two-point: per weight
  std::optional<RunPrivacy> vector_privacy;  // vector randomizers: per report, over the run
  std::vector<float> weights;  // the released model: the last, or the iterates' average
  bool stopped = false;        // a stop was requested: fewer rounds than configured
  // How the clients trained: "one at a time", or how many one-step clients
  // a batched pass took, and whether the model has a per-example path.
  std::string client_step;
  double final_accuracy() const { return rounds.empty() ? 0 : rounds.back().accuracy; }
  // What the run states per client over all its rounds: a vector
  // randomizer's total; else the two-point's shuffled statement where one
  // applies, or plain composition (delta 0). Records quote it.
  DpGuarantee total() const;
};

// The adaptive rule: per layer, the centre and half-width of the layer's
// weights, the half-width times `margin` (at least 1e-6). Refused: a layer
// of no weights, sizes whose sum overflows or differs from weights.size(),
// a weight that is not finite (a diverged model), margin not finite and > 0.
Result<std::vector<LayerRange>> LayerRangesOf(std::span<const float> weights,
                                              const std::vector<std::size_t>& layer_sizes,
                                              double margin);

// The inputs' standardisation: the mean and standard deviation of every
// feature value of `rows` (sd 1 if there are none). The simulator uses its
// training rows; a deployment announces the same constants with its task.
struct InputMoments {
  double mean = 0, sd = 1;
};
InputMoments InputMomentsOf(const Dataset& data, std::span<const std::size_t> rows);

// OK if TrainLdpFl can run `config` on `train_rows` training rows, else why
// not: Validate() and the clients against the rows, what TrainLdpFl checks
// first (a caller checks before printing or writing anything).
Status CheckLdpFlConfig(const LdpFlConfig& config, std::size_t train_rows);

// The vector randomizer of `config` over d weights, public_seed for
// fastprojunit-corr (nullptr for twopoint).
// The randomizer's name: "twopoint", or the vector mechanism's.
std::string LdpFlRandomizerName(const LdpFlConfig& config);
// A run's privacy record (privacy/privacy_record.h): the vector randomizer's
// statement if there is one, else the two-point's per weight; none for a
// noise-free run. The simulator's and the deployment's, alike.
std::optional<PrivacyRecord> LdpFlPrivacyRecord(const LdpFlConfig& config,
                                                const LdpFlPrivacy& per_weight,
                                                const std::optional<RunPrivacy>& vector);
// "twopoint" (none) or a vector mechanism's name; an error naming the
// choices otherwise.
Result<std::optional<VectorMechanism>> ParseLdpFlRandomizer(std::string_view name);
// The names ParseLdpFlRandomizer takes: twopoint, then every registered
// vector randomizer but duchi (twopoint's own per-coordinate twin at eps / d).
std::vector<std::string> LdpFlRandomizerNames();

Result<std::unique_ptr<VectorRandomizer>> LdpFlVectorRandomizer(const LdpFlConfig& config,
                                                                std::size_t d,
                                                                std::uint64_t public_seed);

// What a client's reports of `randomizer` cost over a run, as TrainLdpFl
// and the deployment state it: reports_per_client reports, shuffled in
// rounds of per_round when `shuffle` (not the Gaussian's: no amplification
// is proven for (eps, delta) reports), with the randomizer's floating-point
// allowance. Amplification by sampling only with sampling_rate < 1: the
// shuffler draws per_round of the clients in each of reports_per_client
// rounds, in secret from the server (secret_sampling); a server that draws
// them knows who took part, and its statement takes sampling_rate 1.
RunPrivacyConfig LdpFlVectorRunPrivacy(const VectorRandomizer& randomizer,
                                       std::size_t reports_per_client, std::size_t per_round,
                                       bool shuffle, double delta, double sampling_rate = 1);
// The same for the run `config` describes (its reports per client, clients
// per round, shuffler, delta, and secret sampling's rate): what TrainLdpFl
// states.
RunPrivacyConfig LdpFlRunPrivacyOf(const LdpFlConfig& config, const VectorRandomizer& randomizer);
// `config` with the largest `epsilon` per report whose run, on a model of d
// weights, stays within (config.central_epsilon, config.delta) per client in
// total by the accountant (run_accounting.h; its floating-point allowance
// adds to delta, as the statement says). Refused without a central target.
Result<LdpFlConfig> CalibrateLdpFlToCentral(LdpFlConfig config, std::size_t d);

// The weights a client's update covers: every layer but the frozen ones
// (LdpFlConfig::freeze), as runs of the flat weights.
class TrainedWeights {
 public:
  // Every weight of a model of `parameters`.
  explicit TrainedWeights(std::size_t parameters);
  // The layers (names and sizes, NeuralNet's) but those `freeze` names;
  // refused: a name that is no layer's or module's, or every layer frozen.
  static Result<TrainedWeights> Of(std::string_view freeze, const std::vector<std::string>& names,
                                   const std::vector<std::size_t>& sizes);
  std::size_t dimension() const { return dimension_; }
  std::size_t parameters() const { return parameters_; }
  // Per layer: frozen (Of's layers; empty for the constructor's).
  const std::vector<bool>& frozen() const { return frozen_; }
  // (local - global) on the trained weights, in doubles: what a vector
  // randomizer clips and privatises. Each of these throws
  // std::invalid_argument for spans of another size than they take.
  std::vector<double> UpdateOf(std::span<const float> local, std::span<const float> global) const;
  // The trained weights of `w` (parameters() values), in doubles.
  std::vector<double> Gather(std::span<const float> w) const;
  // model += v / divisor on the trained weights (v: dimension() values).
  void AddTo(std::span<const double> v, double divisor, std::span<double> model) const;

 private:
  TrainedWeights() = default;
  std::vector<std::pair<std::size_t, std::size_t>> runs_;  // [begin, end)
  std::vector<bool> frozen_;
  std::size_t dimension_ = 0, parameters_ = 0;
};

// A client's update, local - global, in doubles, on every weight.
std::vector<double> UpdateOf(std::span<const float> local, std::span<const float> global);

// A client's whole-update report (vector randomizers): trained.UpdateOf(
// local, global), l2-clipped and privatised by `randomizer` (of dimension
// trained.dimension()). TrainLdpFl and the deployed client
// (net/ldpfl_deploy.h; there its compact bytes where the randomizer has
// them, the same law) both report through it.
std::vector<double> PrivatizeUpdate(const VectorRandomizer& randomizer,
                                    const TrainedWeights& trained, std::span<const float> local,
                                    std::span<const float> global, Rng& rng);

// The weights `config`'s clients train and report on its network (its
// freeze), or why `config.freeze` names no layers of it.
Result<TrainedWeights> LdpFlTrainedWeights(const LdpFlConfig& config);

// `config` with its epsilon per report calibrated to its central target
// (CalibrateLdpFlToCentral on the d of its trained weights); `config`
// itself without one. What `fedldp ldpfl` and Python's train_ldpfl run.
Result<LdpFlConfig> ApplyCentralTarget(LdpFlConfig config);

// Trains `config.rounds` rounds, calling on_round after each. A stop
// requested on `stop` ends the run before the next round: the rounds done
// are returned, with `stopped` set and the model as they left it.
// `parallel` trains and perturbs a round's clients (each on a net of its
// own); the server then takes their reports in the clients' order, so the
// result for a seed does not depend on it. Torch's intra-op threads are the
// caller's to set (1 when clients run in parallel). A TorchScript model
// trains its clients one after another (its dropout would draw from Torch's
// global generator). On a cluster of processes (fl/cluster.h) each trains
// the clients of its block, their reports are gathered, and every process
// aggregates all of them alike: the run is the same as one process's.
Result<LdpFlRun> TrainLdpFl(const LdpFlConfig& config, const Dataset& train, const Dataset& test,
                            std::uint64_t seed,
                            const std::function<void(const LdpFlRound&)>& on_round = {},
                            std::stop_token stop = {},
                            const ParallelFor& parallel = RunSequentially,
                            Cluster& cluster = OneProcess());
// What TrainLdpFl checks before its first round (the configuration against
// the rows, the model against the data, the randomizer, the accountant's
// statement, round 1's ranges), without training: OK, or why TrainLdpFl
// would refuse. A run checks it before it prints anything, so a refusal is
// one line, never a header and then the error.
Status CheckLdpFlRun(const LdpFlConfig& config, const Dataset& train, const Dataset& test,
                     std::uint64_t seed);

}  // namespace fedldp

#endif  // FEDLDP_FL_LDPFL_H_
