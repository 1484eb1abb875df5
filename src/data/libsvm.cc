#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "fedldp/data/loaders.h"
#include "line_reader.h"

namespace fedldp {

namespace {

struct LibsvmRow {
  long label;
  std::vector<std::pair<std::size_t, float>> entries;  // (0-based index, value)
};

// A line's label: an integer (at most 2^53, the doubles that are exact
// integers and fit a long); a class number (0 to 65535, -1 for 0) if
// `labels` says so.
Result<long> ParseLibsvmLabel(const std::string& token, FileLabels labels,
                              const internal::LineReader& in) {
  const auto label = internal::ParseNumber(token);
  if (!label || std::fabs(*label) > 9007199254740992.0 || *label != std::trunc(*label)) {
    return Error{in.Where("label '" + token + "' is not an integer (at most 2^53 in size)")};
  }
  long value = static_cast<long>(*label);
  if (labels == FileLabels::kShare) {
    if (value == -1) value = 0;
    if (value < 0 || value > 65535) {
      return Error{in.Where("label '" + token + "' is not a class number (0 to 65535)")};
    }
  }
  return value;
}

// One index:value token; its index (1-based in the file) above `previous`.
Result<std::pair<std::size_t, float>> ParseLibsvmEntry(const std::string& token,
                                                       std::size_t previous, std::size_t dimension,
                                                       const LoadLimits& limits,
                                                       const internal::LineReader& in) {
  const auto colon = token.find(':');
  if (colon == std::string::npos) return Error{in.Where("'" + token + "' is not index:value")};
  std::size_t index = 0;
  const auto [ptr, ec] = std::from_chars(token.data(), token.data() + colon, index);
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && ptr == token.data() + colon && index > limits.max_dimension)) {
    return Error{in.Where("index in '" + token + "' exceeds the largest dimension a loader " +
                          "accepts (" + std::to_string(limits.max_dimension) + ")")};
  }
  if (ec != std::errc() || ptr != token.data() + colon || index == 0) {
    return Error{in.Where("index in '" + token + "' must be an integer >= 1")};
  }
  if (index <= previous) return Error{in.Where("indices must increase, '" + token + "' does not")};
  const auto value = internal::ParseFloat(token.substr(colon + 1));
  if (!value) {
    return Error{in.Where("value in '" + token + "' is not a finite number a float holds")};
  }
  if (dimension != 0 && index > dimension) {
    return Error{in.Where("index " + std::to_string(index) + " exceeds the dimension " +
                          std::to_string(dimension))};
  }
  return std::pair<std::size_t, float>{index, *value};
}

// The rows as a dataset. kRanked: {-1, +1} or {0, 1} -> {0, 1}; otherwise
// ranks of the sorted values. kShare: each label is its class. Classes are
// named by their label (binary: "0" and "1"; a share: every class number).
Dataset LibsvmDataset(const std::string& path, std::size_t dimension,
                      const std::vector<LibsvmRow>& rows, FileLabels labels) {
  Dataset data;
  data.name = path;
  data.dimension = dimension;
  std::map<long, int> classes;
  for (const auto& r : rows) classes.emplace(r.label, 0);
  if (labels == FileLabels::kShare) {
    for (auto& [label, cls] : classes) cls = static_cast<int>(label);
    data.classes = std::max(2, static_cast<int>(classes.rbegin()->first) + 1);
    for (int c = 0; c < data.classes; ++c) data.class_names.push_back(std::to_string(c));
  } else {
    const bool binary = std::all_of(classes.begin(), classes.end(), [](const auto& c) {
      return c.first == -1 || c.first == 0 || c.first == 1;
    });
    int next = 0;
    for (auto& [label, cls] : classes) {
      cls = binary ? (label == 1 ? 1 : 0) : next++;
      if (!binary) data.class_names.push_back(std::to_string(label));
    }
    data.classes = binary ? 2 : std::max(2, next);  // one label value: still two classes
    if (binary) data.class_names = {"0", "1"};
    if (data.class_names.size() < 2) data.class_names.push_back("(none)");
  }
  data.features.assign(rows.size() * data.dimension, 0.0f);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (const auto& [j, v] : rows[i].entries) data.features[i * data.dimension + j] = v;
    data.labels.push_back(classes.at(rows[i].label));
  }
  return data;
}

}  // namespace

Result<Dataset> LoadLibsvm(const std::string& path, std::size_t dimension, FileLabels labels,
                           const LoadLimits& limits) {
  if (Status e = internal::CheckSize(1, dimension, limits); !e.ok())
    return Error{path + ": " + e.error()};
  internal::LineReader in(path, limits.max_line_bytes);
  if (!in.open_status().ok()) return in.open_status();
  std::vector<LibsvmRow> rows;
  std::size_t max_index = 0;
  while (auto line = in.Next()) {
    std::istringstream tokens(*line);
    std::string token;
    if (!(tokens >> token)) continue;  // blank line
    LibsvmRow row{};
    FEDLDP_ASSIGN_OR_RETURN(row.label, ParseLibsvmLabel(token, labels, in));
    std::size_t previous = 0;
    while (tokens >> token) {
      FEDLDP_ASSIGN_OR_RETURN(const auto entry,
                              ParseLibsvmEntry(token, previous, dimension, limits, in));
      previous = entry.first;
      max_index = std::max(max_index, entry.first);
      row.entries.emplace_back(entry.first - 1, entry.second);
    }
    if (Status e = internal::CheckSize(rows.size() + 1, std::max(dimension, max_index), limits);
        !e.ok()) {
      return Error{in.Where(e.error())};
    }
    rows.push_back(std::move(row));
  }
  if (!in.read_status().ok()) return in.read_status();
  if (rows.empty()) return Error{path + ": no rows"};
  return LibsvmDataset(path, dimension != 0 ? dimension : max_index, rows, labels);
}

}  // namespace fedldp
