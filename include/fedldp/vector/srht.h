// The subsampled randomized Hadamard transform (SRHT) of FastProjUnit.
//
// For d padded with zeros to d' = 2^ceil(log2 d):
//   W = sqrt(d' / k) S H D,
// D a diagonal of random signs, H the Walsh-Hadamard matrix scaled by
// 1 / sqrt(d') (so H D is orthogonal), S the selection of k distinct rows drawn
// uniformly. W W^T = (d' / k) I_k, and E[W^T W] = I_d over S. Forward (W x) and
// Backward (W^T y) cost O(d' log d').
#ifndef FEDLDP_VECTOR_SRHT_H_
#define FEDLDP_VECTOR_SRHT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fedldp/random/rng.h"

namespace fedldp {

// The Walsh-Hadamard transform of v in place, unnormalised (H_n with entries
// +-1; divide by sqrt(n) for the orthogonal one). v.size() is a power of two.
// Cache-blocked: blocks of 2048 in L1, then 8 columns at a time across them.
void WalshHadamardUnnormalised(std::span<double> v);

// Smallest power of two >= d.
std::size_t PaddedDimension(std::size_t d);

// The sign diagonal D: bit j of word j / 64 set means D_jj = -1.
using SignBits = std::vector<std::uint64_t>;
SignBits DrawSigns(std::size_t padded, Rng& rng);
// k distinct rows of [0, padded) in increasing order, each subset equally
// likely (Floyd's algorithm: min(k, padded - k) draws; past half, the rows
// left out are drawn).
std::vector<std::uint32_t> DrawRows(std::size_t padded, std::size_t k, Rng& rng);

class Srht {
 public:
  // `signs` has PaddedDimension(d) bits, `rows` k increasing entries < that.
  Srht(std::size_t d, const SignBits* signs, std::span<const std::uint32_t> rows);

  std::size_t dimension() const { return d_; }
  std::size_t padded() const { return padded_; }
  std::size_t k() const { return rows_.size(); }

  // y = W x (k entries); work holds padded() doubles.
  void Forward(std::span<const double> x, std::span<double> y, std::span<double> work) const;
  // x = W^T y (d entries); work holds padded() doubles.
  void Backward(std::span<const double> y, std::span<double> x, std::span<double> work) const;
  // work = H D x padded (orthogonal: ||H D x|| = ||x||), the first steps of Forward.
  void Rotate(std::span<const double> x, std::span<double> work) const;

 private:
  std::size_t d_, padded_;
  const SignBits* signs_;
  std::span<const std::uint32_t> rows_;
};

}  // namespace fedldp

#endif  // FEDLDP_VECTOR_SRHT_H_
