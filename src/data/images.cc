// Image datasets: the CIFAR-10 binary loader and the standard train / test
// splits of MNIST, Fashion-MNIST and CIFAR-10 by name.
#include <zlib.h>

#include <array>
#include <cstdlib>

#include "fedldp/base/names.h"
#include "fedldp/data/loaders.h"
#include "line_reader.h"

#ifndef FEDLDP_DEFAULT_MNIST_DIR
#define FEDLDP_DEFAULT_MNIST_DIR "data/mnist"
#endif

namespace fedldp {

Result<Dataset> LoadCifar10(const std::vector<std::string>& paths, const LoadLimits& limits) {
  constexpr std::size_t kPixels = 3 * 32 * 32, kRecord = 1 + kPixels;
  if (paths.empty()) return Error{"CIFAR-10: no batch file given"};
  Dataset data;
  data.name = "cifar10";
  data.dimension = kPixels;
  data.classes = 10;
  std::array<unsigned char, kRecord> record;
  std::vector<float> row(kPixels);
  for (const auto& path : paths) {
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) return Error{path + ": cannot open"};
    for (std::size_t n = 1;; ++n) {
      const int got = gzread(file, record.data(), static_cast<unsigned>(kRecord));
      if (got == 0) break;
      if (got != static_cast<int>(kRecord)) {
        gzclose(file);
        return Error{path + ":" + std::to_string(n) + ": truncated record (" +
                     std::to_string(got < 0 ? 0 : got) + " of " + std::to_string(kRecord) +
                     " bytes)"};
      }
      if (record[0] > 9) {
        gzclose(file);
        return Error{path + ":" + std::to_string(n) + ": label " + std::to_string(record[0]) +
                     " is not a CIFAR-10 class (0-9)"};
      }
      if (Status e = internal::CheckSize(data.size() + 1, kPixels, limits); !e.ok()) {
        gzclose(file);
        return Error{path + ":" + std::to_string(n) + ": " + e.error()};
      }
      for (std::size_t i = 0; i < kPixels; ++i) row[i] = record[1 + i] / 255.0f;
      data.Append(row, record[0]);
    }
    gzclose(file);
  }
  if (data.size() == 0) return Error{"CIFAR-10: the batch files hold no record"};
  return data;
}

Result<Dataset> AveragePool(const Dataset& images, std::size_t factor) {
  const std::size_t d = images.dimension;
  std::size_t side = 0;
  while ((side + 1) * (side + 1) <= d) ++side;
  if (factor < 1) return Error{"the pooling factor must be at least 1"};
  if (side * side != d) {
    return Error{images.name + ": " + std::to_string(d) +
                 " features are not one square image, which pooling needs"};
  }
  if (side % factor != 0) {
    return Error{images.name + ": a side of " + std::to_string(side) +
                 " pixels is not a multiple of the pooling factor " + std::to_string(factor)};
  }
  const std::size_t out_side = side / factor;
  Dataset pooled;
  pooled.name = images.name;
  pooled.classes = images.classes;
  pooled.dimension = out_side * out_side;
  pooled.labels = images.labels;
  pooled.features.assign(images.size() * pooled.dimension, 0.0f);
  const float scale = 1.0f / static_cast<float>(factor * factor);
  for (std::size_t n = 0; n < images.size(); ++n) {
    const std::span<const float> in = images.row(n);
    float* out = pooled.features.data() + n * pooled.dimension;
    for (std::size_t r = 0; r < side; ++r) {
      for (std::size_t c = 0; c < side; ++c)
        out[(r / factor) * out_side + c / factor] += in[r * side + c];
    }
    for (std::size_t j = 0; j < pooled.dimension; ++j) out[j] *= scale;
  }
  return pooled;
}

std::string DefaultImageDir(const std::string& name) {
  if (name == "mnist") {
    const char* env = std::getenv("FEDLDP_MNIST_DIR");
    return env != nullptr && *env != '\0' ? env : FEDLDP_DEFAULT_MNIST_DIR;
  }
  if (name == "fmnist") return "/usr/share/datasets/fashion-mnist";
  return "";
}

Result<TrainTest> LoadIdxSplit(const std::string& d, const std::string& suffix) {
  auto train =
      LoadIdx(d + "train-images-idx3-ubyte" + suffix, d + "train-labels-idx1-ubyte" + suffix);
  if (!train.ok()) return Error{train.error()};
  auto test = LoadIdx(d + "t10k-images-idx3-ubyte" + suffix, d + "t10k-labels-idx1-ubyte" + suffix);
  if (!test.ok()) return Error{test.error()};
  return TrainTest{std::move(train).value(), std::move(test).value()};
}

Result<TrainTest> LoadCifar10Split(const std::string& d) {
  if (d.empty()) return Error{"cifar10: give the folder of the binary batches"};
  std::vector<std::string> batches;
  for (int i = 1; i <= 5; ++i) batches.push_back(d + "data_batch_" + std::to_string(i) + ".bin");
  auto train = LoadCifar10(batches);
  if (!train.ok()) return Error{train.error()};
  auto test = LoadCifar10({d + "test_batch.bin"});
  if (!test.ok()) return Error{test.error()};
  return TrainTest{std::move(train).value(), std::move(test).value()};
}

Result<TrainTest> LoadImageSplit(const std::string& name, const std::string& dir_in) {
  const DatasetKind* kind = FindDataset(name);
  if (kind == nullptr || !kind->image()) {
    return Error{"unknown image dataset '" + name + "' (" + Listed(DatasetNames(true), ", ") + ")"};
  }
  const std::string dir = dir_in.empty() ? DefaultImageDir(name) : dir_in;
  auto split = kind->split(dir.empty() || dir.back() == '/' ? dir : dir + "/");
  if (!split.ok()) {
    return Error{split.error() +
                 (name == "mnist" ? " (run scripts/setup.sh, or set FEDLDP_MNIST_DIR)" : "")};
  }
  split.value().train.name = name + "-train";
  split.value().test.name = name + "-test";
  return split;
}

}  // namespace fedldp
