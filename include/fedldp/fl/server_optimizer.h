// What the server does with a round's privatised estimate of the new model:
// a server optimiser steps the model towards it, and iterate averaging
// releases a mean of the models so far. Both read only the privatised
// estimates (post-processing), so a run's privacy statement is the same
// whichever is chosen; the simulator and the deployment both use these.
//
// The optimisers are Reddi et al., "Adaptive Federated Optimization" (ICLR
// 2021), Algorithm 2, on the pseudo-gradient D_t = e_t - x_{t-1}: the
// round's estimate e_t (the old model plus the mean update, or the mean
// model) minus the model the round began from. Per coordinate:
//   fedavg    x_t = x_{t-1} + lr D_t                 (lr 1: e_t itself, FedAvg)
//   momentum  m_t = b1 m_{t-1} + D_t;                x_t = x_{t-1} + lr m_t
//             (FedAvgM: Hsu, Qi & Brown, 2019)
//   adam      m_t = b1 m_{t-1} + (1 - b1) D_t;  v_t = b2 v_{t-1} + (1 - b2) D_t^2;
//             x_t = x_{t-1} + lr m_t / (sqrt(v_t) + tau)
//   yogi      as adam, with v_t = v_{t-1} - (1 - b2) D_t^2 sign(v_{t-1} - D_t^2)
// from m_0 = 0 and v_0 = tau^2, without bias correction, as the paper has it.
//
// Iterate averaging releases, after round t, the exponential moving
// average a_t = decay a_{t-1} + (1 - decay) x_t (a_1 = x_1), or the uniform
// mean of the iterates of the run's last `tail` fraction of rounds (before
// those rounds, x_t itself); none releases x_t.
//
// ServerLearner is the two in one, as the simulator's trainer and the
// deployed server (net/ldpfl_deploy.h) both run them: on the simulator's
// float models and the server's double ones alike, with State and Restore
// to carry a deployed server's moments and average across a restart.
#ifndef FEDLDP_FL_SERVER_OPTIMIZER_H_
#define FEDLDP_FL_SERVER_OPTIMIZER_H_

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"

namespace fedldp {

enum class ServerOptimizerKind { kFedAvg, kMomentum, kAdam, kYogi };

struct ServerOptimizerConfig {
  ServerOptimizerKind kind = ServerOptimizerKind::kFedAvg;
  double learning_rate = 1;
  double beta1 = 0.9;  // momentum's b1, Adam's and Yogi's first moment
  double beta2 = 0.99;
  double tau = 1e-3;

  // fedavg with lr 1: the new model is the estimate, exactly.
  bool is_identity() const { return kind == ServerOptimizerKind::kFedAvg && learning_rate == 1; }
  Status Validate() const;
};

// The optimisers' names, in ServerOptimizerKind's order.
const std::vector<std::string>& ServerOptimizerNames();
std::string_view ServerOptimizerName(ServerOptimizerKind kind);

class ServerOptimizer {
 public:
  // `config` must be valid (Validate()).
  ServerOptimizer(const ServerOptimizerConfig& config, std::size_t dimension);
  // x, the model the round began from, becomes the round's new model from
  // its estimate; both have the optimiser's dimension. T: float or double.
  template <typename T>
  void Step(std::span<T> x, std::span<const T> estimate);

  // The moments (m, then v, as far as the optimiser keeps them; none for
  // fedavg), and back: Restore refuses a state of another size, or with a
  // moment not finite (or a v not positive).
  std::vector<double> State() const;
  Status Restore(std::span<const double> state);

 private:
  std::size_t moments() const;  // 0, 1 (m) or 2 (m and v)
  ServerOptimizerConfig config_;
  std::vector<double> m_, v_;
};

enum class IterateAveragingKind { kNone, kEma, kTail };

struct IterateAveragingConfig {
  IterateAveragingKind kind = IterateAveragingKind::kNone;
  double decay = 0.9;  // ema
  double tail = 0.5;   // tail: the fraction of the run's rounds averaged
  Status Validate() const;
};

const std::vector<std::string>& IterateAveragingNames();

// One line: the optimiser with its settings, and what a run of `rounds`
// rounds releases ("server: adam (lr 0.01, beta1 0.9, ...); releases ...").
std::string DescribeServer(const ServerOptimizerConfig& optimizer,
                           const IterateAveragingConfig& averaging, int rounds);

// The rounds tail averaging averages at the end of a run of `rounds`: tail
// times rounds rounded up (a product within 1e-9 of a whole number is that
// number), at least 1.
int TailRounds(double tail, int rounds);

class IterateAverage {
 public:
  // Over a run of `rounds` rounds; `config` must be valid.
  IterateAverage(const IterateAveragingConfig& config, int rounds);
  // After round t (1, 2, ...): its model x_t. T: float or double.
  template <typename T>
  void Add(int round, std::span<const T> x);
  // The model to release when x is the last model added: x itself before
  // the averaged rounds (or without averaging), else the average.
  template <typename T>
  void Release(std::span<const T> x, std::span<T> out) const;
  // The round from which tail averaging averages (1 for the others).
  int first_round() const { return first_; }

  // Nothing without averaging, else the iterates averaged so far and their
  // average (none before the first); Restore refuses a count past the run's
  // rounds, a mean of another dimension, or one not finite.
  std::vector<double> State() const;
  Status Restore(std::span<const double> state, std::size_t dimension);

 private:
  IterateAveragingConfig config_;
  int rounds_ = 0;
  int first_ = 1;
  std::size_t count_ = 0;
  std::vector<double> mean_;
};

class ServerLearner {
 public:
  // Over a run of `rounds` rounds of models of `dimension` weights; both
  // configs must be valid.
  ServerLearner(const ServerOptimizerConfig& optimizer, const IterateAveragingConfig& averaging,
                int rounds, std::size_t dimension);
  // Round `round` (1, 2, ...) closes: x, the model it began from, steps
  // towards the round's estimate (an empty estimate: x stays, as after a
  // round without reports), and the average takes the new x.
  template <typename T>
  void Step(int round, std::span<T> x, std::span<const T> estimate);
  // The model to release beside x, the model after the last Step.
  template <typename T>
  void Release(std::span<const T> x, std::span<T> out) const {
    average_.Release(x, out);
  }
  // What a restart needs to go on exactly (the optimiser's state, then the
  // average's; empty for fedavg at lr 1 without averaging), and back.
  std::vector<double> State() const;
  Status Restore(std::span<const double> state);

 private:
  ServerOptimizer optimizer_;
  IterateAverage average_;
  std::size_t dimension_;
};

}  // namespace fedldp

#endif  // FEDLDP_FL_SERVER_OPTIMIZER_H_
