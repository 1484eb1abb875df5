#include "fedldp/fl/server_optimizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "fedldp/base/limits.h"

namespace fedldp {
namespace {

// One coordinate's step direction from its pseudo-gradient d, updating the
// optimiser's moments m and v (the header's formulas, before lr).
using Direction = double (*)(double d, double& m, double& v, const ServerOptimizerConfig& c);

struct OptimizerEntry {
  std::string name;
  Direction direction;
  std::size_t moments;  // what it keeps per weight: none, m, or m and v
};

const std::vector<OptimizerEntry>& Optimizers() {
  static const std::vector<OptimizerEntry> entries = {
      {"fedavg", [](double d, double&, double&, const ServerOptimizerConfig&) { return d; }, 0},
      {"momentum",
       [](double d, double& m, double&, const ServerOptimizerConfig& c) {
         m = c.beta1 * m + d;
         return m;
       },
       1},
      {"adam",
       [](double d, double& m, double& v, const ServerOptimizerConfig& c) {
         m = c.beta1 * m + (1 - c.beta1) * d;
         v = c.beta2 * v + (1 - c.beta2) * d * d;
         return m / (std::sqrt(v) + c.tau);
       },
       2},
      {"yogi",
       [](double d, double& m, double& v, const ServerOptimizerConfig& c) {
         m = c.beta1 * m + (1 - c.beta1) * d;
         const double d2 = d * d;
         v -= (1 - c.beta2) * d2 * (v > d2 ? 1.0 : v < d2 ? -1.0 : 0.0);
         return m / (std::sqrt(v) + c.tau);
       },
       2}};
  return entries;
}

// OK if `in` (the value is in `interval`), else the refusal naming both.
Status Within(bool in, std::string_view name, std::string_view interval, double value) {
  if (in) return {};
  std::ostringstream e;
  e << name << " must be in " << interval << ", got " << value;
  return Error{e.str()};
}

}  // namespace

const std::vector<std::string>& ServerOptimizerNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : Optimizers()) out.push_back(e.name);
    return out;
  }();
  return names;
}

std::string_view ServerOptimizerName(ServerOptimizerKind kind) {
  return ServerOptimizerNames().at(static_cast<std::size_t>(kind));
}

Status ServerOptimizerConfig::Validate() const {
  if (static_cast<std::size_t>(kind) >= Optimizers().size()) {
    return Error{"unknown server optimizer"};
  }
  FEDLDP_RETURN_IF_ERROR(CheckLearningRate(learning_rate, "server learning rate"));
  FEDLDP_RETURN_IF_ERROR(Within(beta1 >= 0 && beta1 < 1, "server beta1", "[0, 1)", beta1));
  FEDLDP_RETURN_IF_ERROR(Within(beta2 >= 0 && beta2 < 1, "server beta2", "[0, 1)", beta2));
  return Within(tau > 0 && tau <= 1, "server tau", "(0, 1]", tau);
}

ServerOptimizer::ServerOptimizer(const ServerOptimizerConfig& config, std::size_t dimension)
    : config_(config), m_(dimension, 0.0), v_(dimension, config.tau * config.tau) {}

template <typename T>
void ServerOptimizer::Step(std::span<T> x, std::span<const T> estimate) {
  if (config_.is_identity()) {
    std::copy(estimate.begin(), estimate.end(), x.begin());
    return;
  }
  const Direction direction = Optimizers()[static_cast<std::size_t>(config_.kind)].direction;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double d = static_cast<double>(estimate[j]) - static_cast<double>(x[j]);
    const double step = direction(d, m_[j], v_[j], config_);
    x[j] = static_cast<T>(static_cast<double>(x[j]) + config_.learning_rate * step);
  }
}
template void ServerOptimizer::Step<float>(std::span<float>, std::span<const float>);
template void ServerOptimizer::Step<double>(std::span<double>, std::span<const double>);

std::size_t ServerOptimizer::moments() const {
  return Optimizers()[static_cast<std::size_t>(config_.kind)].moments;
}

std::vector<double> ServerOptimizer::State() const {
  std::vector<double> out;
  if (moments() >= 1) out.insert(out.end(), m_.begin(), m_.end());
  if (moments() >= 2) out.insert(out.end(), v_.begin(), v_.end());
  return out;
}

Status ServerOptimizer::Restore(std::span<const double> state) {
  const std::size_t d = m_.size();
  if (state.size() != moments() * d) {
    return Error{"the server optimizer's state holds " + std::to_string(state.size()) +
                 " numbers, not " + std::to_string(moments() * d)};
  }
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (!std::isfinite(state[i]) || (i >= d && !(state[i] > 0))) {
      return Error{
          "the server optimizer's state is damaged (a moment is not finite, or a second "
          "moment not positive)"};
    }
  }
  if (moments() >= 1) std::copy(state.begin(), state.begin() + d, m_.begin());
  if (moments() >= 2) std::copy(state.begin() + d, state.end(), v_.begin());
  return {};
}

const std::vector<std::string>& IterateAveragingNames() {
  static const std::vector<std::string> names = {"none", "ema", "tail"};
  return names;
}

Status IterateAveragingConfig::Validate() const {
  if (static_cast<std::size_t>(kind) >= IterateAveragingNames().size()) {
    return Error{"unknown iterate averaging"};
  }
  FEDLDP_RETURN_IF_ERROR(Within(decay >= 0 && decay < 1, "average decay", "[0, 1)", decay));
  return Within(tail > 0 && tail <= 1, "average tail", "(0, 1]", tail);
}

std::string DescribeServer(const ServerOptimizerConfig& optimizer,
                           const IterateAveragingConfig& averaging, int rounds) {
  std::ostringstream out;
  out << "server: " << ServerOptimizerName(optimizer.kind) << " (lr " << optimizer.learning_rate;
  switch (optimizer.kind) {
    case ServerOptimizerKind::kFedAvg:
      if (optimizer.is_identity()) out << ": the round's estimate is the new model";
      break;
    case ServerOptimizerKind::kMomentum:
      out << ", beta1 " << optimizer.beta1;
      break;
    case ServerOptimizerKind::kAdam:
    case ServerOptimizerKind::kYogi:
      out << ", beta1 " << optimizer.beta1 << ", beta2 " << optimizer.beta2 << ", tau "
          << optimizer.tau;
      break;
  }
  out << "); releases ";
  switch (averaging.kind) {
    case IterateAveragingKind::kNone:
      out << "the last model";
      break;
    case IterateAveragingKind::kEma:
      out << "the moving average of the models (decay " << averaging.decay << ")";
      break;
    case IterateAveragingKind::kTail:
      out << "the mean of the models of rounds " << IterateAverage(averaging, rounds).first_round()
          << " to " << rounds;
      break;
  }
  return out.str();
}

int TailRounds(double tail, int rounds) {
  // tail * rounds rounded up, but a product a rounding above a whole number
  // (0.7 * 10 = 7.000000000000001) counts as that number; at least one.
  const double want = tail * rounds;
  const double whole = std::round(want);
  const double count =
      std::abs(want - whole) <= 1e-9 * std::max(1.0, want) ? whole : std::ceil(want);
  return std::clamp(static_cast<int>(count), 1, std::max(1, rounds));
}

IterateAverage::IterateAverage(const IterateAveragingConfig& config, int rounds)
    : config_(config), rounds_(rounds) {
  if (config.kind == IterateAveragingKind::kTail) {
    first_ = std::max(1, rounds - TailRounds(config.tail, rounds) + 1);
  }
}

template <typename T>
void IterateAverage::Add(int round, std::span<const T> x) {
  if (config_.kind == IterateAveragingKind::kNone || round < first_) return;
  if (count_++ == 0) {
    mean_.assign(x.begin(), x.end());
    return;
  }
  // ema weighs the new iterate 1 - decay; tail keeps the running mean.
  const double w = config_.kind == IterateAveragingKind::kEma ? 1 - config_.decay
                                                              : 1 / static_cast<double>(count_);
  for (std::size_t j = 0; j < x.size(); ++j) mean_[j] += w * (static_cast<double>(x[j]) - mean_[j]);
}
template void IterateAverage::Add<float>(int, std::span<const float>);
template void IterateAverage::Add<double>(int, std::span<const double>);

template <typename T>
void IterateAverage::Release(std::span<const T> x, std::span<T> out) const {
  if (count_ == 0) {
    std::copy(x.begin(), x.end(), out.begin());
    return;
  }
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = static_cast<T>(mean_[j]);
}
template void IterateAverage::Release<float>(std::span<const float>, std::span<float>) const;
template void IterateAverage::Release<double>(std::span<const double>, std::span<double>) const;

std::vector<double> IterateAverage::State() const {
  if (config_.kind == IterateAveragingKind::kNone) return {};
  std::vector<double> out = {static_cast<double>(count_)};
  out.insert(out.end(), mean_.begin(), mean_.end());
  return out;
}

Status IterateAverage::Restore(std::span<const double> state, std::size_t dimension) {
  if (config_.kind == IterateAveragingKind::kNone) {
    if (state.empty()) return {};
    return Error{"the server's average holds numbers, but the task averages no models"};
  }
  const double count = state.empty() ? -1 : state[0];
  if (!(count >= 0 && count <= rounds_ && count == std::floor(count))) {
    return Error{"the server's average is damaged (its count of models is not one of 0 to " +
                 std::to_string(rounds_) + ")"};
  }
  if (state.size() != 1 + (count > 0 ? dimension : 0)) {
    return Error{"the server's average holds " + std::to_string(state.size() - 1) +
                 " numbers, not " + std::to_string(count > 0 ? dimension : 0)};
  }
  for (double v : state.subspan(1)) {
    if (!std::isfinite(v)) return Error{"the server's average is damaged (not finite)"};
  }
  count_ = static_cast<std::size_t>(count);
  mean_.assign(state.begin() + 1, state.end());
  return {};
}

ServerLearner::ServerLearner(const ServerOptimizerConfig& optimizer,
                             const IterateAveragingConfig& averaging, int rounds,
                             std::size_t dimension)
    : optimizer_(optimizer, dimension), average_(averaging, rounds), dimension_(dimension) {}

template <typename T>
void ServerLearner::Step(int round, std::span<T> x, std::span<const T> estimate) {
  if (!estimate.empty()) optimizer_.Step(x, estimate);
  average_.Add(round, std::span<const T>(x));
}
template void ServerLearner::Step<float>(int, std::span<float>, std::span<const float>);
template void ServerLearner::Step<double>(int, std::span<double>, std::span<const double>);

std::vector<double> ServerLearner::State() const {
  std::vector<double> out = optimizer_.State();
  const std::vector<double> average = average_.State();
  out.insert(out.end(), average.begin(), average.end());
  return out;
}

Status ServerLearner::Restore(std::span<const double> state) {
  const std::size_t moments = optimizer_.State().size();
  if (state.size() < moments) {
    return Error{"the server's learning state holds " + std::to_string(state.size()) +
                 " numbers, fewer than its optimizer's " + std::to_string(moments)};
  }
  FEDLDP_RETURN_IF_ERROR(optimizer_.Restore(state.first(moments)));
  return average_.Restore(state.subspan(moments), dimension_);
}

}  // namespace fedldp
