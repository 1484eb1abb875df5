// LDP-FL's config rules, its vector randomizer and its client step, apart
// from the Torch-bound training (ldpfl.cc): the deployment's coordinator and
// client need them, and the service fuzzer builds that coordinator without
// Torch.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "fedldp/base/limits.h"
#include "fedldp/base/names.h"
#include "fedldp/fl/ldpfl.h"

namespace fedldp {
namespace {

// Secret sampling amplifies shuffled rounds of pure-eps reports, drawn
// afresh every round or, with disjoint rounds, allocated by each epoch's
// secret order.
Status CheckSecretSampling(const LdpFlConfig& c) {
  if (!c.secret_sampling) return {};
  if (!c.vector || c.vector->traits().needs_delta || !c.shuffle) {
    return Error{
        "secret sampling takes a vector randomizer of pure eps reports (not twopoint or a "
        "gaussian) and the shuffler"};
  }
  return {};
}

// A central target sets the budget of shuffled pure-eps reports.
Status CheckCentralTarget(const LdpFlConfig& c) {
  if (c.central_epsilon == 0) return {};
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(c.central_epsilon, "central epsilon"));
  if (!c.vector || c.vector->traits().needs_delta || !c.shuffle) {
    return Error{
        "a central epsilon takes a vector randomizer of pure eps reports (not twopoint or a "
        "gaussian) and the shuffler"};
  }
  return {};
}

// The comma-separated names of `list`, spaces trimmed; an empty name
// (",," or a trailing comma) refused.
Result<std::vector<std::string>> NamesOf(std::string_view list) {
  std::vector<std::string> names;
  if (list.empty()) return names;
  for (std::size_t at = 0;;) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    std::string_view name = list.substr(at, comma - at);
    name.remove_prefix(std::min(name.find_first_not_of(' '), name.size()));
    name = name.substr(0, name.find_last_not_of(' ') + 1);
    if (name.empty()) return Error{"freeze: an empty name in '" + std::string(list) + "'"};
    names.emplace_back(name);
    if (comma == list.size()) return names;
    at = comma + 1;
  }
}

}  // namespace

Status LdpFlConfig::Validate() const {
  const LdpFlConfig& config = *this;
  FEDLDP_RETURN_IF_ERROR(CheckCount(kRounds, config.rounds));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kLocalEpochs, config.local_epochs));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kBatch, config.batch));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kClientBatch, config.client_batch));
  if (config.evaluate_every < 1) return Error{"evaluate_every must be >= 1"};
  if (!(config.fraction > 0 && config.fraction <= 1)) return Error{"fraction must be in (0, 1]"};
  FEDLDP_RETURN_IF_ERROR(CheckLearningRate(config.learning_rate));
  if (!(config.adaptive_margin >= 1)) return Error{"adaptive margin must be >= 1"};
  if (!(config.fixed_range.radius > 0 && std::isfinite(config.fixed_range.radius))) {
    return Error{"radius must be > 0"};
  }
  if (!std::isfinite(config.fixed_range.center)) return Error{"center must be a number"};
  if (config.perturb_updates && config.adaptive) {
    return Error{"perturbing updates takes a fixed range, not an adaptive one"};
  }
  if (config.is_private) {
    FEDLDP_RETURN_IF_ERROR(CheckEpsilon(config.epsilon));
    // A fixed range is the same every round: one the two-point mechanism
    // cannot serve at this eps is refused now, not at round 1.
    if (!config.vector && !config.adaptive) {
      auto usable = LdpFlRandomizer::Create(config.epsilon, {1}, {config.fixed_range});
      if (!usable.ok()) return Error{"the fixed range: " + usable.error()};
    }
  }
  if (config.clients == 0) return Error{"clients must be >= 1"};
  FEDLDP_RETURN_IF_ERROR(config.partition().Validate());
  if (config.vector) {
    if (*config.vector == VectorMechanism::kDuchi) {
      return Error{"randomizer must be " + Listed(LdpFlRandomizerNames(), " or ")};
    }
    if (config.adaptive) {
      return Error{"a vector randomizer privatises the update: no adaptive ranges"};
    }
    if (!(config.clip > 0 && std::isfinite(config.clip))) {
      return Error{"clip must be a number > 0"};
    }
  }
  FEDLDP_RETURN_IF_ERROR(config.server.Validate());
  FEDLDP_RETURN_IF_ERROR(config.averaging.Validate());
  FEDLDP_RETURN_IF_ERROR(CheckSecretSampling(config));
  if (!config.freeze.empty() && config.is_private && !config.vector) {
    return Error{
        "freeze takes a vector randomizer or a noise-free run: twopoint reports every "
        "weight"};
  }
  return CheckCentralTarget(config);
}

std::string LdpFlRandomizerName(const LdpFlConfig& config) {
  return config.vector ? std::string(VectorMechanismName(*config.vector)) : "twopoint";
}

std::optional<PrivacyRecord> LdpFlPrivacyRecord(const LdpFlConfig& config,
                                                const LdpFlPrivacy& per_weight,
                                                const std::optional<RunPrivacy>& vector) {
  if (!config.is_private) return std::nullopt;
  const std::string name = LdpFlRandomizerName(config);
  const std::string floating_point = FloatingPointStatement(config.vector);
  if (vector) return PrivacyRecordOf(*vector, name, floating_point);
  return PrivacyRecordOf(per_weight, name, floating_point);
}

std::vector<std::string> LdpFlRandomizerNames() {
  std::vector<std::string> names = {"twopoint"};
  for (const auto& n : VectorMechanismNames()) {
    if (n != VectorMechanism::kDuchi.name()) names.push_back(n);
  }
  return names;
}

Result<std::optional<VectorMechanism>> ParseLdpFlRandomizer(std::string_view name) {
  if (name == "twopoint") return std::optional<VectorMechanism>();
  auto mechanism = ParseVectorMechanism(name);
  if (!mechanism.ok() || *mechanism == VectorMechanism::kDuchi) {
    return Error{"unknown randomizer '" + std::string(name) + "': one of " +
                     Listed(LdpFlRandomizerNames(), " or "),
                 ErrorCode::kInvalidArgument};
  }
  return std::optional<VectorMechanism>(*mechanism);
}

Result<std::unique_ptr<VectorRandomizer>> LdpFlVectorRandomizer(const LdpFlConfig& config,
                                                                std::size_t d,
                                                                std::uint64_t public_seed) {
  if (!config.vector) return std::unique_ptr<VectorRandomizer>();
  VectorRandomizerConfig vc;
  vc.mechanism = *config.vector;
  vc.dimension = d;
  vc.epsilon = config.epsilon;
  vc.clip = config.clip;
  vc.delta = vc.mechanism.traits().needs_delta ? config.vector_delta : 0.0;
  vc.public_seed = public_seed;
  return MakeVectorRandomizer(vc);
}

RunPrivacyConfig LdpFlVectorRunPrivacy(const VectorRandomizer& randomizer,
                                       std::size_t reports_per_client, std::size_t per_round,
                                       bool shuffle, double delta, double sampling_rate) {
  RunPrivacyConfig account;
  account.local_epsilon = randomizer.epsilon();
  account.local_delta = randomizer.delta();
  account.rounds = reports_per_client;
  account.shuffle = shuffle && randomizer.delta() == 0;
  account.reports_per_round = account.shuffle ? per_round : 0;
  account.delta = delta;
  if (account.shuffle) account.sampling_rate = sampling_rate;
  account.report_deviation = randomizer.deviation();
  return account;
}

RunPrivacyConfig LdpFlRunPrivacyOf(const LdpFlConfig& config, const VectorRandomizer& randomizer) {
  const std::size_t per_round = LdpFlClientsPerRound(config);
  const std::size_t rounds_per_epoch = LdpFlRoundsPerEpoch(config);
  if (config.secret_sampling && config.disjoint_rounds && rounds_per_epoch > 1) {
    // Random allocation: every round counted, in epochs of t = 1 / q, each
    // epoch stated as one shuffle of its t rounds' reports.
    RunPrivacyConfig run =
        LdpFlVectorRunPrivacy(randomizer, static_cast<std::size_t>(std::max(config.rounds, 1)),
                              ShuffleBatchOf(config.shuffle_batch, per_round), config.shuffle,
                              config.delta, 1.0 / static_cast<double>(rounds_per_epoch));
    run.allocation = run.shuffle;
    return run;
  }
  const double sampling_rate =
      config.secret_sampling ? static_cast<double>(per_round) / static_cast<double>(config.clients)
                             : 1.0;
  return LdpFlVectorRunPrivacy(randomizer, LdpFlReportsPerClient(config),
                               ShuffleBatchOf(config.shuffle_batch, per_round), config.shuffle,
                               config.delta, sampling_rate);
}

Result<LdpFlConfig> CalibrateLdpFlToCentral(LdpFlConfig config, std::size_t d) {
  if (config.central_epsilon == 0) return Error{"no central epsilon to calibrate to"};
  FEDLDP_RETURN_IF_ERROR(config.Validate());
  const double target = config.central_epsilon;
  const auto run_at = [&](double epsilon) -> Result<RunPrivacyConfig> {
    config.epsilon = epsilon;
    FEDLDP_ASSIGN_OR_RETURN(const auto randomizer, LdpFlVectorRandomizer(config, d, 0));
    return LdpFlRunPrivacyOf(config, *randomizer);
  };
  FEDLDP_ASSIGN_OR_RETURN(const RunPrivacyConfig shape, run_at(config.epsilon));
  FEDLDP_ASSIGN_OR_RETURN(double epsilon, LocalEpsilonForCentral(shape, target));
  // The search holds for the accountant's own eps0; the run's randomizer is
  // made at the budget found, so its statement is checked again, the
  // budget only ever lowered.
  epsilon *= 1 - 1e-12;
  for (int i = 0; i < 50; ++i, epsilon *= 0.999) {
    FEDLDP_ASSIGN_OR_RETURN(const RunPrivacyConfig run, run_at(epsilon));
    FEDLDP_ASSIGN_OR_RETURN(const RunPrivacy p, AccountRun(run));
    if (p.total.epsilon <= target) return config;
  }
  return Error{"could not calibrate " + LdpFlRandomizerName(config) + " to central epsilon " +
               std::to_string(target)};
}

std::vector<double> PrivatizeUpdate(const VectorRandomizer& randomizer,
                                    const TrainedWeights& trained, std::span<const float> local,
                                    std::span<const float> global, Rng& rng) {
  const std::vector<double> update = trained.UpdateOf(local, global);
  std::vector<double> report(update.size());
  randomizer.Randomize(update, report, rng);
  return report;
}

TrainedWeights::TrainedWeights(std::size_t parameters)
    : runs_{{0, parameters}}, dimension_(parameters), parameters_(parameters) {}

Result<TrainedWeights> TrainedWeights::Of(std::string_view freeze,
                                          const std::vector<std::string>& names,
                                          const std::vector<std::size_t>& sizes) {
  TrainedWeights out;
  out.frozen_.assign(names.size(), false);
  FEDLDP_ASSIGN_OR_RETURN(const std::vector<std::string> terms, NamesOf(freeze));
  for (const std::string& term : terms) {
    bool named = false;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == term || names[i].starts_with(term + ".")) out.frozen_[i] = named = true;
    }
    if (!named) {
      return Error{"freeze: '" + term + "' is no layer or module of the network (its layers: " +
                   Listed(names, ", ") + ")"};
    }
  }
  for (std::size_t i = 0, at = 0; i < names.size(); at += sizes[i++]) {
    if (out.frozen_[i]) continue;
    if (!out.runs_.empty() && out.runs_.back().second == at) {
      out.runs_.back().second += sizes[i];
    } else {
      out.runs_.emplace_back(at, at + sizes[i]);
    }
    out.dimension_ += sizes[i];
  }
  for (const std::size_t size : sizes) out.parameters_ += size;
  if (out.dimension_ == 0) return Error{"freeze: every layer frozen, nothing left to train"};
  return out;
}

namespace {

// Throws std::invalid_argument unless `size` is what `what` takes.
void CheckSize(const char* what, std::size_t size, std::size_t expected) {
  if (size != expected) {
    throw std::invalid_argument(std::string("TrainedWeights::") + what + ": " +
                                std::to_string(size) + " values, not " + std::to_string(expected));
  }
}

}  // namespace

std::vector<double> TrainedWeights::UpdateOf(std::span<const float> local,
                                             std::span<const float> global) const {
  CheckSize("UpdateOf (local)", local.size(), parameters_);
  CheckSize("UpdateOf (global)", global.size(), parameters_);
  std::vector<double> update;
  update.reserve(dimension_);
  for (const auto& [begin, end] : runs_) {
    for (std::size_t j = begin; j < end; ++j) update.push_back(local[j] - global[j]);
  }
  return update;
}

std::vector<double> UpdateOf(std::span<const float> local, std::span<const float> global) {
  return TrainedWeights(local.size()).UpdateOf(local, global);
}

std::vector<double> TrainedWeights::Gather(std::span<const float> w) const {
  CheckSize("Gather", w.size(), parameters_);
  std::vector<double> out;
  out.reserve(dimension_);
  for (const auto& [begin, end] : runs_) out.insert(out.end(), w.begin() + begin, w.begin() + end);
  return out;
}

void TrainedWeights::AddTo(std::span<const double> v, double divisor,
                           std::span<double> model) const {
  CheckSize("AddTo (update)", v.size(), dimension_);
  CheckSize("AddTo (model)", model.size(), parameters_);
  std::size_t k = 0;
  for (const auto& [begin, end] : runs_) {
    for (std::size_t j = begin; j < end; ++j) model[j] += v[k++] / divisor;
  }
}

}  // namespace fedldp
