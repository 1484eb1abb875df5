#include "fedldp/vector/srht.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "fedldp/base/hot_loop.h"

namespace fedldp {
namespace {

constexpr std::size_t kBlock = 2048;  // doubles: 16 KiB, in L1
constexpr std::size_t kColumns = 8;   // doubles: one cache line

// Unnormalised WHT of each contiguous block of `block` doubles.
FEDLDP_HOT_LOOP
void BlockStages(double* v, std::size_t n, std::size_t block) {
  for (std::size_t base = 0; base < n; base += block) {
    double* b = v + base;
    for (std::size_t i = 0; i < block; i += 4) {  // stages h = 1, 2 together
      const double a0 = b[i], a1 = b[i + 1], a2 = b[i + 2], a3 = b[i + 3];
      const double s01 = a0 + a1, d01 = a0 - a1, s23 = a2 + a3, d23 = a2 - a3;
      b[i] = s01 + s23, b[i + 1] = d01 + d23, b[i + 2] = s01 - s23, b[i + 3] = d01 - d23;
    }
    for (std::size_t h = 4; h < block; h *= 2) {
      for (std::size_t i = 0; i < block; i += 2 * h) {
        double* x = b + i;
        double* y = b + i + h;
        for (std::size_t j = 0; j < h; ++j) {
          const double p = x[j], q = y[j];
          x[j] = p + q;
          y[j] = p - q;
        }
      }
    }
  }
}

// Unnormalised WHT along the rows of a rows x kColumns row-major buffer.
FEDLDP_HOT_LOOP
void RowStages(double* v, std::size_t rows) {
  for (std::size_t h = 1; h < rows; h *= 2) {
    for (std::size_t i = 0; i < rows; i += 2 * h) {
      for (std::size_t j = i; j < i + h; ++j) {
        double* x = v + j * kColumns;
        double* y = v + (j + h) * kColumns;
        for (std::size_t c = 0; c < kColumns; ++c) {
          const double p = x[c], q = y[c];
          x[c] = p + q;
          y[c] = p - q;
        }
      }
    }
  }
}

void SmallWht(double* v, std::size_t n) {
  for (std::size_t h = 1; h < n; h *= 2)
    for (std::size_t i = 0; i < n; i += 2 * h)
      for (std::size_t j = i; j < i + h; ++j) {
        const double p = v[j], q = v[j + h];
        v[j] = p + q;
        v[j + h] = p - q;
      }
}

}  // namespace

void WalshHadamardUnnormalised(std::span<double> v) {
  const std::size_t n = v.size();
  if (n < 2 * kBlock) {
    SmallWht(v.data(), n);
    return;
  }
  // H_n = H_{n / B} (x) H_B: the transform of each block, then of each column
  // of the (n / B) x B matrix the blocks form.
  BlockStages(v.data(), n, kBlock);
  const std::size_t rows = n / kBlock;
  std::vector<double> buffer(rows * kColumns);
  for (std::size_t c = 0; c < kBlock; c += kColumns) {
    for (std::size_t r = 0; r < rows; ++r)
      std::copy_n(v.data() + r * kBlock + c, kColumns, buffer.data() + r * kColumns);
    RowStages(buffer.data(), rows);
    for (std::size_t r = 0; r < rows; ++r)
      std::copy_n(buffer.data() + r * kColumns, kColumns, v.data() + r * kBlock + c);
  }
}

std::size_t PaddedDimension(std::size_t d) { return std::bit_ceil(std::max<std::size_t>(d, 1)); }

SignBits DrawSigns(std::size_t padded, Rng& rng) {
  SignBits bits((padded + 63) / 64);
  rng.Fill(bits);
  return bits;
}

std::vector<std::uint32_t> DrawRows(std::size_t padded, std::size_t k, Rng& rng) {
  // Floyd's algorithm draws a uniform subset of size s in s draws. When k is
  // more than half of padded (Adult: 123 of 128), the rows left out are the
  // smaller uniform subset: draw those and keep the complement.
  const bool complement = k > padded - k;
  const std::size_t s = complement ? padded - k : k;
  std::vector<std::uint64_t> chosen((padded + 63) / 64);
  const auto take = [&](std::uint64_t j) {
    const bool had = (chosen[j >> 6] >> (j & 63)) & 1;
    chosen[j >> 6] |= std::uint64_t{1} << (j & 63);
    return !had;
  };
  for (std::uint64_t j = padded - s; j < padded; ++j) {
    if (!take(UniformIndex(rng, j + 1))) take(j);
  }
  if (complement) {
    for (std::uint64_t& w : chosen) w = ~w;
    if (padded % 64 != 0) chosen.back() &= (std::uint64_t{1} << (padded % 64)) - 1;
  }
  std::vector<std::uint32_t> rows;
  rows.reserve(k);
  for (std::size_t w = 0; w < chosen.size(); ++w)
    for (std::uint64_t bits = chosen[w]; bits != 0; bits &= bits - 1)
      rows.push_back(static_cast<std::uint32_t>(w * 64 + std::countr_zero(bits)));
  return rows;
}

Srht::Srht(std::size_t d, const SignBits* signs, std::span<const std::uint32_t> rows)
    : d_(d), padded_(PaddedDimension(d)), signs_(signs), rows_(rows) {}

namespace {

// dst[j] = +-src[j] * scale, the sign from bit j of `signs` (set: minus).
FEDLDP_HOT_LOOP
void ApplySigns(const double* src, const std::uint64_t* signs, double scale, double* dst,
                std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    const double sign = 1.0 - 2.0 * static_cast<double>((signs[j >> 6] >> (j & 63)) & 1);
    dst[j] = sign * src[j] * scale;
  }
}

}  // namespace

void Srht::Rotate(std::span<const double> x, std::span<double> work) const {
  const double scale = 1 / std::sqrt(static_cast<double>(padded_));
  ApplySigns(x.data(), signs_->data(), scale, work.data(), d_);
  std::fill(work.begin() + static_cast<std::ptrdiff_t>(d_),
            work.begin() + static_cast<std::ptrdiff_t>(padded_), 0.0);
  WalshHadamardUnnormalised(work.first(padded_));
}

void Srht::Forward(std::span<const double> x, std::span<double> y, std::span<double> work) const {
  Rotate(x, work);
  const double scale = std::sqrt(static_cast<double>(padded_) / static_cast<double>(k()));
  for (std::size_t i = 0; i < rows_.size(); ++i) y[i] = scale * work[rows_[i]];
}

void Srht::Backward(std::span<const double> y, std::span<double> x, std::span<double> work) const {
  // W^T y = D H^T S^T y sqrt(d' / k); H is symmetric, 1 / sqrt(d') folded in.
  std::fill(work.begin(), work.begin() + static_cast<std::ptrdiff_t>(padded_), 0.0);
  const double scale = 1 / std::sqrt(static_cast<double>(k()));
  for (std::size_t i = 0; i < rows_.size(); ++i) work[rows_[i]] = scale * y[i];
  WalshHadamardUnnormalised(work.first(padded_));
  ApplySigns(work.data(), signs_->data(), 1.0, x.data(), d_);
}

}  // namespace fedldp
