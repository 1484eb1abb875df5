// IDX files (LeCun's MNIST format, also Fashion-MNIST), plain or gzip.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "fedldp/data/loaders.h"
#include "line_reader.h"

namespace fedldp {
namespace {

struct IdxFile {
  std::vector<std::uint32_t> shape;
  std::vector<unsigned char> data;
};

// `rank` dimensions: the first counts the items, the rest make one item.
Result<IdxFile> ReadIdx(const std::string& path, unsigned char type, std::size_t rank,
                        const LoadLimits& limits) {
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Error{path + ": cannot open (" + (errno ? std::strerror(errno) : "zlib") + ")"};
  }
  auto fail = [&](const std::string& reason) {
    gzclose(file);
    return Error{path + ": " + reason};
  };
  std::array<unsigned char, 4> magic{};
  if (gzread(file, magic.data(), 4) != 4) return fail("too short for an IDX header");
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != type || magic[3] != rank) {
    return fail("not an IDX file of unsigned bytes with " + std::to_string(rank) + " dimensions");
  }
  IdxFile idx;
  std::size_t item = 1;  // bytes per item; at most 2^64 / 2^32 before the check below
  for (std::size_t i = 0; i < rank; ++i) {
    std::array<unsigned char, 4> b{};
    if (gzread(file, b.data(), 4) != 4) return fail("truncated header");
    idx.shape.push_back((std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                        (std::uint32_t{b[2]} << 8) | b[3]);
    if (i > 0) {
      if (Status e = internal::CheckSize(1, item * idx.shape.back(), limits); !e.ok()) {
        return fail(e.error());
      }
      item *= idx.shape.back();
    }
  }
  if (Status e = internal::CheckSize(idx.shape[0], item, limits); !e.ok()) return fail(e.error());
  // Read in bounded chunks, so a header that promises more than the file
  // holds costs no more memory than the file.
  const std::size_t total = idx.shape[0] * item;
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  while (idx.data.size() < total) {
    const std::size_t want = std::min(kChunk, total - idx.data.size());
    const std::size_t have = idx.data.size();
    idx.data.resize(have + want);
    if (gzread(file, idx.data.data() + have, static_cast<unsigned>(want)) !=
        static_cast<int>(want)) {
      return fail("truncated data: expected " + std::to_string(total) + " bytes");
    }
  }
  unsigned char extra;
  if (gzread(file, &extra, 1) != 0) return fail("trailing bytes after the data");
  gzclose(file);
  return idx;
}

}  // namespace

Result<Dataset> LoadIdx(const std::string& images_path, const std::string& labels_path,
                        const LoadLimits& limits) {
  auto images = ReadIdx(images_path, 0x08, 3, limits);
  if (!images.ok()) return Error{images.error()};
  auto labels = ReadIdx(labels_path, 0x08, 1, limits);
  if (!labels.ok()) return Error{labels.error()};
  if (images->shape[0] != labels->shape[0]) {
    return Error{images_path + " has " + std::to_string(images->shape[0]) + " images but " +
                 labels_path + " has " + std::to_string(labels->shape[0]) + " labels"};
  }
  Dataset data;
  data.name = images_path;
  data.dimension = std::size_t{images->shape[1]} * images->shape[2];
  data.classes = 10;
  data.features.resize(images->data.size());
  for (std::size_t i = 0; i < images->data.size(); ++i) data.features[i] = images->data[i] / 255.0f;
  for (unsigned char y : labels->data) {
    if (y > 9) return Error{labels_path + ": label " + std::to_string(y) + " is not a digit 0-9"};
    data.labels.push_back(y);
  }
  return data;
}

}  // namespace fedldp
