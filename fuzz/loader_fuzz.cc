// libFuzzer target: arbitrary bytes as a data file for every loader (LIBSVM
// in both label modes, with and without a fixed dimension; UCI Adult, Bank
// Marketing and KDD Cup 99; IDX images and labels; CIFAR-10 batches), plain
// or gzip (zlib reads both; a fuzzed gzip header is one more input). Beyond
// "no crash, no sanitizer report, no allocation over the fuzzer's limit",
// every accepted file must give a consistent dataset within the limits:
// features.size() == rows x dimension, finite features, labels in
// [0, classes).
//
// The first byte picks the loader; IDX takes two files, split where the next
// two bytes say. Limits are small (a 64 MiB dataset at most), so a file that
// asks for much is refused quickly instead of slowing the fuzzer down.
//
// FEDLDP_FUZZ_WRITE_SEEDS=DIR writes a small valid file for each loader into
// DIR as a starting corpus, then exits.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fedldp/data/loaders.h"
#include "fuzz_util.h"

namespace {

using namespace fedldp;

constexpr LoadLimits kLimits{
    .max_dimension = 1 << 16, .max_cells = 1 << 24, .max_line_bytes = 1 << 16};

using fuzz::Require;

// A file in memory with a path the loaders can open.
class MemoryFile {
 public:
  explicit MemoryFile(const std::uint8_t* data, std::size_t size)
      : fd_(memfd_create("loader_fuzz", 0)) {
    Require(fd_ >= 0, "memfd_create");
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = write(fd_, data + done, size - done);
      Require(n > 0, "write to the memory file");
      done += static_cast<std::size_t>(n);
    }
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

void CheckDataset(const Result<Dataset>& loaded) {
  if (!loaded.ok()) {
    Require(!loaded.error().empty(), "a refusal says why");
    return;
  }
  const Dataset& d = *loaded;
  Require(d.size() > 0, "an accepted file has rows");
  Require(d.dimension <= kLimits.max_dimension, "dimension within the limit");
  Require(d.features.size() == d.size() * d.dimension, "features = rows x dimension");
  Require(d.features.size() <= kLimits.max_cells, "features within the limit");
  Require(d.classes >= 2, "at least two classes");
  for (float v : d.features) Require(std::isfinite(v), "finite features");
  for (int y : d.labels) Require(y >= 0 && y < d.classes, "labels in [0, classes)");
}

void WriteSeeds(const std::string& dir) {
  auto write = [&](const std::string& name, char loader, const std::string& body) {
    std::ofstream(dir + "/" + name, std::ios::binary) << loader << body;
  };
  write("libsvm", 0, "+1 1:0.5 3:-1\n-1 2:1\n0 3:0.25\n");
  write("libsvm-classes", 1, "3 1:1\n7 2:2\n");
  write("libsvm-123", 2, "-1 5:1 123:1\n+1 1:1\n");
  write("adult", 3,
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
        "White, Male, 2174, 0, 40, United-States, <=50K\n"
        "50, ?, 83311, HS-grad, 9, Divorced, ?, Husband, Black, Female, 0, 0, 13, ?, >50K.\n");
  write("bank", 4,
        "age;job;marital;education;default;balance;housing;loan;contact;day;month;duration;"
        "campaign;pdays;previous;poutcome;y\n"
        "58;management;married;tertiary;no;2143;yes;no;unknown;5;may;261;1;-1;0;unknown;no\n"
        "44;technician;single;secondary;no;29;yes;no;unknown;5;may;151;1;-1;0;unknown;yes\n");
  write("kdd", 5,
        "0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,1.00,"
        "0.00,0.00,9,9,1.00,0.00,0.11,0.00,0.00,0.00,0.00,0.00,normal.\n"
        "0,icmp,ecr_i,SF,1032,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,511,511,0.00,0.00,0.00,0.00,"
        "1.00,0.00,0.00,255,255,1.00,0.00,1.00,0.00,0.00,0.00,0.00,0.00,smurf.\n");
  // IDX: two 2 x 2 images and their labels; the split after 16 + 8 bytes.
  const std::string images = std::string("\0\0\x08\x03\0\0\0\x02\0\0\0\x02\0\0\0\x02", 16) +
                             std::string("\x00\xff\x33\x66\x00\x00\x00\xff", 8);
  const std::string labels = std::string("\0\0\x08\x01\0\0\0\x02\x07\x03", 10);
  write("idx", 6, std::string("\0\x18", 2) + images + labels);
  std::string cifar(2 * 3073, '\x10');
  cifar[0] = 3, cifar[3073] = 9;
  write("cifar", 7, cifar);
  write("csv", 8, "a,b,label\n0.5,-1,yes\n\"1\",0.25,no\n");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::WriteSeedsIfAsked(WriteSeeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t loader = data[0] % 9;
  ++data, --size;
  if (loader == 6) {  // IDX: two files
    if (size < 2) return 0;
    const std::size_t split = std::min<std::size_t>((data[0] << 8) | data[1], size - 2);
    MemoryFile images(data + 2, split), labels(data + 2 + split, size - 2 - split);
    CheckDataset(LoadIdx(images.path(), labels.path(), kLimits));
    return 0;
  }
  MemoryFile file(data, size);
  const std::string path = file.path();
  switch (loader) {
    case 0:
      CheckDataset(LoadLibsvm(path, 0, FileLabels::kRanked, kLimits));
      break;
    case 1:
      CheckDataset(LoadLibsvm(path, 0, FileLabels::kShare, kLimits));
      break;
    case 2:
      CheckDataset(LoadLibsvm(path, 123, FileLabels::kRanked, kLimits));
      break;
    case 3:
      CheckDataset(LoadAdult({path}, kLimits));
      break;
    case 4:
      CheckDataset(LoadBank(path, kLimits));
      break;
    case 5:
      CheckDataset(LoadKdd({path}, std::nullopt, 1999, kLimits));
      CheckDataset(LoadKdd({path}, 1, 7, kLimits));
      break;
    case 8:
      CheckDataset(LoadCsv(path, "", kLimits));
      CheckDataset(LoadCsv(path, "0", kLimits));
      break;
    default:
      CheckDataset(LoadCifar10({path}, kLimits));
      break;
  }
  return 0;
}
