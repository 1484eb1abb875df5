// Enums named by strings at the edges (CLI, Python, wire, JSON): one table
// per enum gives both directions and the list of names, e.g.
//   constexpr EnumName<SelectorKind> kNames[] = {{SelectorKind::kPs, "ps"}, ...};
//   NameIn(kNames, SelectorKind::kPs) == "ps"
//   ParseIn(kNames, "ps", "selector") -> SelectorKind::kPs, or an Error that
//   lists the names.
#ifndef FEDLDP_BASE_NAMES_H_
#define FEDLDP_BASE_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"

namespace fedldp {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `value` ("?" if the table lacks it).
template <class E, std::size_t N>
std::string_view NameIn(const EnumName<E> (&table)[N], E value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

template <class E, std::size_t N>
std::vector<std::string> NamesIn(const EnumName<E> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.name);
  return names;
}

// "a, b and c" (`last` joins the last two).
inline std::string Listed(const std::vector<std::string>& names, std::string_view last = " and ") {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? std::string(last) : ", ") + names[i];
  }
  return out;
}

// The value named `name` exactly, or "unknown <what> '<name>' (expected a, b
// or c)".
template <class E, std::size_t N>
Result<E> ParseIn(const EnumName<E> (&table)[N], std::string_view name, std::string_view what) {
  for (const auto& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return Error{"unknown " + std::string(what) + " '" + std::string(name) + "' (expected " +
               Listed(NamesIn(table), " or ") + ")"};
}

}  // namespace fedldp

#endif  // FEDLDP_BASE_NAMES_H_
