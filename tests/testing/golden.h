// Recorded outputs (issue 40, item 5): a refactor must leave what fedldp
// computes as it was. Outputs are hashed (FNV-1a) after removing what varies
// from run to run or machine to machine (times, thread counts, the
// version); a table of hashes sits beside each test, re-printed for the
// code as it is with FEDLDP_GOLDEN_PRINT=1 (a change of law or draw order
// is argued in its own commit, and the table re-recorded there).
#ifndef FEDLDP_TESTS_TESTING_GOLDEN_H_
#define FEDLDP_TESTS_TESTING_GOLDEN_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fedldp::testing {

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;

// FNV-1a over bytes, continuing from h.
inline std::uint64_t Fnv1a(std::string_view bytes, std::uint64_t h = kFnvOffset) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Over the bytes of doubles as they lie in memory (little-endian here).
inline std::uint64_t Fnv1a(std::span<const double> values) {
  return Fnv1a({reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double)});
}

inline bool PrintingGolden() { return std::getenv("FEDLDP_GOLDEN_PRINT") != nullptr; }

// `text` without what is not a result: lines with "time:" or "updates/s",
// "N threads" (the machine's cores), and in JSON lines the keys "seconds",
// "version" and "processes".
inline std::string Normalized(const std::string& text) {
  static const std::regex threads(", [0-9]+ threads?");
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.find("time:") != std::string::npos || line.find("updates/s") != std::string::npos) {
      continue;
    }
    if (line.starts_with("{")) {
      auto j = nlohmann::ordered_json::parse(line);
      for (const char* key : {"seconds", "version", "processes"}) j.erase(key);
      line = j.dump();
    }
    out += std::regex_replace(line, threads, "") + "\n";
  }
  return out;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `text`'s lines in sorted order: records appended by parallel runs as
// each finishes.
inline std::string SortedLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// The files of `dir` whose names end in one of `suffixes`, in name order,
// normalized (a .jsonl's lines sorted) and hashed with their names.
inline std::uint64_t HashOutputs(const std::string& dir, std::vector<std::string> suffixes) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    for (const auto& s : suffixes) {
      if (name.ends_with(s)) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  std::uint64_t h = kFnvOffset;
  for (const auto& name : names) {
    std::string text = Normalized(ReadFile(dir + "/" + name));
    if (name.ends_with(".jsonl")) text = SortedLines(text);
    h = Fnv1a(name + "\n" + text, h);
  }
  return h;
}

// `hash` must be `recorded`; under FEDLDP_GOLDEN_PRINT it is printed instead.
inline void ExpectRecorded(const std::string& what, std::uint64_t hash, std::uint64_t recorded) {
  if (PrintingGolden()) {
    std::printf("golden %s: 0x%016llxULL\n", what.c_str(), static_cast<unsigned long long>(hash));
    return;
  }
  EXPECT_EQ(hash, recorded) << what << " changed: now 0x" << std::hex << hash;
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_GOLDEN_H_
