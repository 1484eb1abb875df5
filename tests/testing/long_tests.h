// Tests whose workload is an experiment (minutes of CPU: several whole
// trainings to hold a mean) run only when FEDLDP_LONG_TESTS is set to
// something other than 0; CI leaves them out (docs/testing.md lists them).
#ifndef FEDLDP_TESTS_TESTING_LONG_TESTS_H_
#define FEDLDP_TESTS_TESTING_LONG_TESTS_H_

#include <cstdlib>
#include <string_view>

namespace fedldp::testing {

inline bool LongTests() {
  const char* v = std::getenv("FEDLDP_LONG_TESTS");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

inline constexpr char kLongTestsSkipped[] = "a long test: set FEDLDP_LONG_TESTS=1 to run it";

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_LONG_TESTS_H_
