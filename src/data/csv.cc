#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "fedldp/data/loaders.h"
#include "line_reader.h"

namespace fedldp {
namespace {

// The label column's position: a header name, a 0-based index, or (empty)
// the last column.
Result<std::size_t> LabelPosition(const std::string& label_column,
                                  const std::vector<std::string>& first, bool header,
                                  const std::string& where) {
  if (label_column.empty()) return first.size() - 1;
  if (header) {
    const auto it = std::find(first.begin(), first.end(), label_column);
    if (it != first.end()) return static_cast<std::size_t>(it - first.begin());
  }
  std::size_t index = 0;
  const auto [ptr, ec] =
      std::from_chars(label_column.data(), label_column.data() + label_column.size(), index);
  if (ec == std::errc() && ptr == label_column.data() + label_column.size()) {
    if (index < first.size()) return index;
    return Error{where + "label column " + label_column + " is past the last column (" +
                 std::to_string(first.size() - 1) + ")"};
  }
  return Error{where + "no column is named '" + label_column + "'" +
               (header ? "" : " (the file has no header row)")};
}

// The rows' classes, in increasing order of the label: numerically when
// every label is a number (so -1 / +1 and 0 / 1 give 0 / 1), else as text.
Status SetClasses(const std::string& path, const std::vector<std::string>& labels, Dataset& data) {
  const bool numeric = std::all_of(labels.begin(), labels.end(), [](const std::string& l) {
    return internal::ParseNumber(l).has_value();
  });
  std::map<double, int> by_number;
  std::map<std::string, int> by_text;
  for (const auto& l : labels) {
    if (numeric) {
      by_number.emplace(*internal::ParseNumber(l), 0);
    } else {
      by_text.emplace(l, 0);
    }
  }
  int next = 0;
  for (auto& [unused, cls] : by_number) cls = next++;
  for (auto& [unused, cls] : by_text) cls = next++;
  if (next > 65536) return Error{path + ": more than 65,536 distinct labels"};
  data.classes = std::max(2, next);
  for (const auto& l : labels) {
    data.labels.push_back(numeric ? by_number.at(*internal::ParseNumber(l)) : by_text.at(l));
  }
  return Status::Ok();
}

}  // namespace

Result<Dataset> LoadCsv(const std::string& path, const std::string& label_column,
                        const LoadLimits& limits) {
  internal::LineReader in(path, limits.max_line_bytes);
  if (!in.open_status().ok()) return in.open_status();
  Dataset data;
  data.name = path;
  std::vector<std::string> labels;  // as written, one per row
  std::size_t columns = 0, label = 0;
  bool first = true;
  while (auto line = in.Next()) {
    if (line->find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
    const std::vector<std::string> fields = internal::SplitFields(*line, ',');
    if (first) {
      first = false;
      if (fields.size() < 2) {
        return Error{
            in.Where("a CSV row needs a label and at least one feature, separated by ','")};
      }
      columns = fields.size();
      // A header row: no field is a number (a data row has numeric features,
      // whatever its label).
      const bool header = std::none_of(fields.begin(), fields.end(), [](const std::string& f) {
        return internal::ParseNumber(f).has_value();
      });
      auto position = LabelPosition(label_column, fields, header, in.Where(""));
      if (!position.ok()) return Error{position.error()};
      label = *position;
      data.dimension = columns - 1;
      if (Status e = internal::CheckSize(1, data.dimension, limits); !e.ok()) {
        return Error{in.Where(e.error())};
      }
      if (header) {
        for (std::size_t c = 0; c < columns; ++c) {
          if (c != label) data.feature_names.push_back(fields[c]);
        }
        continue;
      }
    }
    if (fields.size() != columns) {
      return Error{in.Where("has " + std::to_string(fields.size()) + " fields, the first row " +
                            std::to_string(columns))};
    }
    if (Status e = internal::CheckSize(labels.size() + 1, data.dimension, limits); !e.ok()) {
      return Error{in.Where(e.error())};
    }
    for (std::size_t c = 0; c < columns; ++c) {
      if (c == label) continue;
      const auto value = internal::ParseFloat(fields[c]);
      if (!value) {
        return Error{in.Where("column " + std::to_string(c) + ": '" + fields[c] +
                              "' is not a finite number a float holds (features must be " +
                              "numeric; encode categories first)")};
      }
      data.features.push_back(*value);
    }
    if (fields[label].empty()) return Error{in.Where("the label is empty")};
    labels.push_back(fields[label]);
  }
  if (!in.read_status().ok()) return in.read_status();
  if (labels.empty()) return Error{path + ": no rows"};
  FEDLDP_RETURN_IF_ERROR(SetClasses(path, labels, data));
  return data;
}

Result<Dataset> LoadDataFile(const std::string& path, const std::string& label_column) {
  const auto ends = [&](const std::string& suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".csv") || ends(".csv.gz") || ends(".CSV")) return LoadCsv(path, label_column);
  if (!label_column.empty()) {
    return Error{path +
                 ": a label column applies to CSV files (.csv) only; LIBSVM's label is "
                 "the first field"};
  }
  return LoadLibsvm(path);
}

}  // namespace fedldp
