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
};

const std::vector<OptimizerEntry>& Optimizers() {
  static const std::vector<OptimizerEntry> entries = {
      {"fedavg", [](double d, double&, double&, const ServerOptimizerConfig&) { return d; }},
      {"momentum",
       [](double d, double& m, double&, const ServerOptimizerConfig& c) {
         m = c.beta1 * m + d;
         return m;
       }},
      {"adam",
       [](double d, double& m, double& v, const ServerOptimizerConfig& c) {
         m = c.beta1 * m + (1 - c.beta1) * d;
         v = c.beta2 * v + (1 - c.beta2) * d * d;
         return m / (std::sqrt(v) + c.tau);
       }},
      {"yogi", [](double d, double& m, double& v, const ServerOptimizerConfig& c) {
         m = c.beta1 * m + (1 - c.beta1) * d;
         const double d2 = d * d;
         v -= (1 - c.beta2) * d2 * (v > d2 ? 1.0 : v < d2 ? -1.0 : 0.0);
         return m / (std::sqrt(v) + c.tau);
       }}};
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

void ServerOptimizer::Step(std::span<float> x, std::span<const float> estimate) {
  if (config_.is_identity()) {
    std::copy(estimate.begin(), estimate.end(), x.begin());
    return;
  }
  const Direction direction = Optimizers()[static_cast<std::size_t>(config_.kind)].direction;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const double d = static_cast<double>(estimate[j]) - static_cast<double>(x[j]);
    const double step = direction(d, m_[j], v_[j], config_);
    x[j] = static_cast<float>(static_cast<double>(x[j]) + config_.learning_rate * step);
  }
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

IterateAverage::IterateAverage(const IterateAveragingConfig& config, int rounds) : config_(config) {
  if (config.kind == IterateAveragingKind::kTail) {
    const auto averaged = static_cast<int>(std::ceil(config.tail * rounds));
    first_ = std::max(1, rounds - averaged + 1);
  }
}

std::span<const float> IterateAverage::Add(int round, std::span<const float> x) {
  released_.assign(x.begin(), x.end());
  if (config_.kind == IterateAveragingKind::kNone || round < first_) return released_;
  if (count_++ == 0) {
    mean_.assign(x.begin(), x.end());
    return released_;
  }
  // ema weighs the new iterate 1 - decay; tail keeps the running mean.
  const double w = config_.kind == IterateAveragingKind::kEma ? 1 - config_.decay
                                                              : 1 / static_cast<double>(count_);
  for (std::size_t j = 0; j < x.size(); ++j) {
    mean_[j] += w * (static_cast<double>(x[j]) - mean_[j]);
    released_[j] = static_cast<float>(mean_[j]);
  }
  return released_;
}

}  // namespace fedldp
