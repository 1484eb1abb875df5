// The server optimiser's options (fl/server_optimizer.h), described once
// for every configuration that holds a ServerOptimizerConfig: LDP-FL's and
// FedSel's tables both take these rows, so the flags, Python keywords,
// record keys and refusals are the same in both.
#ifndef FEDLDP_FL_SERVER_OPTIONS_H_
#define FEDLDP_FL_SERVER_OPTIONS_H_

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fedldp/base/options.h"
#include "fedldp/fl/server_optimizer.h"

namespace fedldp {

namespace server_options_internal {

// A row of the field `field` of the server optimiser at `part`, given
// only for the optimisers `kinds` (all when empty); recorded under `key`.
template <typename Config, typename T>
ConfigOption<Config> PartRow(std::string_view key, std::string_view flag, std::string_view help,
                             ServerOptimizerConfig Config::*part, T ServerOptimizerConfig::*field,
                             std::vector<ServerOptimizerKind> kinds, std::string refusal) {
  ConfigOption<Config> row{key, flag, key, help, {}, {}, {}, false, {}, {}};
  row.set = [=, set = SetField(field)](Config& c, const OptionValue& v) { return set(c.*part, v); };
  row.get = [=, get = GetField(field)](const Config& c) { return get(c.*part); };
  if (!kinds.empty()) {
    row.applies = [=](const Config& c) -> Status {
      if (std::find(kinds.begin(), kinds.end(), (c.*part).kind) != kinds.end()) return {};
      return Error{refusal};
    };
  }
  return row;
}

}  // namespace server_options_internal

// server_optimizer, server_lr, server_beta1, server_beta2 and server_tau
// (flags with dashes, records under the keys) of the optimiser at `part`.
template <typename Config>
std::vector<ConfigOption<Config>> ServerOptimizerOptions(ServerOptimizerConfig Config::*part) {
  using server_options_internal::PartRow;
  using S = ServerOptimizerConfig;
  using enum ServerOptimizerKind;
  std::vector<ServerOptimizerKind> kinds;
  for (std::size_t i = 0; i < ServerOptimizerNames().size(); ++i) {
    kinds.push_back(static_cast<ServerOptimizerKind>(i));
  }
  ConfigOption<Config> choice = PartRow<Config>(
      "server_optimizer", "server-optimizer",
      "The server's step on each round's estimate (Reddi et al. 2021): fedavg (lr 1: the "
      "estimate), momentum (FedAvgM), adam or yogi",
      part, &S::kind, {}, {});
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  auto accessors = ChoiceField(&S::kind, ServerOptimizerNames(), kinds);
  choice.set = [=, set = std::move(accessors.first)](Config& c, const OptionValue& v) {
    return set(c.*part, v);
  };
  choice.get = [=, get = std::move(accessors.second)](const Config& c) { return get(c.*part); };
  choice.choices = ServerOptimizerNames();
  return {
      std::move(choice),
      PartRow<Config>("server_lr", "server-lr", "The server optimiser's learning rate", part,
                      &S::learning_rate, {}, {}),
      PartRow<Config>("server_beta1", "server-beta1",
                      "Momentum's factor; Adam's and Yogi's first-moment decay", part, &S::beta1,
                      {kMomentum, kAdam, kYogi},
                      "server_beta1 applies to momentum, adam and yogi only"),
      PartRow<Config>("server_beta2", "server-beta2", "Adam's and Yogi's second-moment decay", part,
                      &S::beta2, {kAdam, kYogi}, "server_beta2 applies to adam and yogi only"),
      PartRow<Config>("server_tau", "server-tau",
                      "Adam's and Yogi's adaptivity tau (and sqrt of v's start)", part, &S::tau,
                      {kAdam, kYogi}, "server_tau applies to adam and yogi only")};
}

}  // namespace fedldp

#endif  // FEDLDP_FL_SERVER_OPTIONS_H_
