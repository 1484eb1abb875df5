// FedSel's Algorithm 1 as plain synchronous logic, and the baselines of its
// Table 2, named as in the paper (case-insensitive):
//   np                  full gradients, non-private
//   np-rs               one uniformly sampled gradient coordinate, scaled by d
//   np-k                Top-1 of the accumulated vector, exact value
//   np-k-o              the same with -o accumulation (a noiseless check of -o)
//   pm, hm, duchi       flat solution (Wang et al.) at eps'
//   pm-rp (hm-rp, ...)  compressed solution (random projection, q = 0.1 d)
//   {exp,pe,ps}-{pm,hm,duchi}[-c][-o]
//                       two-stage FedSel: selection at eps1, value at eps2;
//                       -c: the control spending eps1 on top of eps' for the
//                       value; -o: accumulation r += alpha g instead of r += g,
//                       and then the server steps by the mean itself (Sect.
//                       3.3: the update is (1/m) (alpha s)*).
//                       pe-published-... uses the paper's uncalibrated PE.
//   privunitg, fastprojunit, ... (FedSelVectorVariantNames: every registered
//                       vector randomizer, duchi as twopoint)
//                       beyond the paper (issue 20): the whole gradient,
//                       l2-clipped to `clip`, privatised by a vector
//                       randomizer (vector/) at eps' per report; the server
//                       averages the reports. Deployed too (privunitg,
//                       fastprojunit, twopoint; net/fedsel_coordinator.h).
//   twopoint            LDP-FL's per-weight two-point mechanism (c = 0,
//                       r = C) on every coordinate at eps'/d each: LDP-FL's
//                       randomizer at an honest total budget.
//   uniform-{pm,hm,duchi}[-o]
//                       control (not in the paper): the two-stage pipeline with
//                       a uniform selector, all of eps' for the value, reports
//                       averaged without the flat solution's enlargement by d.
//                       It separates what the private selection adds from what
//                       dropping the enlargement does (docs/fedsel.md, Table 3).
//
// The model is a LinearModel (model/linear.h): d weights on a binary task, K d
// on a K-class one (multinomial, beyond the paper; "d" below counts weights).
//
// Per iteration: m = max(1, round(batch_fraction N)) clients (each holding
// one record) compute g = clip(grad L(w)), accumulate r += g, select j from
// r, report M(r_j + eta r_j^prev), set r_j = 0; the server averages the m
// reports and steps w -= alpha mean. Each epoch visits every client once in a
// fresh random order; r persists across epochs. Randomness: client c in epoch
// e draws from CounterRng(seed, c E + e), the order from its own stream, so
// results do not depend on how many threads run the clients.
#ifndef FEDLDP_FL_FEDSEL_H_
#define FEDLDP_FL_FEDSEL_H_

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/data/dataset.h"
#include "fedldp/data/partition.h"
#include "fedldp/fl/cluster.h"
#include "fedldp/fl/parallel.h"
#include "fedldp/fl/server_optimizer.h"
#include "fedldp/model/linear.h"
#include "fedldp/pipeline/fedsel.h"
#include "fedldp/privacy/fedsel_budget.h"
#include "fedldp/privacy/privacy_record.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

// A variant by its parts; ParseFedSelVariant reads the names above, and
// FedSelVariantName writes them. The default is ps-pm. Only the parts of
// the variant's kind are read: a two-stage variant's selector and flags, the
// value mechanism of two-stage, flat and compressed ones, a vector one's
// randomizer. Each kind is a family registered once (fl/fedsel_families.cc:
// its names, traits, plan and report pair); code elsewhere asks TraitsOf,
// never the kind.
struct FedSelVariant {
  enum class Kind { kFullGradient, kTwoStage, kFlat, kCompressed, kVector };
  Kind kind = Kind::kTwoStage;
  SelectorKind selector = SelectorKind::kPs;
  // nullopt: none, the non-private baselines np-rs, np-k and np-k-o.
  std::optional<ValueMechanismKind> mechanism = ValueMechanismKind::kPiecewise;
  // kVector: the randomizer of the whole gradient; kDuchi is "twopoint",
  // every coordinate at eps/d.
  VectorMechanism vector = VectorMechanism::kPrivUnitG;
  bool control = false;              // -c
  bool scaled_accumulation = false;  // -o
  bool accumulate = true;            // false for np-rs
  bool enlarge_uniform = true;       // false for uniform-{pm,hm,duchi}: plain average
  bool is_private() const;           // TraitsOf(*this).is_private
  // OK if the parts make one of the variants named above.
  Status Validate() const;
};
Result<FedSelVariant> ParseFedSelVariant(std::string_view name);

// What a variant's family does, as the code that treats families apart
// asks it (instead of the kind).
struct FedSelTraits {
  bool is_private = false;    // perturbs its reports (np, np-rs, np-k, np-k-o do not)
  bool is_reference = false;  // np: the noise-free full gradient, the reference itself
  // Two-stage: selects one of the Top-k (k, mu and the selector apply).
  bool selects = false;
  // Privatises the l2-clipped whole gradient with a vector randomizer: the
  // clip applies (delta and k as the randomizer's traits say), defaults
  // tuned per randomizer.
  bool whole_vector = false;
  // Its reports are (eps, delta)-LDP (the Gaussians): the shuffle
  // accounting does not cover them.
  bool needs_delta = false;
};
FedSelTraits TraitsOf(const FedSelVariant& variant);
// The variant's name ("?" if its parts make none: see Validate()).
std::string FedSelVariantName(const FedSelVariant& variant);
// The variants of every registered vector randomizer (vector duchi is
// "twopoint": "duchi" names the flat solution).
std::vector<std::string> FedSelVectorVariantNames();
// vector_randomizer.h's FloatingPointStatement for the variant's reports.
std::string FloatingPointStatement(const FedSelVariant& variant);
// The same line for reports of a mechanism by name (a FedSel variant, a
// value mechanism or a vector randomizer), for statements of a budget
// (`fedldp account --mechanism`, the Python accountant) that the runs quote
// with the variant's name; an empty name gives one line for every mechanism.
// An error for an unknown name.
Result<std::string> FloatingPointStatementFor(std::string_view mechanism);
// TraitsOf(variant).needs_delta.
bool NeedsDelta(const FedSelVariant& variant);

struct FedSelConfig {
  FedSelVariant variant;  // ps-pm
  Loss loss = Loss::kLogistic;
  double epsilon = 2.0;
  int epochs = 1;
  double batch_fraction = 0.01;
  std::optional<double> mu = 0.1;  // nullopt: hyper-parameter-free (fedsel_budget.h)
  double theta = 0.2;
  double k_fraction = 0.1;     // k = max(1, round(k_fraction d))
  double learning_rate = 4.0;  // chosen once on syn-L-0.01-0.9 (docs/fedsel.md)
  double momentum = 0.5;       // eta
  double lambda = 1e-4;
  GradientScaling gradient_scaling = GradientScaling::kClip;
  double projection_ratio = 0.1;  // compressed: q = max(1, round(ratio d))
  // Vector variants: the l2 clip norm C of a gradient, the Gaussians' delta
  // per report, FastProjUnit's k (0: min(d, 1000)).
  double clip = 1.0;
  double delta = 1e-6;
  std::size_t projection_k = 0;
  // Stop after this many global iterations (0: run all epochs). FedSel's
  // Fig. 3(c) compares batch sizes at an equal number of iterations.
  std::size_t max_iterations = 0;
  // The model returned is the mean of the server's iterates over this final
  // share of the iterations (Polyak-Ruppert averaging; 0: the last iterate).
  // Post-processing of the public iterates: it costs no privacy.
  double tail_average = 0.0;
  // The server's step on each round's mean (fl/server_optimizer.h): its
  // estimate is the model minus lr times the mean, so fedavg at lr 1 (the
  // default) is FedSel's step, and momentum (FedAvgM) keeps a velocity of
  // those steps. Post-processing of the privatised means: no privacy cost.
  ServerOptimizerConfig server;
  // The reports of a round pass a shuffler. The mean the server computes is
  // the same, but every round then holds at least m reports, which the
  // shuffler's privacy rests on: an epoch is cut into floor(N / m) rounds of
  // floor or ceil of N / rounds clients, instead of rounds of m and a
  // smaller remainder.
  bool shuffle = false;
  // With the shuffler: the n of the statement, each report shuffled among at
  // least this many (0: the smallest round; more than it: the smallest
  // round). A deployment's server takes no smaller batch from a shuffler,
  // so several shufflers, or rounds where some clients drop out, are stated
  // honestly by a batch below the round's size (ShuffleBatchOf).
  std::uint64_t shuffle_batch = 0;
  // Rounds of floor(N / m) even parts (as with the shuffler) without a
  // shuffler. The paper's cut, rounds of m and a remainder, can leave a last
  // round of a few clients whose mean is mostly noise: on Adult (N = 39,073,
  // m = 3,907) a round of 3 PrivUnitG reports took 2 x 5-fold accuracy from
  // about 81 % to 72.7 +- 7.6 %. Set by default for the vector variants;
  // FedSel's variants keep the paper's cut.
  bool even_rounds = false;
  // Sampling of clients per round instead of epochs: every round draws
  // m = round(batch_fraction N) of the N clients uniformly without
  // replacement, independently of the other rounds, for epochs x round(N / m)
  // rounds (each client is in a share q = m / N of them, about `epochs`
  // reports in expectation). With the shuffler, which then also draws the
  // round's clients in secret from the server, each round is amplified by
  // sampling (run_accounting.h) and a client may report more often than
  // `epochs`; without it, a client declines once it has reported `epochs`
  // times, so its local budget holds, and a round averages the reports it
  // gets.
  bool sample_clients = false;
  // With sample_clients and the shuffler: each client takes part in a round
  // on its own with probability q = m / N (Poisson participation; the
  // round's size varies, and the shuffler shows it) instead of m of the N;
  // stated by its binomial mixture over the count (PoissonRoundPld).
  bool poisson_clients = false;
  // With the shuffler and epochs of disjoint rounds (no sample_clients):
  // the shuffler, not the server, draws each epoch's order in secret, so a
  // client reports in exactly one round of the epoch and the server is not
  // told which (random allocation). Each epoch is then stated as one
  // shuffle of all its reports (account run --allocation). The order is
  // the same uniform draw either way; only who sees it changes.
  bool random_allocation = false;
  // Clients holding several rows each. 0: one client per training row, the
  // papers' setting. Otherwise the training rows are split into `clients`
  // shards (data/partition.h): equal IID shards (the remainder left out),
  // a Dirichlet(alpha) label skew when dirichlet_alpha > 0, or label_shards
  // shards of the label-sorted rows each when that is > 0.
  // A client's gradient is the mean of its rows' clipped gradients, so a
  // report's sensitivity is unchanged and the privacy unit is the client,
  // all its rows together.
  std::size_t clients = 0;
  double dirichlet_alpha = 0;
  std::size_t label_shards = 0;
  Partition partition() const { return {dirichlet_alpha, label_shards}; }

  // OK if the variant's parts make a variant and every setting is in its
  // range (the clients against the rows are checked by PlanFedSel); else why
  // not.
  Status Validate() const;
};

// The configuration a variant runs with when nothing is said: FedSel's
// variants keep the paper's settings (lr 4, m = 0.01 N, last iterate); the
// vector variants take the point `fedldp train --tune` chose on Adult's
// training file at eps = 2 (docs/frontier.md).
FedSelConfig DefaultFedSelConfig(const FedSelVariant& variant);
// The variant `train`, `serve` and Python's train_fedsel run when none is
// named: the one README's "Choosing a randomizer" recommends (PrivUnitG on
// the whole clipped gradient: 81.3-81.9 % on Adult at eps 2, where the
// papers' PS-PM learns nothing), not FedSel's own.
inline constexpr std::string_view kDefaultFedSelVariant = "privunitg";
// DefaultFedSelConfig of kDefaultFedSelVariant.
FedSelConfig DefaultFedSelVariantConfig();

// What a configuration means for N clients of dimension d: the budget
// split, batch size m, Top-k size and the selector actually used. The
// simulator and the deployment (server and every client) derive it from the
// same announced configuration, so they build the same randomizer.
struct FedSelPlan {
  FedSelVariant variant;
  std::size_t clients = 0;    // N: one per training row, or config.clients
  std::size_t dimension = 0;  // d
  FedSelBudget budget;
  std::size_t batch = 0;  // m
  std::size_t rounds_per_epoch = 0;
  std::size_t smallest_round = 0;  // the fewest reports a round holds
  bool even_rounds = false;        // config.shuffle or even_rounds: no round smaller than m
  bool sampled = false;            // config.sample_clients: rounds sample m of N
  bool poisson = false;            // config.poisson_clients: each client with probability q
  double sampling_rate = 1;        // q = m / N when sampled
  std::size_t rounds = 0;          // of the whole run: epochs x rounds_per_epoch
  std::size_t k = 0;
  // Two-stage variants: the selector used, uniform when a private variant
  // has eps1 = 0.
  std::optional<SelectorKind> selector;
  // The clients of round b of an epoch: positions [first, first + size) of
  // the epoch's order (a sampled round's are [0, m) of its own draw).
  std::pair<std::size_t, std::size_t> Round(std::size_t b, std::size_t clients) const;
  // What one report costs its client: eps1 + eps2 (sequential composition).
  double ReportEpsilon() const { return budget.select_epsilon + budget.value_epsilon; }
};

struct FedSelRun {
  std::vector<double> weights;
  FedSelBudget budget;
  std::size_t batch = 0;                 // m
  std::size_t smallest_round = 0;        // the fewest reports in a round (the shuffler's n)
  std::size_t k = 0;                     // Top-k size (two-stage)
  std::optional<SelectorKind> selector;  // the plan's: the selector used (two-stage)
  std::size_t iterations = 0;            // global updates
  std::size_t updates = 0;               // client reports
  std::size_t rejected = 0;              // reports the server refused (should be 0)
  // Sampled rounds: the most reports one client sent, and the sampled
  // clients that declined (their budget spent; without the shuffler only).
  std::size_t most_reports = 0;
  std::size_t declined = 0;
  FedSelPlan plan;       // what the run was planned as (FedSelRunPrivacy states its privacy)
  bool stopped = false;  // ended early on a stop: fewer iterations than planned
};

// `rows`: the training rows; the plan's clients are as many, or
// config.clients (at most `rows`).
Result<FedSelPlan> PlanFedSel(const FedSelConfig& config, std::size_t rows, std::size_t d);
// What the accountant is asked for a plan, at total delta `delta`: each
// report's eps, and with the shuffler the rounds a client is in (epochs, or
// every round when sampled, with q), shuffled with the plan's smallest round,
// and a vector variant's floating-point allowance.
RunPrivacyConfig FedSelRunPrivacy(const FedSelPlan& plan, const FedSelConfig& config, double delta);
// The seed a run of `seed` partitions its rows among clients with
// (PartitionRows): fedldp.partition(..., run="fedsel") draws the same.
std::uint64_t FedSelPartitionSeed(std::uint64_t seed);
// The privacy record (privacy/privacy_record.h) of a private variant's run
// that the accountant stated as `p`.
PrivacyRecord FedSelPrivacyRecord(const RunPrivacy& p, const FedSelVariant& variant);
// The record of a run of `plan` at total delta `delta` (FedSelRunPrivacy,
// stated by the accountant); none for a variant that is not private, or
// that the accountant refuses.
std::optional<PrivacyRecord> FedSelPrivacyRecordOf(const FedSelPlan& plan,
                                                   const FedSelConfig& config, double delta);
// With the shuffler (config.shuffle): `config` with the largest epsilon whose
// run on `clients` clients stays within (central_epsilon, delta) per client
// in total, by the accountant of run_accounting.h on FedSelRunPrivacy, the
// smallest round rounded down (RoundDownToThreeDigits). Refused for the Gaussian
// variants (no amplification is proven for approximate-DP reports) and non-private ones.
Result<FedSelConfig> CalibrateToCentral(FedSelConfig config, std::size_t clients, std::size_t d,
                                        double central_epsilon, double delta);
// The rules of a central target, as the CLI and Python both state them: it
// needs the shuffler and a budget CheckEpsilon accepts, and it sets the
// local budget itself, so an epsilon given beside it is refused.
Status CheckCentralTarget(const FedSelConfig& config, double central_epsilon, bool epsilon_given);
// n rounded down to three significant digits (n itself below 1,000): at
// most 1 % below n.
std::size_t RoundDownToThreeDigits(std::size_t n);

// The two-stage randomizer of a plan (an error for flat, compressed and np).
Result<FedSelRandomizer> MakeFedSelRandomizer(const FedSelPlan& plan, std::size_t d);
// The vector randomizer of a kVector plan at the plan's eps per report, over
// d weights; public_seed is FastProjUnit-corr's shared signs (an error for
// other kinds of variant).
Result<std::unique_ptr<VectorRandomizer>> MakeFedSelVectorRandomizer(const FedSelPlan& plan,
                                                                     const FedSelConfig& config,
                                                                     std::size_t d,
                                                                     std::uint64_t public_seed);

// One client's part of Algorithm 1 (lines 12-19), shared by TrainFedSel and
// the deployed client: r^{t-1} = r (into `previous`), r += scale g, report
// randomizer(r, r^{t-1}, momentum) and zero the reported coordinate of r.
// `accumulated` is the client's r, kept across its rounds; `previous` is
// scratch of the same size. scale is 1, or alpha for -o.
FedSelReport FedSelClientStep(std::span<double> accumulated, std::span<double> previous,
                              std::span<const double> gradient, double scale,
                              const FedSelRandomizer& randomizer, double momentum, Rng& rng);

// Trains on rows `train` of `data` (all rows if empty). progress(done, total)
// is called after every iteration if given. On a cluster of several
// processes (fl/cluster.h), each process computes the reports of its block
// of clients and keeps only their accumulated vectors; every process gets
// the same run as one process alone. Every process must call it alike, with
// the same data, and a stop token on all of them or on none. A stop requested
// on `stop` (on any process) ends the run before its next round: `stopped`,
// the model the last iterate, not averaged.
Result<FedSelRun> TrainFedSel(const FedSelConfig& config, const Dataset& data,
                              std::span<const std::size_t> train, std::uint64_t seed,
                              const ParallelFor& parallel = RunSequentially,
                              const std::function<void(std::size_t, std::size_t)>& progress = {},
                              Cluster& cluster = OneProcess(), std::stop_token stop = {});

}  // namespace fedldp

#endif  // FEDLDP_FL_FEDSEL_H_
