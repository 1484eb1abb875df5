// 64-bit words in bytes, little-endian: the one home for the compact reports'
// byte layout (a seed, a projected report's values).
#ifndef FEDLDP_BASE_WORDS_H_
#define FEDLDP_BASE_WORDS_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fedldp {

inline void AppendWord(std::string& bytes, std::uint64_t word) {
  for (std::size_t i = 0; i < 8; ++i) {
    bytes.push_back(static_cast<char>(static_cast<std::uint8_t>(word >> (8 * i))));
  }
}

// The word at bytes[offset, offset + 8); the caller checks the length.
inline std::uint64_t ReadWord(std::string_view bytes, std::size_t offset) {
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    word |= std::uint64_t{static_cast<std::uint8_t>(bytes[offset + i])} << (8 * i);
  }
  return word;
}

inline void AppendDouble(std::string& bytes, double v) {
  AppendWord(bytes, std::bit_cast<std::uint64_t>(v));
}
inline double ReadDouble(std::string_view bytes, std::size_t offset) {
  return std::bit_cast<double>(ReadWord(bytes, offset));
}

}  // namespace fedldp

#endif  // FEDLDP_BASE_WORDS_H_
