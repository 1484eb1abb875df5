#include "fedldp/fl/fedsel.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "exchange.h"
#include "fedldp/base/limits.h"
#include "fedldp/base/names.h"
#include "fedldp/data/partition.h"
#include "fedldp/fl/server_optimizer.h"
#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/pipeline/fedsel.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/discrete.h"
#include "fedldp/vector/vector_randomizer.h"
#include "fedsel_families.h"

namespace fedldp {

Status FedSelVariant::Validate() const {
  const std::string name = FedSelVariantName(*this);
  auto named = ParseFedSelVariant(name);
  // The name keeps the parts of the kind; the flags must be the name's too.
  const bool same = named.ok() && FedSelVariantName(*named) == name && named->control == control &&
                    named->scaled_accumulation == scaled_accumulation &&
                    named->accumulate == accumulate && named->enlarge_uniform == enlarge_uniform;
  if (!same) return Error{"these parts make no FedSel variant (closest name: " + name + ")"};
  return {};
}

namespace {

// The registered vector randomizers whose statement holds of every value the
// program draws (exact), or in a model of their candidate generator.
std::vector<std::string> VectorNamesWhere(bool generator_model) {
  std::vector<std::string> names;
  for (const VectorRandomizerKind* k : VectorRandomizerKinds()) {
    if (k->traits.generator_model == generator_model) names.emplace_back(k->name);
  }
  return names;
}

}  // namespace

Result<std::string> FloatingPointStatementFor(std::string_view mechanism) {
  if (mechanism.empty()) {
    std::string text =
        "floating point: an eps0 accounted here holds of the program as it runs for the "
        "value mechanisms (" +
        Listed(ValueMechanismNames()) + ") and the vector randomizers " +
        Listed(VectorNamesWhere(false)) +
        ", whose reports are public values (atoms or a grid) drawn with exact "
        "probabilities (the Gaussians with a proven allowance in delta, PrivUnitG and "
        "FastProjUnit within a proven total variation below 2^-194 at eps <= 30; "
        "docs/methods.md)";
    if (const auto modelled = VectorNamesWhere(true); !modelled.empty()) {
      text += "; for " + Listed(modelled) +
              ", sent as seeds, it holds in a model of their candidate generator "
              "(seeded_privunit.h)";
    }
    return text;
  }
  if (const auto variant = ParseFedSelVariant(mechanism); variant.ok()) {
    return FloatingPointStatement(*variant);
  }
  if (ParseValueMechanism(mechanism).ok()) return FloatingPointStatement(std::nullopt);
  if (const auto vector = ParseVectorMechanism(mechanism); vector.ok()) {
    return FloatingPointStatement(*vector);
  }
  return Error{"unknown mechanism '" + std::string(mechanism) +
               "' (a FedSel variant as train --variant takes, a value mechanism: " +
               Listed(ValueMechanismNames()) +
               ", or a vector randomizer: " + Listed(VectorMechanismNames()) + ")"};
}

Status FedSelConfig::Validate() const {
  const FedSelConfig& c = *this;
  FEDLDP_RETURN_IF_ERROR(c.variant.Validate());
  FEDLDP_RETURN_IF_ERROR(CheckFedSelEpsilon(c.epsilon, c.epochs));
  if (!(c.batch_fraction > 0 && c.batch_fraction <= 1))
    return Error{"batch fraction must be in (0, 1]"};
  if (!(c.k_fraction > 0 && c.k_fraction <= 1)) return Error{"k fraction must be in (0, 1]"};
  FEDLDP_RETURN_IF_ERROR(CheckLearningRate(c.learning_rate));
  if (!(c.momentum >= 0 && c.momentum < 1)) return Error{"momentum eta must be in [0, 1)"};
  if (!(c.lambda >= 0 && std::isfinite(c.lambda))) return Error{"lambda must be >= 0"};
  if (!(c.theta >= 0 && c.theta < 1)) return Error{"theta must be in [0, 1)"};
  if (!(c.projection_ratio > 0 && c.projection_ratio <= 1))
    return Error{"projection ratio must be in (0, 1]"};
  if (!(std::isfinite(c.clip) && c.clip > 0)) return Error{"clip norm must be a finite number > 0"};
  if (!(c.delta > 0 && c.delta < 1)) return Error{"delta must be in (0, 1)"};
  if (!(c.tail_average >= 0 && c.tail_average < 1)) return Error{"tail average must be in [0, 1)"};
  FEDLDP_RETURN_IF_ERROR(c.server.Validate());
  FEDLDP_RETURN_IF_ERROR(c.partition().Validate());
  if (!c.partition().iid() && c.clients == 0) {
    return Error{"a non-IID partition needs clients (rows are split among them)"};
  }
  // Poisson rounds are amplified only in secret (the shuffler draws them),
  // and stated with every drawn client's report in the round.
  if (c.poisson_clients && !(c.sample_clients && c.shuffle)) {
    return Error{"poisson clients take sampled clients and the shuffler"};
  }
  // Random allocation hides each epoch's order in the shuffler: it takes the
  // shuffler and the epochs' own order (not rounds sampled afresh).
  if (c.random_allocation && !(c.shuffle && !c.sample_clients)) {
    return Error{
        "random allocation takes the shuffler and epochs of disjoint rounds (no sampled "
        "clients)"};
  }
  if (c.poisson_clients && c.shuffle_batch != 0) {
    return Error{"poisson clients are stated with every drawn client's report: no shuffle batch"};
  }
  return {};
}

namespace {
// A client's gradient: its row's, or the mean of its rows' (each clipped by
// the model, so the mean is too); zero for a client without rows.
void ClientGradient(const LinearModel& model, std::span<const double> w, const Dataset& data,
                    std::span<const std::size_t> rows, std::span<double> g) {
  if (rows.size() == 1) {
    model.Gradient(w, data.row(rows[0]), data.labels[rows[0]], g);
    return;
  }
  std::fill(g.begin(), g.end(), 0.0);
  if (rows.empty()) return;
  thread_local std::vector<double> one;
  one.resize(g.size());
  for (const std::size_t r : rows) {
    model.Gradient(w, data.row(r), data.labels[r], one);
    for (std::size_t j = 0; j < g.size(); ++j) g[j] += one[j];
  }
  const double inverse = 1.0 / static_cast<double>(rows.size());
  for (double& v : g) v *= inverse;
}

}  // namespace

FedSelReport FedSelClientStep(std::span<double> accumulated, std::span<double> previous,
                              std::span<const double> gradient, double scale,
                              const FedSelRandomizer& randomizer, double momentum, Rng& rng) {
  std::copy(accumulated.begin(), accumulated.end(), previous.begin());
  for (std::size_t j = 0; j < accumulated.size(); ++j) accumulated[j] += scale * gradient[j];
  const FedSelReport report = randomizer.Randomize(accumulated, previous, momentum, rng);
  if (report.index >= 0) accumulated[static_cast<std::size_t>(report.index)] = 0;
  return report;
}

void RunSequentially(std::size_t n, const std::function<void(std::size_t)>& f) {
  for (std::size_t i = 0; i < n; ++i) f(i);
}

Result<FedSelPlan> PlanFedSel(const FedSelConfig& config, std::size_t rows, std::size_t d) {
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  if (rows == 0 || d == 0) return Error{"FedSel needs at least one client and one dimension"};
  if (config.clients > rows) {
    return Error{"clients (" + std::to_string(config.clients) + ") must not exceed the rows (" +
                 std::to_string(rows) + "): each holds at least one"};
  }
  const std::size_t n = config.clients > 0 ? config.clients : rows;
  const FedSelVariant* variant = &config.variant;
  FedSelPlan plan;
  plan.variant = *variant;
  plan.clients = n;
  plan.dimension = d;
  plan.batch =
      std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(config.batch_fraction * n)));
  plan.batch = std::min(plan.batch, n);
  plan.even_rounds = config.shuffle || config.even_rounds;
  plan.sampled = config.sample_clients;
  plan.poisson = config.sample_clients && config.poisson_clients;
  if (plan.sampled) {
    plan.rounds_per_epoch = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(static_cast<double>(n) / plan.batch)));
    plan.smallest_round = plan.batch;
    plan.sampling_rate = static_cast<double>(plan.batch) / static_cast<double>(n);
  } else if (plan.even_rounds) {
    plan.rounds_per_epoch = n / plan.batch;
    plan.smallest_round = n / plan.rounds_per_epoch;
  } else {
    plan.rounds_per_epoch = (n + plan.batch - 1) / plan.batch;
    plan.smallest_round = n - (plan.rounds_per_epoch - 1) * plan.batch;
  }
  plan.rounds = plan.rounds_per_epoch * static_cast<std::size_t>(config.epochs);
  plan.k = std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(config.k_fraction * d)));
  const double epoch_epsilon = config.epsilon / config.epochs;
  const double mu =
      config.mu ? *config.mu : HyperParameterFreeMu(epoch_epsilon, d, plan.batch, config.theta);
  const fl_internal::FedSelFamily& family = fl_internal::FamilyOf(*variant);
  auto budget = MakeFedSelBudget(config.epsilon, config.epochs,
                                 family.SpendsSelection(*variant) ? mu : 0.0, variant->control);
  if (!budget.ok()) return Error{budget.error()};
  plan.budget = *budget;
  if (!variant->is_private()) plan.budget.select_epsilon = plan.budget.value_epsilon = 0;
  FEDLDP_RETURN_IF_ERROR(family.Complete(config, plan));
  // What a run builds from the plan must build (an eps too small to sample
  // exactly, reports that would stray past 2^450): refused here, before the
  // plan is stated or printed (issue 41: a header came first, then the
  // error; with the shuffler the statement threw).
  const fl_internal::SlotShape one{.d = d, .slots = 1, .rows = 1, .owned = {0, 1}};
  if (auto made = family.Reports(plan, config, one, 0); !made.ok()) return Error{made.error()};
  return plan;
}

std::size_t RoundDownToThreeDigits(std::size_t n) {
  std::size_t scale = 1;
  while (n / scale >= 1000) scale *= 10;
  return n / scale * scale;
}

Status CheckCentralTarget(const FedSelConfig& config, double central_epsilon, bool epsilon_given) {
  if (epsilon_given) {
    return Error{"central_epsilon sets the local budget: give it or epsilon, not both"};
  }
  if (!config.shuffle) return Error{"central_epsilon needs shuffle (the shuffler's amplification)"};
  return CheckEpsilon(central_epsilon, "central_epsilon");
}

Result<FedSelConfig> CalibrateToCentral(FedSelConfig config, std::size_t clients, std::size_t d,
                                        double central_epsilon, double delta) {
  if (!config.shuffle) return Error{"a central target needs the shuffler (config.shuffle)"};
  auto plan = PlanFedSel(config, clients, d);
  if (!plan.ok()) return Error{plan.error()};
  if (!plan->variant.is_private())
    return Error{"variant " + FedSelVariantName(config.variant) + " is not private"};
  if (NeedsDelta(plan->variant)) {
    return Error{"no amplification by shuffling is proven for the Gaussian's reports"};
  }
  RunPrivacyConfig run = FedSelRunPrivacy(*plan, config, delta);
  // Calibrated for n' <= n reports, n rounded down to three significant
  // digits (at most 1 % fewer): the bound only improves with more reports,
  // so the eps0 found holds for n, and runs of nearby sizes (folds) share
  // one search (each up to a second or two; tuning asks for many sizes).
  // Until 2026-12-06 two digits of the E24 series, up to 9 % fewer: MNIST's
  // 60,000 was searched at 56,000, eps0 3.436 where 3.499 holds.
  run.reports_per_round = RoundDownToThreeDigits(run.reports_per_round);
  auto eps0 = LocalEpsilonForCentral(run, central_epsilon);
  if (!eps0.ok()) return Error{eps0.error()};
  // Scale config.epsilon so one report costs at most eps0 (-c variants
  // spend eps1 on top of eps'); start from the largest budget that could.
  config.epsilon = *eps0 * static_cast<double>(config.epochs) * (1 - 1e-12);
  plan = PlanFedSel(config, clients, d);
  if (!plan.ok()) return Error{plan.error()};
  // The automatic mu depends on the budget, so the ratio is checked again
  // on the new plan, and the budget only ever lowered to meet eps0.
  for (int i = 0; i < 50; ++i) {
    const double report = plan->ReportEpsilon();
    if (report <= *eps0) return config;
    config.epsilon *= (*eps0 / report) * (1 - 1e-12);
    plan = PlanFedSel(config, clients, d);
    if (!plan.ok()) return Error{plan.error()};
  }
  return Error{"could not calibrate " + FedSelVariantName(config.variant) + " to central epsilon " +
               std::to_string(central_epsilon)};
}

std::uint64_t FedSelPartitionSeed(std::uint64_t seed) {
  // A seed of its own: PartitionRows draws stream 0x5b11 of it, which a
  // client's noise stream (client x epochs + epoch) of `seed` could reuse.
  return CounterRng::Mix(seed ^ 0x7061727469746e73ULL);
}

PrivacyRecord FedSelPrivacyRecord(const RunPrivacy& p, const FedSelVariant& variant) {
  return PrivacyRecordOf(p, FedSelVariantName(variant), FloatingPointStatement(variant));
}

std::optional<PrivacyRecord> FedSelPrivacyRecordOf(const FedSelPlan& plan,
                                                   const FedSelConfig& config, double delta) {
  if (!config.variant.is_private()) return std::nullopt;
  auto stated = AccountRun(FedSelRunPrivacy(plan, config, delta));
  if (!stated.ok()) return std::nullopt;
  return FedSelPrivacyRecord(*stated, config.variant);
}

RunPrivacyConfig FedSelRunPrivacy(const FedSelPlan& plan, const FedSelConfig& config,
                                  double delta) {
  RunPrivacyConfig run;
  run.local_epsilon = plan.ReportEpsilon();
  run.local_delta = NeedsDelta(plan.variant) ? config.delta : 0.0;
  run.rounds = static_cast<std::uint64_t>(config.epochs);
  run.delta = delta;
  fl_internal::FamilyOf(plan.variant).StatePrivacy(plan, config, run);
  if (config.shuffle) {
    run.shuffle = true;
    run.reports_per_round = ShuffleBatchOf(config.shuffle_batch, plan.smallest_round);
    if (plan.sampled && plan.sampling_rate < 1) {
      run.rounds = plan.rounds;
      run.sampling_rate = plan.sampling_rate;
      run.poisson = plan.poisson;
    } else if (config.random_allocation && plan.rounds_per_epoch > 1) {
      // Each epoch of t rounds of at least n reports as one shuffle of t n.
      run.rounds = plan.rounds;
      run.sampling_rate = 1.0 / static_cast<double>(plan.rounds_per_epoch);
      run.allocation = true;
    }
  }
  return run;
}

std::pair<std::size_t, std::size_t> FedSelPlan::Round(std::size_t b, std::size_t clients) const {
  if (sampled) return {0, batch};
  if (even_rounds) {
    const std::size_t first = b * clients / rounds_per_epoch;
    return {first, (b + 1) * clients / rounds_per_epoch - first};
  }
  const std::size_t first = b * batch;
  return {first, std::min(batch, clients - first)};
}

namespace {

// After each process computed the slots of the clients it owns: every
// slot's report on every process. Dense reports are the rows of
// `gradients` (row x d); the others are in their slots, from `from` on.
void ShareReports(Cluster& cluster, std::span<const std::size_t> clients, std::size_t n,
                  std::size_t d, double* gradients, std::size_t from,
                  fl_internal::SlotReports& reports) {
  using namespace fl_internal;
  const bool dense = reports.dense();
  ExchangeSlots(
      cluster, ClientOwners(cluster, clients, n),
      [&](std::string& out, std::size_t k) {
        if (dense) {
          PutAll(out, gradients + k * d, d);
        } else {
          reports.Put(out, from + k);
        }
      },
      [&](Reader& in, std::size_t k) {
        if (dense) {
          in.GetAll(gradients + k * d, d);
        } else {
          reports.Get(in, from + k);
        }
      });
}

}  // namespace

namespace {

// Client c holds rows rows[start[c] .. start[c + 1]): a row each, or
// config.clients shards of the training rows.
struct Shards {
  std::vector<std::size_t> start, rows;
  std::span<const std::size_t> Of(std::size_t c) const {
    return {rows.data() + start[c], start[c + 1] - start[c]};
  }
};

Result<Shards> ShardRows(const FedSelConfig& config, const Dataset& data,
                         std::span<const std::size_t> train, std::size_t n, std::uint64_t seed) {
  Shards s;
  s.rows.assign(train.begin(), train.end());
  if (s.rows.empty()) {
    s.rows.resize(data.size());
    std::iota(s.rows.begin(), s.rows.end(), std::size_t{0});
  }
  s.start.resize(n + 1);
  if (config.clients == 0) {
    std::iota(s.start.begin(), s.start.end(), std::size_t{0});
    return s;
  }
  auto shards =
      PartitionRows(data, s.rows, config.clients, config.partition(), FedSelPartitionSeed(seed));
  if (!shards.ok()) return Error{shards.error()};
  s.rows.clear();
  for (std::size_t c = 0; c < n; ++c) {
    s.start[c] = s.rows.size();
    s.rows.insert(s.rows.end(), (*shards)[c].begin(), (*shards)[c].end());
  }
  s.start[n] = s.rows.size();
  return s;
}

// One run of TrainFedSel: the plan, the variant's reports, and the scratch
// of a round's slots (written in parallel, summed in slot order). The
// clients of a round run in chunks of at most shape.rows, so that the dense
// scratch (gradients, dense reports) stays near 16 MiB whatever m x d.
class FedSelTraining {
 public:
  FedSelTraining(const FedSelConfig& config, const Dataset& data, const FedSelPlan& plan,
                 const fl_internal::SlotShape& shape,
                 std::unique_ptr<fl_internal::SlotReports> reports, Shards shards,
                 std::uint64_t seed, const ParallelFor& parallel, Cluster& cluster);
  // Trains every round of every epoch (to the configured iterations).
  FedSelRun Run(const std::function<void(std::size_t, std::size_t)>& progress,
                std::stop_token stop);

 private:
  void DrawMembers(std::size_t b);
  void ClientReports(std::size_t from, std::size_t size, int epoch);
  void ClientReport(std::size_t slot, std::size_t k);
  void SumDense(std::size_t size, std::vector<double>& mean);
  void Step(std::vector<double>& mean);

  const FedSelConfig& config_;
  const Dataset& data_;
  const FedSelPlan& plan_;
  const std::unique_ptr<fl_internal::SlotReports> reports_;
  const Shards shards_;
  const std::uint64_t seed_;
  const ParallelFor& parallel_;
  Cluster& cluster_;
  const std::size_t n_, d_;
  const LinearModel model_;
  const int processes_, me_;
  const std::size_t chunk_;
  std::vector<double> gradients_;
  std::vector<char> valid_;
  std::vector<std::uint64_t> streams_;
  std::vector<std::size_t> order_, members_;
  CounterRng order_rng_;
  std::vector<std::uint32_t> sent_;  // sampled rounds: the reports each client has sent
  ServerOptimizer server_;
  FedSelRun run_;
};

// The clients this process computes, the largest round and the chunk.
fl_internal::SlotShape ShapeOf(const FedSelPlan& plan, const Cluster& cluster) {
  fl_internal::SlotShape shape;
  shape.d = plan.dimension;
  shape.owned = Cluster::Block(plan.clients, cluster.rank(), cluster.size());
  for (std::size_t b = 0; b < plan.rounds_per_epoch; ++b) {
    shape.slots = std::max(shape.slots, plan.Round(b, plan.clients).second);
  }
  shape.rows = std::min(shape.slots, std::max<std::size_t>(64, (std::size_t{1} << 21) / shape.d));
  return shape;
}

FedSelTraining::FedSelTraining(const FedSelConfig& config, const Dataset& data,
                               const FedSelPlan& plan, const fl_internal::SlotShape& shape,
                               std::unique_ptr<fl_internal::SlotReports> reports, Shards shards,
                               std::uint64_t seed, const ParallelFor& parallel, Cluster& cluster)
    : config_(config),
      data_(data),
      plan_(plan),
      reports_(std::move(reports)),
      shards_(std::move(shards)),
      seed_(seed),
      parallel_(parallel),
      cluster_(cluster),
      n_(plan.clients),
      d_(plan.dimension),
      model_{config.loss, config.lambda, 1.0, config.gradient_scaling},
      processes_(cluster.size()),
      me_(cluster.rank()),
      chunk_(shape.rows),
      gradients_(chunk_ * d_),
      valid_(chunk_),
      streams_(chunk_),
      order_(n_),
      order_rng_(seed, ~std::uint64_t{0}),
      sent_(plan.sampled ? n_ : 0, 0),
      server_(config.server, d_) {
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  run_.batch = plan.batch;
  run_.smallest_round = plan.smallest_round;
  run_.k = plan.k;
  run_.budget = plan.budget;
  run_.selector = plan.selector;
  run_.plan = plan;
  run_.weights.assign(d_, 0.0);
}

// members_ = round b's clients: a slice of the epoch's order, or m of n
// uniformly without replacement (whatever order the previous rounds left),
// less those whose budget is spent (sampled without the shuffler); with
// Poisson participation, every client with probability m / N.
void FedSelTraining::DrawMembers(std::size_t b) {
  if (!plan_.sampled) {
    const std::pair<std::size_t, std::size_t> round = plan_.Round(b, n_);
    members_.assign(order_.begin() + static_cast<std::ptrdiff_t>(round.first),
                    order_.begin() + static_cast<std::ptrdiff_t>(round.first + round.second));
    return;
  }
  const bool capped = !config_.shuffle;
  const auto epochs = static_cast<std::uint64_t>(config_.epochs);
  members_.clear();
  if (plan_.poisson) {  // each client on its own, with probability exactly m / N
    for (std::size_t client = 0; client < n_; ++client) {
      if (BernoulliRational(order_rng_, plan_.batch, n_)) members_.push_back(client);
    }
    return;
  }
  SampleClients(order_, plan_.batch, order_rng_);
  for (std::size_t i = 0; i < plan_.batch; ++i) {
    if (capped && sent_[order_[i]] >= epochs) {
      ++run_.declined;
    } else {
      members_.push_back(order_[i]);
    }
  }
}

// The reports of slots [from, from + size) of the round, on every process.
void FedSelTraining::ClientReports(std::size_t from, std::size_t size, int epoch) {
  // A sampled client's reports take streams of their own (the top bit set),
  // numbered by how many it has sent; counted for every client by every
  // process.
  const auto epochs = static_cast<std::uint64_t>(config_.epochs);
  for (std::size_t k = 0; k < size; ++k) {
    const std::size_t client = members_[from + k];
    streams_[k] = plan_.sampled ? (std::uint64_t{1} << 63) | (std::uint64_t{client} << 24) |
                                      (sent_[client]++ & 0xFFFFFF)
                                : client * epochs + static_cast<std::uint64_t>(epoch);
  }
  parallel_(size, [&](std::size_t k) { ClientReport(from + k, k); });
  if (processes_ > 1) {
    ShareReports(cluster_, {members_.data() + from, size}, n_, d_, gradients_.data(), from,
                 *reports_);
  }
}

// The client of `slot` (scratch row k): its gradient, then its report.
void FedSelTraining::ClientReport(std::size_t slot, std::size_t k) {
  const std::size_t client = members_[slot];
  if (processes_ > 1 && Cluster::Owner(client, n_, processes_) != me_) return;
  CounterRng rng(seed_, streams_[k]);
  std::span<double> g(gradients_.data() + k * d_, d_);
  ClientGradient(model_, run_.weights, data_, shards_.Of(client), g);
  reports_->Randomize({.slot = slot, .row = k, .client = client}, g, rng);
}

// Server, dense reports (scratch rows [0, size)): validated per slot, then
// summed into `mean` per block of coordinates, both in parallel; each
// coordinate adds its reports in slot order, so the mean does not depend on
// the threads or the chunks.
void FedSelTraining::SumDense(std::size_t size, std::vector<double>& mean) {
  parallel_(size, [&](std::size_t k) {
    valid_[k] = reports_->Valid({gradients_.data() + k * d_, d_});
  });
  run_.rejected += static_cast<std::size_t>(std::count(valid_.begin(), valid_.begin() + size, 0));
  const double m = static_cast<double>(members_.size());
  constexpr std::size_t kBlock = 512;
  parallel_((d_ + kBlock - 1) / kBlock, [&](std::size_t block) {
    const std::size_t lo = block * kBlock, hi = std::min(d_, lo + kBlock);
    for (std::size_t k = 0; k < size; ++k) {
      if (!valid_[k]) continue;
      const double* report = gradients_.data() + k * d_;
      for (std::size_t j = lo; j < hi; ++j) mean[j] += report[j] / m;
    }
  });
}

// The server's step on the round's mean: its estimate is the model minus
// lr times the mean, which the server optimiser steps towards (fedavg at
// lr 1 takes it).
void FedSelTraining::Step(std::vector<double>& mean) {
  // -O accumulates alpha g, so alpha is already inside the report: FedSel
  // Sect. 3.3 writes its update as (1/m) (alpha s)*, without a second alpha.
  const double step_size = plan_.variant.scaled_accumulation ? 1.0 : config_.learning_rate;
  if (members_.empty()) std::fill(mean.begin(), mean.end(), 0.0);  // every sampled client declined
  for (std::size_t j = 0; j < d_; ++j) mean[j] = run_.weights[j] - step_size * mean[j];
  server_.Step(std::span<double>(run_.weights), std::span<const double>(mean));
  run_.updates += members_.size();
  ++run_.iterations;
}

FedSelRun FedSelTraining::Run(const std::function<void(std::size_t, std::size_t)>& progress,
                              std::stop_token stop) {
  const std::size_t batches = plan_.rounds_per_epoch;
  std::size_t total = batches * static_cast<std::size_t>(config_.epochs);
  if (config_.max_iterations > 0) total = std::min(total, config_.max_iterations);
  // The last tail_average of the iterations are averaged into the model
  // returned (post-processing), as LDP-FL's `--average tail` averages rounds.
  IterateAverage average(
      {.kind = config_.tail_average > 0 ? IterateAveragingKind::kTail : IterateAveragingKind::kNone,
       .tail = config_.tail_average > 0 ? config_.tail_average : 1.0},
      static_cast<int>(total));
  const bool dense = reports_->dense();
  for (int epoch = 0; epoch < config_.epochs && !run_.stopped; ++epoch) {
    if (!plan_.sampled) {
      for (std::size_t i = n_; i > 1; --i) {
        std::swap(order_[i - 1], order_[UniformIndex(order_rng_, i)]);
      }
    }
    for (std::size_t b = 0; b < batches && run_.iterations < total; ++b) {
      // Every process ends at the same round (Any), before drawing it; a run
      // that cannot be stopped exchanges nothing for it.
      if (stop.stop_possible() && cluster_.Any(stop.stop_requested())) {
        run_.stopped = true;
        break;
      }
      DrawMembers(b);
      std::vector<double> mean(d_, 0.0);
      for (std::size_t from = 0; from < members_.size(); from += chunk_) {
        const std::size_t size = std::min(chunk_, members_.size() - from);
        ClientReports(from, size, epoch);
        if (dense) SumDense(size, mean);
      }
      if (!dense) run_.rejected += reports_->Aggregate(members_.size(), mean);
      Step(mean);
      average.Add(static_cast<int>(run_.iterations), std::span<const double>(run_.weights));
      if (progress) progress(run_.iterations, total);
    }
  }
  for (std::uint32_t c : sent_) run_.most_reports = std::max<std::size_t>(run_.most_reports, c);
  if (run_.iterations == total) {
    const std::vector<double> last = run_.weights;
    average.Release(std::span<const double>(last), std::span<double>(run_.weights));
  }
  return std::move(run_);
}

}  // namespace

Result<FedSelRun> TrainFedSel(const FedSelConfig& config, const Dataset& data,
                              std::span<const std::size_t> train, std::uint64_t seed,
                              const ParallelFor& parallel,
                              const std::function<void(std::size_t, std::size_t)>& progress,
                              Cluster& cluster, std::stop_token stop) {
  const std::size_t rows = train.empty() ? data.size() : train.size();
  // d is the model's weight count: the features' for a binary task, classes
  // times that for a multiclass one (the gradient every step privatises).
  const std::size_t d = LinearParameters(data);
  auto plan = PlanFedSel(config, rows, d);
  if (!plan.ok()) return Error{plan.error()};
  auto shards = ShardRows(config, data, train, plan->clients, seed);
  if (!shards.ok()) return Error{shards.error()};
  const fl_internal::SlotShape shape = ShapeOf(*plan, cluster);
  auto reports = fl_internal::FamilyOf(plan->variant).Reports(*plan, config, shape, seed);
  if (!reports.ok()) return Error{reports.error()};
  FedSelTraining training(config, data, *plan, shape, std::move(reports).value(),
                          std::move(shards).value(), seed, parallel, cluster);
  return training.Run(progress, std::move(stop));
}

}  // namespace fedldp
