// A task's configuration on the wire (fedldp.v1.TaskOption): every row a
// deployment serves (ConfigOption::deployed), by key, as the library
// describes it. The task keeps no field list of its own: a client sets
// the same rows on the same starting configuration and so rebuilds the
// server's exactly (a double travels as its bits).
#ifndef FEDLDP_NET_TASK_OPTIONS_H_
#define FEDLDP_NET_TASK_OPTIONS_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/base/options.h"
#include "fedldp/v1/service.pb.h"

namespace fedldp::net_internal {

using TaskOptions = google::protobuf::RepeatedPtrField<v1::TaskOption>;

template <typename Config>
void WriteTaskOptions(std::span<const ConfigOption<Config>> options, const Config& config,
                      TaskOptions& out) {
  for (const auto& o : options) {
    if (!o.deployed) continue;
    v1::TaskOption& option = *out.Add();
    option.set_key(std::string(o.key));
    std::visit(
        [&option](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            option.set_flag(v);
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            option.set_integer(v);
          } else if constexpr (std::is_same_v<T, double>) {
            option.set_number(v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            option.set_text(v);
          }
        },
        o.get(config));
  }
}

// Sets the options `in` carries on `config`; an option no deployed row
// has, or a value its row refuses, is an error naming it.
template <typename Config>
Status ReadTaskOptions(std::span<const ConfigOption<Config>> options, const TaskOptions& in,
                       Config& config) {
  std::vector<std::pair<std::string, OptionValue>> given;
  for (const v1::TaskOption& option : in) {
    const ConfigOption<Config>* row = FindOption(options, option.key());
    if (row == nullptr || !row->deployed) {
      return Error{"the announced task has an option this client does not know: '" + option.key() +
                   "'"};
    }
    switch (option.value_case()) {
      case v1::TaskOption::kFlag:
        given.emplace_back(option.key(), option.flag());
        break;
      case v1::TaskOption::kInteger:
        given.emplace_back(option.key(), option.integer());
        break;
      case v1::TaskOption::kNumber:
        given.emplace_back(option.key(), option.number());
        break;
      case v1::TaskOption::kText:
        given.emplace_back(option.key(), option.text());
        break;
      default:
        given.emplace_back(option.key(), std::monostate{});
    }
  }
  if (Status s = SetOptions(options, given, config); !s.ok()) {
    return Error{"the announced task: " + s.error()};
  }
  return {};
}

}  // namespace fedldp::net_internal

#endif  // FEDLDP_NET_TASK_OPTIONS_H_
