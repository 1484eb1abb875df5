#include <cstdlib>

#include "fedldp/data/loaders.h"
#include "fedldp/data/synthetic.h"

#ifndef FEDLDP_DEFAULT_DATA_DIR
#define FEDLDP_DEFAULT_DATA_DIR "data"
#endif

namespace fedldp {

std::string DefaultDataDir() {
  const char* env = std::getenv("FEDLDP_DATA_DIR");
  return env != nullptr && *env != '\0' ? env : FEDLDP_DEFAULT_DATA_DIR;
}

Result<Dataset> LoadNamed(const std::string& name, const std::string& dir_in) {
  const std::string dir = dir_in.empty() ? DefaultDataDir() : dir_in;
  const std::string d = dir.back() == '/' ? dir : dir + "/";
  Result<Dataset> data = Error{""};
  if (name == "adult") {
    data = LoadAdult({d + "adult.data.gz", d + "adult.test.gz"});
  } else if (name == "adult-train") {
    data = LoadAdult({d + "adult.data.gz"});
  } else if (name == "adult-test") {
    data = LoadAdult({d + "adult.test.gz"});
  } else if (name == "a9a") {
    data = LoadLibsvm(d + "a9a.gz", 123);
  } else if (name == "a9a-test") {
    data = LoadLibsvm(d + "a9a.t.gz", 123);
  } else if (name == "bank") {
    data = LoadBank(d + "bank-full.csv.gz");
  } else if (name == "kdd") {
    data = LoadKdd({d + "kddcup.data_10_percent.gz"}, 70000);
  } else if (name == "kdd-full") {
    data = LoadKdd({d + "kddcup.data_10_percent.gz"});
  } else if (name.rfind("syn-", 0) == 0) {
    auto options = ParseSyntheticName(name);
    if (!options.ok()) return Error{options.error()};
    data = MakeSynthetic(*options);
  } else {
    return Error{"unknown dataset '" + name +
                 "' (adult, adult-train, adult-test, a9a, a9a-test, bank, kdd, kdd-full, "
                 "syn-L-C1-C2, syn-H-C1-C2)"};
  }
  if (data.ok()) data.value().name = name;
  return data;
}

}  // namespace fedldp
