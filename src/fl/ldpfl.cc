#include "fedldp/fl/ldpfl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "exchange.h"
#include "fedldp/data/partition.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

InputMoments InputMomentsOf(const Dataset& data, std::span<const std::size_t> rows) {
  double sum = 0, sum_sq = 0;
  for (const std::size_t r : rows) {
    for (const float v : data.row(r)) sum += v, sum_sq += static_cast<double>(v) * v;
  }
  const double count = static_cast<double>(rows.size() * data.dimension);
  if (count == 0) return {};
  const double mean = sum / count;
  return {mean, std::sqrt(std::max(0.0, sum_sq / count - mean * mean))};
}

Status CheckLdpFlConfig(const LdpFlConfig& config, std::size_t train_rows) {
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  if (config.clients > train_rows) {
    return Error{"clients must be in [1, " + std::to_string(train_rows) + "]"};
  }
  return {};
}

namespace {

// What one client of a round hands over: its trained weights (or update),
// and its report; filled in parallel, read in the clients' order.
struct ClientOutcome {
  std::vector<float> local;
  std::optional<LdpFlReport> report;  // two-point
  std::vector<double> vector_report;  // vector randomizers
  Status refused;                     // a vector report the gate would refuse
  double train_seconds = 0, perturb_seconds = 0;
};

// Nets for the clients that train at once: one is leased per client and
// returned after, so there are at most as many as clients ever ran at once.
class NetPool {
 public:
  explicit NetPool(std::function<NeuralNet()> make) : make_(std::move(make)) {}
  class Lease {
   public:
    Lease(NetPool& pool, std::unique_ptr<NeuralNet> net) : pool_(pool), net_(std::move(net)) {}
    ~Lease() { pool_.Return(std::move(net_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    NeuralNet& net() { return *net_; }

   private:
    NetPool& pool_;
    std::unique_ptr<NeuralNet> net_;
  };
  Lease Acquire() {
    std::lock_guard lock(mu_);
    if (free_.empty()) return Lease(*this, std::make_unique<NeuralNet>(make_()));
    std::unique_ptr<NeuralNet> net = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(net));
  }

 private:
  void Return(std::unique_ptr<NeuralNet> net) {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(net));
  }
  std::function<NeuralNet()> make_;
  std::mutex mu_;
  std::vector<std::unique_ptr<NeuralNet>> free_;
};

// After each process trained the round's slots it owns (owners[k] trains
// slot k): every slot's outcome on every process. The trained weights
// travel only for a noise-free run, which sums them.
void ShareOutcomes(Cluster& cluster, std::span<const int> owners, bool with_local,
                   std::span<ClientOutcome> outcomes) {
  using namespace fl_internal;
  ExchangeSlots(
      cluster, owners,
      [&](std::string& bytes, std::size_t i) {
        const ClientOutcome& out = outcomes[i];
        Put(bytes, out.train_seconds);
        Put(bytes, out.perturb_seconds);
        Put(bytes, static_cast<std::int32_t>(out.refused.code()));
        const std::string& why = out.refused.error();
        PutVector(bytes, std::vector<char>(why.begin(), why.end()));
        PutVector(bytes, with_local ? out.local : std::vector<float>());
        Put(bytes, static_cast<char>(out.report.has_value()));
        if (out.report) {
          PutVector(bytes, out.report->ranges);
          PutVector(bytes, out.report->bits);
          Put(bytes, static_cast<std::uint64_t>(out.report->weights));
        }
        PutVector(bytes, out.vector_report);
      },
      [&](Reader& in, std::size_t i) {
        ClientOutcome& out = outcomes[i];
        out.train_seconds = in.Get<double>();
        out.perturb_seconds = in.Get<double>();
        const auto code = static_cast<ErrorCode>(in.Get<std::int32_t>());
        std::vector<char> message;
        in.GetVector(message);
        if (code != ErrorCode::kOk) {
          out.refused = Error{std::string(message.begin(), message.end()), code};
        }
        in.GetVector(out.local);
        if (in.Get<char>() != 0) {
          LdpFlReport& report = out.report.emplace();
          in.GetVector(report.ranges);
          in.GetVector(report.bits);
          report.weights = in.Get<std::uint64_t>();
        }
        in.GetVector(out.vector_report);
      });
}

// What a round's reports are, from the clients to the server: LDP-FL's
// two-point mechanism on every weight (through the parameter shuffler or
// not), a vector randomizer on the whole update, or none (the noise-free
// reference). The trainer loops over this pair, never asking which it has.
class RoundReports {
 public:
  virtual ~RoundReports() = default;
  // Client side, in parallel: the trained weights out.local into a report
  // (stream: the client's and round's own random stream).
  virtual void Randomize(ClientOutcome& out, std::span<const float> global,
                         std::uint64_t stream) = 0;
  // Server side, in the clients' order: one client's report.
  virtual Status Add(ClientOutcome& out, LdpFlRun& run, LdpFlRound& stats) = 0;
  // The round's new model, from the reports added.
  virtual Status Estimate(std::vector<float>& global, LdpFlRound& stats) = 0;
};

// What every round's reports share: the run, and the round's shuffle.
struct RoundContext {
  const LdpFlConfig& config;
  std::uint64_t seed;
  int round;
  std::size_t per_round;
  const VectorRandomizer* vector;  // the run's vector randomizer, if any
  const TrainedWeights& trained;   // what a client's update covers
  CounterRng ShuffleRng() const {
    return CounterRng(seed, 0x5f00000000ULL + static_cast<std::uint64_t>(round));
  }
};

// Subtracts the global model: what a client perturbs is its update.
void ToUpdate(std::vector<float>& local, std::span<const float> global) {
  for (std::size_t j = 0; j < local.size(); ++j) local[j] -= global[j];
}

class TwoPointReports final : public RoundReports {
 public:
  TwoPointReports(const RoundContext& r, LdpFlRandomizer randomizer)
      : r_(r),
        randomizer_(std::move(randomizer)),
        aggregator_(randomizer_),
        shuffler_(randomizer_, r.config.schedule) {}
  void Randomize(ClientOutcome& out, std::span<const float> global, std::uint64_t stream) override {
    if (r_.config.perturb_updates) ToUpdate(out.local, global);
    const auto t = Clock::now();
    CounterRng rng(r_.seed, stream);
    out.report = randomizer_.Randomize(out.local, rng);
    out.perturb_seconds = Since(t);
  }
  Status Add(ClientOutcome& out, LdpFlRun& run, LdpFlRound& stats) override {
    const LdpFlReport& report = *out.report;
    if (run.report_bytes == 0) {
      run.report_bytes = report.EncodedBytes();
      run.float32_bytes = report.Float32Bytes();
    }
    const auto t = Clock::now();
    const Status accepted = r_.config.shuffle ? shuffler_.Submit(report) : aggregator_.Add(report);
    if (!accepted.ok()) return Error{"client report rejected: " + accepted.error()};
    stats.shuffle_seconds += Since(t);
    ++run.reports;
    return Status::Ok();
  }
  Status Estimate(std::vector<float>& global, LdpFlRound& stats) override {
    if (r_.config.shuffle) {
      const auto t = Clock::now();
      CounterRng shuffle_rng = r_.ShuffleRng();
      const auto shuffled = shuffler_.Release(shuffle_rng);
      stats.shuffle_seconds += Since(t);
      if (Status s = aggregator_.AddShuffled(shuffled); !s.ok()) return Error{s.error()};
    }
    const std::vector<float> mean = aggregator_.Mean();
    for (std::size_t j = 0; j < global.size(); ++j) {
      global[j] = r_.config.perturb_updates ? global[j] + mean[j] : mean[j];
    }
    return Status::Ok();
  }

 private:
  const RoundContext r_;
  const LdpFlRandomizer randomizer_;
  LdpFlAggregator aggregator_;
  ParameterShuffler shuffler_;
};

class VectorReports final : public RoundReports {
 public:
  explicit VectorReports(const RoundContext& r) : r_(r) {}
  // The whole update, clipped and privatised.
  void Randomize(ClientOutcome& out, std::span<const float> global, std::uint64_t stream) override {
    const auto t = Clock::now();
    CounterRng rng(r_.seed, stream);
    out.vector_report = PrivatizeUpdate(*r_.vector, r_.trained, out.local, global, rng);
    out.perturb_seconds = Since(t);
    if (auto s = r_.vector->ValidateReport(out.vector_report); !s.ok()) out.refused = s;
  }
  Status Add(ClientOutcome& out, LdpFlRun& run, LdpFlRound&) override {
    reports_.push_back(std::move(out.vector_report));
    ++run.reports;
    return Status::Ok();
  }
  // Summed after the shuffle: the server sees the round's reports in a
  // random order.
  Status Estimate(std::vector<float>& global, LdpFlRound& stats) override {
    if (r_.config.shuffle) {
      const auto t = Clock::now();
      CounterRng shuffle_rng = r_.ShuffleRng();
      for (std::size_t i = reports_.size(); i > 1; --i) {
        std::swap(reports_[i - 1], reports_[UniformIndex(shuffle_rng, i)]);
      }
      stats.shuffle_seconds += Since(t);
    }
    std::vector<double> sum(r_.trained.dimension(), 0.0);
    for (const auto& report : reports_) {
      for (std::size_t j = 0; j < sum.size(); ++j) sum[j] += report[j];
    }
    std::vector<double> mean(global.size(), 0.0);
    r_.trained.AddTo(sum, static_cast<double>(reports_.size()), mean);
    for (std::size_t j = 0; j < global.size(); ++j) global[j] += static_cast<float>(mean[j]);
    return Status::Ok();
  }

 private:
  const RoundContext r_;
  std::vector<std::vector<double>> reports_;
};

// The noise-free reference: the mean of the clients' models, or of their
// updates (clipped as a vector randomizer's clients clip them).
class PlainReports final : public RoundReports {
 public:
  PlainReports(const RoundContext& r, std::size_t dimension) : r_(r), sum_(dimension, 0.0) {}
  // Clipped on the client's side, in parallel (on the server's, in turn,
  // the clipping took a fifth of a noise-free round of 1,024 one-step
  // clients); the update then travels as the clipped doubles alone.
  void Randomize(ClientOutcome& out, std::span<const float> global, std::uint64_t) override {
    if (updates()) ToUpdate(out.local, global);
    if (r_.vector == nullptr) return;
    const std::vector<double> update = r_.trained.Gather(out.local);
    out.vector_report.resize(update.size());
    r_.vector->ClipInto(update, out.vector_report);
    out.local = {};
  }
  Status Add(ClientOutcome& out, LdpFlRun&, LdpFlRound&) override {
    if (r_.vector != nullptr) {
      r_.trained.AddTo(out.vector_report, 1, sum_);
    } else {
      for (std::size_t j = 0; j < out.local.size(); ++j) sum_[j] += out.local[j];
    }
    return Status::Ok();
  }
  Status Estimate(std::vector<float>& global, LdpFlRound&) override {
    for (std::size_t j = 0; j < global.size(); ++j) {
      const double m = sum_[j] / static_cast<double>(r_.per_round);
      global[j] = static_cast<float>(updates() ? global[j] + m : m);
    }
    return Status::Ok();
  }

 private:
  bool updates() const { return r_.config.perturb_updates || r_.vector != nullptr; }
  const RoundContext r_;
  std::vector<double> sum_;
};

// The round's reports, as the run's configuration has them.
Result<std::unique_ptr<RoundReports>> MakeRoundReports(const RoundContext& r,
                                                       const std::vector<std::size_t>& layers,
                                                       const std::vector<LayerRange>& ranges,
                                                       std::size_t dimension) {
  if (!r.config.is_private) return std::unique_ptr<RoundReports>(new PlainReports(r, dimension));
  if (r.vector != nullptr) return std::unique_ptr<RoundReports>(new VectorReports(r));
  auto randomizer = LdpFlRandomizer::Create(r.config.epsilon, layers, ranges);
  if (!randomizer.ok()) {
    return Error{"round " + std::to_string(r.round) + ": " + randomizer.error()};
  }
  return std::unique_ptr<RoundReports>(new TwoPointReports(r, std::move(randomizer).value()));
}

// The simulator's LDP-FL: rounds of clients that train on nets of their
// own, in parallel (spread over the cluster's processes), and report
// through the round's RoundReports.
class LdpFlTrainer {
 public:
  LdpFlTrainer(const LdpFlConfig& config, const Dataset& train, const Dataset& test,
               std::uint64_t seed, NeuralNet net, const ParallelFor& parallel, Cluster& cluster)
      : config_(config),
        train_(train),
        test_(test),
        seed_(seed),
        net_(std::move(net)),
        cluster_(cluster),
        run_clients_(net_.trains_concurrently() ? parallel : ParallelFor(RunSequentially)),
        pick_(seed, 0x9e37) {}
  // The shards, the privacy statement, the first model and its ranges.
  Status Prepare();
  // The two-point statement, or the vector randomizer and its statement.
  Status MakeRandomizerAndAccount();
  Result<LdpFlRun> Run(const std::function<void(const LdpFlRound&)>& on_round,
                       std::stop_token stop);

 private:
  // The round's clients, everyone_[first, first + per_round_): a uniform
  // subset, or with disjoint rounds the next part of the epoch's order.
  // Returns first.
  std::size_t PickClients(int round);
  // The clients train and randomize, each on a net of its own and with its
  // own streams, in parallel; every process then has every outcome.
  void TrainClients(int round, std::size_t first, RoundReports& reports,
                    std::span<ClientOutcome> outcomes);
  // The same for one-step clients, clients_per_pass_ of them in each batched
  // pass (NeuralNet::GroupGradients): slots are the round's slots this
  // process trains.
  void TrainInPasses(int round, std::size_t first, std::span<const std::size_t> slots,
                     RoundReports& reports, std::span<ClientOutcome> outcomes);
  // The process that trains each of the round's slots: its client's owner,
  // or with batched passes its pass's (dealt round-robin), so that a pass
  // holds the same clients on any number of processes.
  std::vector<int> SlotOwners(std::size_t first) const;
  // How a client's training is seeded, and its report's random stream.
  std::uint64_t Stream(int round, std::size_t client) const {
    return static_cast<std::uint64_t>(round) * config_.clients + client;
  }
  std::uint64_t TrainSeed(std::uint64_t stream) const {
    return seed_ ^ (stream * 0x9e3779b97f4a7c15ULL);
  }
  // One-step clients in batched passes, or each alone (0); and the run's
  // client_step sentence.
  void PlanClientSteps();
  Status RunRound(int round);

  const LdpFlConfig& config_;
  const Dataset& train_;
  const Dataset& test_;
  const std::uint64_t seed_;
  NeuralNet net_;
  Cluster& cluster_;
  const ParallelFor run_clients_;
  CounterRng pick_;
  InputMoments input_;
  std::vector<std::vector<std::size_t>> shards_;
  std::size_t per_round_ = 0, rounds_per_epoch_ = 0;
  std::unique_ptr<VectorRandomizer> vector_;
  std::optional<TrainedWeights> trained_;
  std::vector<float> global_;
  std::vector<LayerRange> ranges_;
  std::unique_ptr<NetPool> pool_;
  std::size_t clients_per_pass_ = 0;
  std::vector<std::size_t> everyone_, picked_;
  std::optional<ServerLearner> learner_;
  std::vector<float> released_;  // the model the rounds so far release
  LdpFlRun run_;
};

Status LdpFlTrainer::MakeRandomizerAndAccount() {
  const std::size_t reports_per_client = LdpFlReportsPerClient(config_);
  run_.privacy = AccountLdpFl(config_.epsilon, net_.parameters(), reports_per_client,
                              ShuffleBatchOf(config_.shuffle_batch, per_round_), config_.delta);
  auto vector_made = LdpFlVectorRandomizer(config_, trained_->dimension(), seed_);
  if (!vector_made.ok()) return Error{vector_made.error()};
  vector_ = std::move(vector_made).value();
  if (!vector_) return Status::Ok();
  auto accounted = AccountRun(LdpFlRunPrivacyOf(config_, *vector_));
  if (!accounted.ok()) return Error{"the accountant: " + accounted.error()};
  run_.vector_privacy = std::move(accounted).value();
  if (config_.central_epsilon > 0 && run_.vector_privacy->total.epsilon > config_.central_epsilon) {
    return Error{"the run's central epsilon " + std::to_string(run_.vector_privacy->total.epsilon) +
                 " exceeds its target " + std::to_string(config_.central_epsilon) +
                 ": calibrate its epsilon per report (fedldp ldpfl --central-epsilon does)"};
  }
  run_.report_bytes = 8 * trained_->dimension();  // d doubles (fedldp.v1.VectorReport)
  run_.float32_bytes = 4 * trained_->dimension();
  return Status::Ok();
}

Status LdpFlTrainer::Prepare() {
  if (config_.standardize_inputs) {
    std::vector<std::size_t> all(train_.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    input_ = InputMomentsOf(train_, all);
    if (!(input_.sd > 0)) input_ = {};
    net_.SetInputStandardization(input_.mean, input_.sd);
  }
  auto shards = PartitionRows(train_, {}, config_.clients, config_.partition(), seed_);
  if (!shards.ok()) return Error{shards.error()};
  shards_ = std::move(shards).value();
  per_round_ = LdpFlClientsPerRound(config_);
  rounds_per_epoch_ = LdpFlRoundsPerEpoch(config_);
  run_.parameters = net_.parameters();
  run_.majority = test_.MajorityRate();
  FEDLDP_ASSIGN_OR_RETURN(
      trained_, TrainedWeights::Of(config_.freeze, net_.layer_names(), net_.layer_sizes()));
  run_.trained = trained_->dimension();
  net_.SetFrozenLayers(trained_->frozen());
  FEDLDP_RETURN_IF_ERROR(MakeRandomizerAndAccount());
  global_ = net_.GetWeights();
  learner_.emplace(config_.server, config_.averaging, config_.rounds, global_.size());
  released_ = global_;
  ranges_.assign(net_.layer_sizes().size(), config_.fixed_range);
  if (config_.adaptive) {
    auto ranges = LayerRangesOf(global_, net_.layer_sizes(), config_.adaptive_margin);
    if (!ranges.ok()) return Error{"the initial model: " + ranges.error()};
    ranges_ = std::move(ranges).value();
  }
  if (config_.is_private && !vector_) {  // round 1's two-point mechanism
    auto usable = LdpFlRandomizer::Create(config_.epsilon, net_.layer_sizes(), ranges_);
    if (!usable.ok()) return Error{"round 1: " + usable.error()};
  }
  // Each client trains on a net of its own (the nets are reused): their
  // weights are set from the global model before training.
  pool_ = std::make_unique<NetPool>([this]() -> NeuralNet {
    NeuralNet own = NeuralNet::Create(config_.arch, seed_).value();
    if (config_.standardize_inputs) own.SetInputStandardization(input_.mean, input_.sd);
    own.SetFrozenLayers(trained_->frozen());
    return own;
  });
  everyone_.resize(config_.clients);
  std::iota(everyone_.begin(), everyone_.end(), std::size_t{0});
  picked_.assign(config_.clients, 0);
  PlanClientSteps();
  return Status::Ok();
}

void LdpFlTrainer::PlanClientSteps() {
  std::size_t largest = 0;
  for (const auto& shard : shards_) largest = std::max(largest, shard.size());
  const bool one_step = config_.local_epochs == 1 && config_.batch >= largest;
  if (!one_step || config_.client_batch == 0) {
    run_.client_step = "each client trains alone";
    return;
  }
  // At most client_batch clients and 2^26 floats of gradients a pass, the
  // round's clients in passes of equal size (the last may be smaller).
  constexpr std::size_t kPassFloats = std::size_t{1} << 26;
  const std::size_t most =
      std::clamp<std::size_t>(kPassFloats / net_.parameters(), 1, config_.client_batch);
  const std::size_t passes = (per_round_ + most - 1) / most;
  clients_per_pass_ = (per_round_ + passes - 1) / passes;
  run_.client_step =
      "one local step per client, " + std::to_string(clients_per_pass_) +
      " clients a batched pass" +
      (net_.per_example_path() ? " of per-example gradients"
                               : " (the model has no per-example path: one pass per client)");
}

std::size_t LdpFlTrainer::PickClients(int round) {
  if (config_.disjoint_rounds) {
    const auto b = static_cast<std::size_t>(round - 1) % rounds_per_epoch_;
    if (b == 0) {
      for (std::size_t i = config_.clients; i > 1; --i) {
        std::swap(everyone_[i - 1], everyone_[UniformIndex(pick_, i)]);
      }
    }
    return b * per_round_;
  }
  for (std::size_t i = 0; i < per_round_; ++i) {
    std::swap(everyone_[i], everyone_[i + UniformIndex(pick_, config_.clients - i)]);
  }
  return 0;
}

std::vector<int> LdpFlTrainer::SlotOwners(std::size_t first) const {
  if (clients_per_pass_ == 0) {
    return fl_internal::ClientOwners(cluster_, {everyone_.data() + first, per_round_},
                                     config_.clients);
  }
  std::vector<int> owners(per_round_);
  const auto processes = static_cast<std::size_t>(cluster_.size());
  for (std::size_t i = 0; i < per_round_; ++i) {
    owners[i] = static_cast<int>((i / clients_per_pass_) % processes);
  }
  return owners;
}

void LdpFlTrainer::TrainClients(int round, std::size_t first, RoundReports& reports,
                                std::span<ClientOutcome> outcomes) {
  const std::vector<int> owners = SlotOwners(first);
  std::vector<std::size_t> slots;  // this process's
  for (std::size_t i = 0; i < per_round_; ++i) {
    if (owners[i] == cluster_.rank()) slots.push_back(i);
  }
  if (clients_per_pass_ > 0) {
    TrainInPasses(round, first, slots, reports, outcomes);
  } else {
    run_clients_(slots.size(), [&](std::size_t k) {
      const std::size_t client = everyone_[first + slots[k]];
      ClientOutcome& out = outcomes[slots[k]];
      NetPool::Lease lease = pool_->Acquire();
      NeuralNet& own = lease.net();
      const auto t = Clock::now();
      own.SetWeights(global_);
      own.Train(train_, shards_[client], config_.local_epochs, config_.batch, config_.learning_rate,
                TrainSeed(Stream(round, client)));
      out.local = own.GetWeights();
      out.train_seconds = Since(t);
      reports.Randomize(out, global_, Stream(round, client));
    });
  }
  if (cluster_.size() > 1) ShareOutcomes(cluster_, owners, !config_.is_private, outcomes);
}

void LdpFlTrainer::TrainInPasses(int round, std::size_t first, std::span<const std::size_t> slots,
                                 RoundReports& reports, std::span<ClientOutcome> outcomes) {
  const std::size_t passes = (slots.size() + clients_per_pass_ - 1) / clients_per_pass_;
  const auto step = static_cast<float>(-config_.learning_rate);
  run_clients_(passes, [&](std::size_t p) {
    const auto mine = slots.subspan(
        p * clients_per_pass_, std::min(clients_per_pass_, slots.size() - p * clients_per_pass_));
    std::vector<std::size_t> rows, sizes, stepping;  // a client without rows takes no step
    std::vector<std::uint64_t> seeds;
    for (const std::size_t slot : mine) {
      const std::size_t client = everyone_[first + slot];
      outcomes[slot].local = global_;
      if (shards_[client].empty()) continue;
      rows.insert(rows.end(), shards_[client].begin(), shards_[client].end());
      sizes.push_back(shards_[client].size());
      seeds.push_back(TrainSeed(Stream(round, client)));
      stepping.push_back(slot);
    }
    NetPool::Lease lease = pool_->Acquire();
    const auto t = Clock::now();
    lease.net().SetWeights(global_);
    const std::vector<float> grads = sizes.empty()
                                         ? std::vector<float>()
                                         : lease.net().GroupGradients(train_, rows, sizes, seeds);
    const std::size_t d = global_.size();
    for (std::size_t k = 0; k < stepping.size(); ++k) {
      std::vector<float>& local = outcomes[stepping[k]].local;
      for (std::size_t j = 0; j < d; ++j) local[j] += step * grads[k * d + j];
    }
    const double each = Since(t) / static_cast<double>(mine.size());
    for (const std::size_t slot : mine) {
      outcomes[slot].train_seconds = each;
      reports.Randomize(outcomes[slot], global_, Stream(round, everyone_[first + slot]));
    }
  });
}

Status LdpFlTrainer::RunRound(int round) {
  LdpFlRound stats;
  stats.round = round;
  stats.ranges = ranges_;
  const std::size_t first = PickClients(round);
  const RoundContext context{config_, seed_, round, per_round_, vector_.get(), *trained_};
  FEDLDP_ASSIGN_OR_RETURN(const auto reports,
                          MakeRoundReports(context, net_.layer_sizes(), ranges_, global_.size()));
  std::vector<ClientOutcome> outcomes(per_round_);
  for (std::size_t i = 0; i < per_round_; ++i) {
    run_.most_reports = std::max(run_.most_reports, ++picked_[everyone_[first + i]]);
  }
  TrainClients(round, first, *reports, outcomes);
  // The server takes the reports in the clients' order.
  for (ClientOutcome& out : outcomes) {
    stats.train_seconds += out.train_seconds;
    stats.perturb_seconds += out.perturb_seconds;
    if (!out.refused.ok()) return Error{"client report rejected: " + out.refused.error()};
    FEDLDP_RETURN_IF_ERROR(reports->Add(out, run_, stats));
  }
  const auto t = Clock::now();
  const double shuffling = stats.shuffle_seconds;
  std::vector<float> estimate = global_;
  FEDLDP_RETURN_IF_ERROR(reports->Estimate(estimate, stats));
  learner_->Step<float>(round, global_, estimate);
  learner_->Release<float>(global_, released_);
  if (config_.adaptive) {
    auto ranges = LayerRangesOf(global_, net_.layer_sizes(), config_.adaptive_margin);
    if (!ranges.ok()) return Error{"round " + std::to_string(round + 1) + ": " + ranges.error()};
    ranges_ = std::move(ranges).value();
  }
  stats.aggregate_seconds += Since(t) - (stats.shuffle_seconds - shuffling);
  net_.SetWeights(released_);
  stats.accuracy = round % config_.evaluate_every == 0 || round == config_.rounds
                       ? net_.Accuracy(test_)
                       : std::numeric_limits<double>::quiet_NaN();
  run_.rounds.push_back(std::move(stats));
  return Status::Ok();
}

Result<LdpFlRun> LdpFlTrainer::Run(const std::function<void(const LdpFlRound&)>& on_round,
                                   std::stop_token stop) {
  for (int round = 1; round <= config_.rounds; ++round) {
    if (cluster_.Any(stop.stop_requested())) {
      run_.stopped = true;
      break;
    }
    if (Status s = RunRound(round); !s.ok()) return Error{s.error()};
    if (on_round) on_round(run_.rounds.back());
  }
  // A run stopped between tests: its model is tested now.
  if (!run_.rounds.empty() && std::isnan(run_.rounds.back().accuracy)) {
    run_.rounds.back().accuracy = net_.Accuracy(test_);
  }
  run_.weights = std::move(released_);
  return std::move(run_);
}

}  // namespace

namespace {

// A trainer of `config` on the data, prepared (TrainLdpFl's checks), or why
// TrainLdpFl would refuse.
Result<std::unique_ptr<LdpFlTrainer>> PreparedTrainer(const LdpFlConfig& config,
                                                      const Dataset& train, const Dataset& test,
                                                      std::uint64_t seed,
                                                      const ParallelFor& parallel,
                                                      Cluster& cluster) {
  if (Status s = CheckLdpFlConfig(config, train.size()); !s.ok()) return Error{s.error()};
  auto net = NeuralNet::Create(config.arch, seed);
  if (!net.ok()) return Error{net.error()};
  if (test.dimension != train.dimension) {
    return Error{"the test rows have " + std::to_string(test.dimension) +
                 " features, the training rows " + std::to_string(train.dimension)};
  }
  if (const Status s = net->CheckInput(train); !s.ok()) return Error{s.error()};
  auto trainer = std::make_unique<LdpFlTrainer>(config, train, test, seed, std::move(net).value(),
                                                parallel, cluster);
  FEDLDP_RETURN_IF_ERROR(trainer->Prepare());
  return trainer;
}

}  // namespace

Status CheckLdpFlRun(const LdpFlConfig& config, const Dataset& train, const Dataset& test,
                     std::uint64_t seed) {
  const auto trainer = PreparedTrainer(config, train, test, seed, RunSequentially, OneProcess());
  if (!trainer.ok()) return Error{trainer.error(), trainer.code()};
  return {};
}

Result<TrainedWeights> LdpFlTrainedWeights(const LdpFlConfig& config) {
  auto net = NeuralNet::Create(config.arch, 0);
  if (!net.ok()) return Error{"model: " + net.error()};
  return TrainedWeights::Of(config.freeze, net->layer_names(), net->layer_sizes());
}

Result<LdpFlConfig> ApplyCentralTarget(LdpFlConfig config) {
  if (config.central_epsilon == 0) return config;
  FEDLDP_ASSIGN_OR_RETURN(const TrainedWeights trained, LdpFlTrainedWeights(config));
  return CalibrateLdpFlToCentral(std::move(config), trained.dimension());
}

DpGuarantee LdpFlRun::total() const {
  if (vector_privacy) return vector_privacy->total;
  if (privacy.shuffle_applies) return privacy.shuffled;
  return {privacy.plain_composition, 0};
}

Result<LdpFlRun> TrainLdpFl(const LdpFlConfig& config, const Dataset& train, const Dataset& test,
                            std::uint64_t seed,
                            const std::function<void(const LdpFlRound&)>& on_round,
                            std::stop_token stop, const ParallelFor& parallel, Cluster& cluster) {
  FEDLDP_ASSIGN_OR_RETURN(auto trainer,
                          PreparedTrainer(config, train, test, seed, parallel, cluster));
  return trainer->Run(on_round, stop);
}

}  // namespace fedldp
