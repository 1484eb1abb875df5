#include "fedldp/fl/ldpfl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
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

Result<std::vector<std::vector<std::size_t>>> SplitClients(const Dataset& data, std::size_t clients,
                                                           double alpha, std::uint64_t seed) {
  return PartitionRows(data, {}, clients, alpha, seed);
}

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

// After each process trained the clients it owns (of the round's
// `clients`, one per slot): every slot's outcome on every process. The
// trained weights travel only for a noise-free run, which sums them.
void ShareOutcomes(Cluster& cluster, std::span<const std::size_t> clients, std::size_t n,
                   bool with_local, std::span<ClientOutcome> outcomes) {
  using namespace fl_internal;
  ExchangeSlots(
      cluster, clients, n,
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

}  // namespace

Result<LdpFlRun> TrainLdpFl(const LdpFlConfig& config, const Dataset& train, const Dataset& test,
                            std::uint64_t seed,
                            const std::function<void(const LdpFlRound&)>& on_round,
                            std::stop_token stop, const ParallelFor& parallel, Cluster& cluster) {
  if (Status s = CheckLdpFlConfig(config, train.size()); !s.ok()) return Error{s.error()};
  auto net_made = NeuralNet::Create(config.arch, seed);
  if (!net_made.ok()) return Error{net_made.error()};
  NeuralNet net = std::move(net_made).value();
  if (test.dimension != train.dimension) {
    return Error{"the test rows have " + std::to_string(test.dimension) +
                 " features, the training rows " + std::to_string(train.dimension)};
  }
  if (const Status s = net.CheckInput(train); !s.ok()) return Error{s.error()};
  InputMoments input;
  if (config.standardize_inputs) {
    std::vector<std::size_t> all(train.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    input = InputMomentsOf(train, all);
    if (!(input.sd > 0)) input = {};
    net.SetInputStandardization(input.mean, input.sd);
  }
  auto shards = SplitClients(train, config.clients, config.dirichlet_alpha, seed);
  if (!shards.ok()) return Error{shards.error()};
  const std::size_t per_round = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::llround(config.fraction * config.clients)));

  const std::size_t reports_per_client = LdpFlReportsPerClient(config);
  const std::size_t rounds_per_epoch = std::max<std::size_t>(1, config.clients / per_round);

  LdpFlRun run;
  run.parameters = net.parameters();
  run.majority = test.MajorityRate();
  run.privacy =
      AccountLdpFl(config.epsilon, net.parameters(), reports_per_client, per_round, config.delta);
  auto vector_made = LdpFlVectorRandomizer(config, net.parameters(), seed);
  if (!vector_made.ok()) return Error{vector_made.error()};
  const std::unique_ptr<VectorRandomizer> vector = std::move(vector_made).value();
  const bool use_vector = vector != nullptr && config.is_private;
  if (vector) {
    auto accounted = AccountRun(LdpFlVectorRunPrivacy(*vector, reports_per_client, per_round,
                                                      config.shuffle, config.delta));
    if (!accounted.ok()) return Error{"the accountant: " + accounted.error()};
    run.vector_privacy = std::move(accounted).value();
    run.report_bytes = 8 * net.parameters();  // d doubles (fedldp.v1.VectorReport)
    run.float32_bytes = 4 * net.parameters();
  }
  std::vector<float> global = net.GetWeights();
  std::vector<LayerRange> ranges =
      config.adaptive ? LayerRangesOf(global, net.layer_sizes(), config.adaptive_margin)
                      : std::vector<LayerRange>(net.layer_sizes().size(), config.fixed_range);
  // Each client trains on a net of its own (the nets are reused): their
  // weights are set from the global model before training.
  NetPool pool([&]() -> NeuralNet {
    NeuralNet own = NeuralNet::Create(config.arch, seed).value();
    if (config.standardize_inputs) own.SetInputStandardization(input.mean, input.sd);
    return own;
  });
  const ParallelFor run_clients =
      net.trains_concurrently() ? parallel : ParallelFor(RunSequentially);
  CounterRng pick(seed, 0x9e37);
  std::vector<std::size_t> everyone(config.clients);
  std::iota(everyone.begin(), everyone.end(), std::size_t{0});
  std::vector<std::size_t> picked(config.clients, 0);

  const int processes = cluster.size(), me = cluster.rank();
  for (int round = 1; round <= config.rounds; ++round) {
    if (cluster.Any(stop.stop_requested())) {
      run.stopped = true;
      break;
    }
    LdpFlRound stats;
    stats.round = round;
    stats.ranges = ranges;
    // The round's clients, everyone[first, first + per_round): a uniform
    // subset, or with disjoint rounds the next part of the epoch's order.
    std::size_t first = 0;
    if (config.disjoint_rounds) {
      const auto b = static_cast<std::size_t>(round - 1) % rounds_per_epoch;
      if (b == 0) {
        for (std::size_t i = config.clients; i > 1; --i) {
          std::swap(everyone[i - 1], everyone[UniformIndex(pick, i)]);
        }
      }
      first = b * per_round;
    } else {
      for (std::size_t i = 0; i < per_round; ++i) {
        std::swap(everyone[i], everyone[i + UniformIndex(pick, config.clients - i)]);
      }
    }
    // Vector randomizers: the round's reports, summed after the shuffle.
    std::vector<std::vector<double>> vector_reports;
    auto randomizer = LdpFlRandomizer::Create(config.epsilon, net.layer_sizes(), ranges);
    if (!randomizer.ok())
      return Error{"round " + std::to_string(round) + ": " + randomizer.error()};
    LdpFlAggregator aggregator(*randomizer);
    ParameterShuffler shuffler(*randomizer, config.schedule);
    std::vector<double> plain_sum(config.is_private ? 0 : global.size(), 0.0);
    // The clients train and perturb, each on a net of its own and with its
    // own streams, in parallel; the server then takes their reports in the
    // clients' order.
    std::vector<ClientOutcome> outcomes(per_round);
    for (std::size_t i = 0; i < per_round; ++i) {
      run.most_reports = std::max(run.most_reports, ++picked[everyone[first + i]]);
    }
    run_clients(per_round, [&](std::size_t i) {
      const std::size_t client = everyone[first + i];
      if (processes > 1 && Cluster::Owner(client, config.clients, processes) != me) return;
      const std::uint64_t stream = static_cast<std::uint64_t>(round) * config.clients + client;
      ClientOutcome& out = outcomes[i];
      NetPool::Lease lease = pool.Acquire();
      NeuralNet& own = lease.net();
      auto t = Clock::now();
      own.SetWeights(global);
      own.Train(train, (*shards)[client], config.local_epochs, config.batch, config.learning_rate,
                seed ^ (stream * 0x9e3779b97f4a7c15ULL));
      out.local = own.GetWeights();
      out.train_seconds = Since(t);
      if (use_vector) {  // the whole update, clipped and privatised
        t = Clock::now();
        CounterRng rng(seed, stream);
        out.vector_report = PrivatizeUpdate(*vector, out.local, global, rng);
        out.perturb_seconds = Since(t);
        if (auto s = vector->ValidateReport(out.vector_report); !s.ok()) out.refused = s;
        return;
      }
      if (config.perturb_updates || vector) {
        for (std::size_t j = 0; j < out.local.size(); ++j) out.local[j] -= global[j];
      }
      if (!config.is_private) return;
      t = Clock::now();
      CounterRng rng(seed, stream);
      out.report = randomizer->Randomize(out.local, rng);
      out.perturb_seconds = Since(t);
    });
    if (processes > 1) {
      ShareOutcomes(cluster, {everyone.data() + first, per_round}, config.clients,
                    !config.is_private, outcomes);
    }
    for (ClientOutcome& out : outcomes) {
      stats.train_seconds += out.train_seconds;
      stats.perturb_seconds += out.perturb_seconds;
      if (!out.refused.ok()) return Error{"client report rejected: " + out.refused.error()};
      if (use_vector) {
        vector_reports.push_back(std::move(out.vector_report));
        ++run.reports;
        continue;
      }
      if (!config.is_private) {
        if (vector) {  // clipped to the same l2 ball as the private reports
          const std::vector<double> update(out.local.begin(), out.local.end());
          std::vector<double> clipped(update.size());
          vector->ClipInto(update, clipped);
          for (std::size_t j = 0; j < out.local.size(); ++j) plain_sum[j] += clipped[j];
          continue;
        }
        for (std::size_t j = 0; j < out.local.size(); ++j) plain_sum[j] += out.local[j];
        continue;
      }
      const LdpFlReport& report = *out.report;
      if (run.report_bytes == 0) {
        run.report_bytes = report.EncodedBytes();
        run.float32_bytes = report.Float32Bytes();
      }
      const auto t = Clock::now();
      const Status accepted = config.shuffle ? shuffler.Submit(report) : aggregator.Add(report);
      if (!accepted.ok()) return Error{"client report rejected: " + accepted.error()};
      stats.shuffle_seconds += Since(t);
      ++run.reports;
    }
    auto t = Clock::now();
    if (use_vector) {
      if (config.shuffle) {  // the server sees the round's reports in a random order
        CounterRng shuffle_rng(seed, 0x5f00000000ULL + static_cast<std::uint64_t>(round));
        for (std::size_t i = vector_reports.size(); i > 1; --i) {
          std::swap(vector_reports[i - 1], vector_reports[UniformIndex(shuffle_rng, i)]);
        }
        stats.shuffle_seconds += Since(t);
        t = Clock::now();
      }
      std::vector<double> sum(global.size(), 0.0);
      for (const auto& report : vector_reports) {
        for (std::size_t j = 0; j < sum.size(); ++j) sum[j] += report[j];
      }
      const double count = static_cast<double>(vector_reports.size());
      for (std::size_t j = 0; j < global.size(); ++j) {
        global[j] += static_cast<float>(sum[j] / count);
      }
    } else if (config.is_private) {
      if (config.shuffle) {
        CounterRng shuffle_rng(seed, 0x5f00000000ULL + static_cast<std::uint64_t>(round));
        const auto shuffled = shuffler.Release(shuffle_rng);
        stats.shuffle_seconds += Since(t);
        t = Clock::now();
        if (Status s = aggregator.AddShuffled(shuffled); !s.ok()) return Error{s.error()};
      }
      const std::vector<float> mean = aggregator.Mean();
      for (std::size_t j = 0; j < global.size(); ++j) {
        global[j] = config.perturb_updates ? global[j] + mean[j] : mean[j];
      }
    } else {
      // The noise-free reference of a vector randomizer: the mean update,
      // clipped as the private clients clip it.
      for (std::size_t j = 0; j < global.size(); ++j) {
        const double m = plain_sum[j] / static_cast<double>(per_round);
        global[j] = static_cast<float>(config.perturb_updates || vector ? global[j] + m : m);
      }
    }
    if (config.adaptive) ranges = LayerRangesOf(global, net.layer_sizes(), config.adaptive_margin);
    stats.aggregate_seconds += Since(t);
    net.SetWeights(global);
    stats.accuracy = net.Accuracy(test);
    run.rounds.push_back(stats);
    if (on_round) on_round(run.rounds.back());
  }
  run.weights = std::move(global);
  return run;
}

}  // namespace fedldp
