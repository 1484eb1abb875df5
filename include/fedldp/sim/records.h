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
#include "fedldp/sim/cross_validation.h"

namespace fedldp {

// version (fedldp's) and accuracy_unit ("percent").
void StartRecord(nlohmann::ordered_json& j);

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
// clip, tail_average, shuffle, sample_clients, clients (0: one per row),
// dirichlet_alpha.
void AddFedSelConfigFields(nlohmann::ordered_json& j, const FedSelConfig& config);

// A cross-validated run of `config` on `data` (named `dataset`): the start
// fields, the data's shape, the configuration, the budget and plan of the
// last fold, the seed, the mean accuracies and per_fold (repeat, fold,
// accuracy, majority); nonprivate_mean is null when nullopt.
nlohmann::ordered_json CrossValidationRecord(const std::string& dataset, const Dataset& data,
                                             const FedSelConfig& config,
                                             const CrossValidationOptions& cv,
                                             const CrossValidationResult& result,
                                             std::optional<double> nonprivate_mean);

}  // namespace fedldp

#endif  // FEDLDP_SIM_RECORDS_H_
