#include "fedldp/base/options.h"

#include <charconv>
#include <cmath>

namespace fedldp {
namespace {

std::string_view KindOf(const OptionValue& value) {
  switch (value.index()) {
    case 0:
      return "None";
    case 1:
      return "a flag";
    case 2:
      return "an integer";
    case 3:
      return "a number";
    default:
      return "text";
  }
}

// The text a number is read from: all of it, past a leading '+'.
std::pair<const char*, const char*> Digits(const std::string& text) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  return {begin, end};
}

}  // namespace

Result<double> OptionNumber(const OptionValue& value) {
  if (const auto* n = std::get_if<double>(&value)) return *n;
  if (const auto* n = std::get_if<std::int64_t>(&value)) return static_cast<double>(*n);
  if (const auto* text = std::get_if<std::string>(&value)) {
    double out = 0;
    const auto [begin, end] = Digits(*text);
    const auto [ptr, ec] = std::from_chars(begin, end, out);
    if (ec == std::errc() && ptr == end && begin != end) return out;
    return Error{"'" + *text + "' is not a number"};
  }
  return Error{"a number is needed, not " + std::string(KindOf(value))};
}

Result<std::int64_t> OptionInteger(const OptionValue& value) {
  if (const auto* n = std::get_if<std::int64_t>(&value)) return *n;
  if (const auto* text = std::get_if<std::string>(&value)) {
    std::int64_t out = 0;
    const auto [begin, end] = Digits(*text);
    const auto [ptr, ec] = std::from_chars(begin, end, out);
    if (ec == std::errc() && ptr == end && begin != end) return out;
    return Error{"'" + *text + "' is not an integer"};
  }
  return Error{"an integer is needed, not " + std::string(KindOf(value))};
}

Result<bool> OptionFlag(const OptionValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b;
  if (const auto* text = std::get_if<std::string>(&value)) {
    if (*text == "true" || *text == "1") return true;
    if (*text == "false" || *text == "0") return false;
    return Error{"'" + *text + "' is not true or false"};
  }
  return Error{"true or false is needed, not " + std::string(KindOf(value))};
}

Result<std::string> OptionText(const OptionValue& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  return Error{"text is needed, not " + std::string(KindOf(value))};
}

std::string OptionString(const OptionValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else {  // the shortest text that reads back as the same value
          char text[32];
          const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
          return std::string(text, end);
        }
      },
      value);
}

}  // namespace fedldp
