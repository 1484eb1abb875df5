// The JSON records fedldp writes, one object per line (nlohmann-json): the
// fields every record starts with, a configuration's fields, and a
// cross-validated FedSel run. Accuracies are in percent (base/units.h).
#ifndef FEDLDP_SIM_RECORDS_H_
#define FEDLDP_SIM_RECORDS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>

#include "fedldp/base/options.h"
#include "fedldp/data/dataset.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/privacy/privacy_record.h"
#include "fedldp/sim/cross_validation.h"

namespace fedldp {

// version (fedldp's) and accuracy_unit ("percent").
void StartRecord(nlohmann::ordered_json& j);

// A finite number, or null (an eps not computed, or infinite: none).
nlohmann::ordered_json FiniteOrNull(double v);

// The recorded options of a configuration (base/options.h), each under its
// record key, in the rows' order; None is null.
template <typename Config>
void AddConfigFields(nlohmann::ordered_json& j, std::span<const ConfigOption<Config>> options,
                     const Config& config) {
  for (const ConfigOption<Config>& o : options) {
    if (o.record.empty()) continue;
    std::visit(
        [&](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) {
            j[std::string(o.record)] = nullptr;
          } else {
            j[std::string(o.record)] = v;
          }
        },
        o.get(config));
  }
}

// The effective configuration of a FedSel run: variant, model,
// gradient_scaling, epsilon, epochs, lr, momentum, batch_fraction, lambda,
// clip, tail_average, shuffle, sample_clients, poisson_clients,
// random_allocation, clients (0: one per row), dirichlet_alpha,
// label_shards, server_optimizer, server_lr, server_beta1, server_beta2,
// server_tau (FedSelOptions' recorded rows, in their order).
void AddFedSelConfigFields(nlohmann::ordered_json& j, const FedSelConfig& config);

// A run's privacy (privacy/privacy_record.h), the one layout of every
// record's "privacy": {"mechanism", "local", "per_round", "total",
// "local_total", "rule", "rounds", "reports_per_round" (null: not shuffled),
// "sampling_rate", "allowance", "warning" (null: none), "arguments" (null:
// no `account run` states it), "floating_point"}, each guarantee as
// {"epsilon", "delta"} (an infinite epsilon as null). Null for a run
// without privacy (PrivacyJson(nullopt)).
nlohmann::ordered_json PrivacyJson(const std::optional<PrivacyRecord>& record);

// A cross-validated run of `config` on `data` (named `dataset`): the start
// fields, the data's shape, the configuration, the budget and plan of the
// last fold, the seed, the mean accuracies and per_fold (repeat, fold,
// accuracy, majority), and its privacy (PrivacyJson); nonprivate_mean is
// null when nullopt.
nlohmann::ordered_json CrossValidationRecord(const std::string& dataset, const Dataset& data,
                                             const FedSelConfig& config,
                                             const CrossValidationOptions& cv,
                                             const CrossValidationResult& result,
                                             std::optional<double> nonprivate_mean,
                                             const std::optional<PrivacyRecord>& privacy);

}  // namespace fedldp

#endif  // FEDLDP_SIM_RECORDS_H_
