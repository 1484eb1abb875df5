// A record's "privacy" read back: the one layout sim/records.h's PrivacyJson
// writes (its keys are taken from PrivacyJson itself, not listed again),
// each guarantee {"epsilon", "delta"} with delta in [0, 1], the claim at
// most the local composition, and the statement's texts present.
#ifndef FEDLDP_TESTING_PRIVACY_RECORD_H_
#define FEDLDP_TESTING_PRIVACY_RECORD_H_

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fedldp/sim/records.h"

namespace fedldp::testing {

inline std::set<std::string> KeysOf(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.insert(key);
  return keys;
}

inline ::testing::AssertionResult IsPrivacyRecord(const nlohmann::json& p) {
  const auto layout = nlohmann::json::parse(PrivacyJson(PrivacyRecord{}).dump());
  if (!p.is_object() || KeysOf(p) != KeysOf(layout)) {
    return ::testing::AssertionFailure() << "not the privacy record's layout: " << p.dump();
  }
  for (const char* g : {"local", "per_round", "total", "local_total"}) {
    const auto& v = p[g];
    if (!v.is_object() || KeysOf(v) != std::set<std::string>{"epsilon", "delta"} ||
        !(v["epsilon"].is_number() || v["epsilon"].is_null()) || !v["delta"].is_number() ||
        v["delta"].get<double>() < 0 || v["delta"].get<double>() > 1) {
      return ::testing::AssertionFailure() << g << " is not a guarantee: " << p.dump();
    }
  }
  // (Sampled, a client's reports are counted by their expectation locally.)
  if (p["sampling_rate"] == 1.0 && p["total"]["epsilon"].is_number() &&
      p["local_total"]["epsilon"].is_number() &&
      p["total"]["epsilon"].get<double>() >
          p["local_total"]["epsilon"].get<double>() * (1 + 1e-9)) {
    return ::testing::AssertionFailure() << "the claim exceeds the local composition: " << p.dump();
  }
  if (!p["rule"].is_string() || p["rule"].get<std::string>().empty() ||
      !p["mechanism"].is_string() || !p["floating_point"].is_string() ||
      p["floating_point"].get<std::string>().rfind("floating point", 0) != 0) {
    return ::testing::AssertionFailure() << "a statement's text is missing: " << p.dump();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTING_PRIVACY_RECORD_H_
