#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

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

// A number as strtod reads it, inf and nan included (a data row's value
// the loader then refuses, not a column's name).
bool Numeric(const std::string& field) {
  char* end = nullptr;
  std::strtod(field.c_str(), &end);
  return end != field.c_str() && *end == '\0';
}

// Whether the first row names the columns. It does when the label column
// is given by name, or when a field other than the label's is text (a data
// row's features are numbers, whatever its label; an empty field is a
// missing value); then every column needs a name of its own. A row of 3 or
// more column numbers (0, 1, 2, ... or 1, 2, 3, ..., the names pandas
// writes for unnamed columns) could be either, and is refused with the fix.
Result<bool> IsHeader(const std::vector<std::string>& fields, const std::string& label_column,
                      const internal::LineReader& in) {
  std::size_t label = fields.size() - 1;
  const bool named =
      !label_column.empty() &&
      std::from_chars(label_column.data(), label_column.data() + label_column.size(), label).ptr !=
          label_column.data() + label_column.size();
  bool text = named;
  bool counted[2] = {true, true};  // the fields are 0, 1, ... / 1, 2, ...
  for (std::size_t c = 0; c < fields.size(); ++c) {
    const auto number = internal::ParseNumber(fields[c]);
    if (c != label && !fields[c].empty() && !Numeric(fields[c])) text = true;
    for (int from : {0, 1}) counted[from] &= number && *number == static_cast<double>(c + from);
  }
  if (!text && fields.size() > 2 && (counted[0] || counted[1])) {
    return Error{in.Where("the first row is the column numbers, " + fields[0] + ", " + fields[1] +
                          ", ...: a header (pandas writes one for unnamed columns) or data? Name " +
                          "the columns, or write the file without a header (header=False)")};
  }
  if (!text) return false;
  std::map<std::string, std::size_t> seen;
  for (std::size_t c = 0; c < fields.size(); ++c) {
    if (fields[c].empty()) {
      return Error{in.Where("column " + std::to_string(c) + " of the header has no name (an " +
                            "index column, as pandas writes by default? write the file with " +
                            "index=False, or name the column)")};
    }
    if (const auto [it, fresh] = seen.emplace(fields[c], c); !fresh) {
      return Error{in.Where("columns " + std::to_string(it->second) + " and " + std::to_string(c) +
                            " of the header are both named '" + fields[c] + "'")};
    }
  }
  return true;
}

// A label column that cannot be one: a single class (nothing to learn),
// numbers that are not whole (a continuous quantity), or so many classes
// that fewer than 10 rows fall to each (a feature taken for the label).
// `fix`: where the labels come from, for the message.
constexpr const char* kCsvLabelFix = " (is the label column right? --label-column names it)";
Status CheckClasses(const std::string& path, const std::map<double, int>& by_number,
                    const std::map<std::string, int>& by_text, std::size_t rows,
                    const std::string& fix = kCsvLabelFix) {
  const std::size_t classes = by_number.size() + by_text.size();
  if (classes < 2) {
    return Error{path + ": every row has the same label, one class: nothing to learn" + fix};
  }
  for (const auto& [value, unused] : by_number) {
    if (value != std::floor(value)) {
      std::ostringstream text;
      text << value;
      return Error{path + ": the label " + text.str() +
                   " is not a whole number: labels name classes, not quantities" + fix};
    }
  }
  if (classes > 65536 || (classes > 100 && rows < 10 * classes)) {
    return Error{path + ": " + std::to_string(classes) + " distinct labels among " +
                 std::to_string(rows) + " rows, too many classes to learn" + fix};
  }
  return Status::Ok();
}

// The rows' classes, in increasing order of the label: numerically when
// every label is a number (so -1 / +1 and 0 / 1 give 0 / 1), else as text;
// each named by its label as first written. A whole dataset's are checked.
Status SetClasses(const std::string& path, const std::vector<std::string>& labels, FileLabels scope,
                  Dataset& data) {
  const std::size_t numbers = std::count_if(labels.begin(), labels.end(), [](const std::string& l) {
    return internal::ParseNumber(l).has_value();
  });
  if (numbers != 0 && numbers != labels.size()) {
    const auto text = std::find_if(labels.begin(), labels.end(), [](const std::string& l) {
      return !internal::ParseNumber(l).has_value();
    });
    return Error{path + ": the labels mix numbers and text ('" + *text + "' among " +
                 std::to_string(numbers) + " numbers): a header the loader read as data, or " +
                 "the wrong label column (--label-column)?"};
  }
  const bool numeric = numbers != 0;
  std::map<double, int> by_number;
  std::map<std::string, int> by_text;
  std::map<double, std::string> written;
  for (const auto& l : labels) {
    if (numeric) {
      const double value = *internal::ParseNumber(l);
      by_number.emplace(value, 0);
      written.emplace(value, l);
    } else {
      by_text.emplace(l, 0);
    }
  }
  int next = 0;
  for (auto& [value, cls] : by_number) {
    cls = next++;
    data.class_names.push_back(written.at(value));
  }
  for (auto& [text, cls] : by_text) {
    cls = next++;
    data.class_names.push_back(text);
  }
  if (scope == FileLabels::kRanked) {
    FEDLDP_RETURN_IF_ERROR(CheckClasses(path, by_number, by_text, labels.size()));
  }
  data.classes = next;
  for (const auto& l : labels) {
    data.labels.push_back(numeric ? by_number.at(*internal::ParseNumber(l)) : by_text.at(l));
  }
  return Status::Ok();
}

}  // namespace

Result<Dataset> LoadCsv(const std::string& path, const std::string& label_column,
                        const LoadLimits& limits, FileLabels scope) {
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
      auto header = IsHeader(fields, label_column, in);
      if (!header.ok()) return Error{header.error()};
      auto position = LabelPosition(label_column, fields, *header, in.Where(""));
      if (!position.ok()) return Error{position.error()};
      label = *position;
      data.dimension = columns - 1;
      if (Status e = internal::CheckSize(1, data.dimension, limits); !e.ok()) {
        return Error{in.Where(e.error())};
      }
      if (*header) {
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
  FEDLDP_RETURN_IF_ERROR(SetClasses(path, labels, scope, data));
  return data;
}

Result<Dataset> LoadDataFile(const std::string& path, const std::string& label_column,
                             FileLabels labels, std::size_t dimension) {
  const auto ends = [&](const std::string& suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".csv") || ends(".csv.gz") || ends(".CSV"))
    return LoadCsv(path, label_column, {}, labels);
  if (!label_column.empty()) {
    return Error{path +
                 ": a label column applies to CSV files (.csv) only; LIBSVM's label is "
                 "the first field"};
  }
  auto data = LoadLibsvm(path, dimension, labels);
  if (!data.ok() || labels != FileLabels::kRanked) return data;
  // A whole dataset to learn from, held to CSV's rules: LoadLibsvm itself
  // takes one label value (a test split may hold one class).
  std::map<double, int> present;
  for (const int label : data->labels) ++present[label];
  FEDLDP_RETURN_IF_ERROR(CheckClasses(path, present, {}, data->size(),
                                      " (LIBSVM's label is each line's first field)"));
  return data;
}

}  // namespace fedldp
