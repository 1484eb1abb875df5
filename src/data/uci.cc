// UCI Adult, Bank Marketing and KDD Cup 99 (encodings in loaders.h).
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>

#include "fedldp/data/loaders.h"
#include "fedldp/random/counter_rng.h"
#include "line_reader.h"

namespace fedldp {
namespace {

using internal::LineReader;
using internal::ParseNumber;
using internal::SplitFields;

// One input column of a one-hot encoding: a categorical attribute (its values
// in order), a numeric attribute cut into bins (the lower ends of bins 2..n),
// or a label.
struct Column {
  std::string name;
  std::vector<std::string> values;  // categorical
  std::vector<double> bin_starts;   // binned numeric
  std::size_t width() const { return values.empty() ? bin_starts.size() + 1 : values.size(); }
};

// adult.names, and LIBSVM a9a's bins for the numeric attributes.
const std::vector<Column>& AdultSchema() {
  static const std::vector<Column> schema = {
      {"age", {}, {26, 33, 41, 50}},
      {"workclass",
       {"Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
        "Without-pay", "Never-worked"},
       {}},
      {"fnlwgt", {}, {106648, 158662, 196338, 259873}},
      {"education",
       {"Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
        "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th",
        "Preschool"},
       {}},
      {"education-num", {}, {9, 10, 11, 13}},
      {"marital-status",
       {"Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse"},
       {}},
      {"occupation",
       {"Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces"},
       {}},
      {"relationship",
       {"Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"},
       {}},
      {"race", {"White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"}, {}},
      {"sex", {"Female", "Male"}, {}},
      {"capital-gain", {}, {0.5}},
      {"capital-loss", {}, {0.5}},
      {"hours-per-week", {}, {35, 40, 41, 48}},
      {"native-country",
       {"United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands"},
       {}},
  };
  return schema;
}

// Sets the one-hot position of `field` in `out` (starting at `offset`), or
// returns a reason it cannot.
Status EncodeOneHot(const Column& column, const std::string& field, float* out,
                    std::size_t offset) {
  if (!column.values.empty()) {
    const auto it = std::find(column.values.begin(), column.values.end(), field);
    if (it == column.values.end()) {
      return Error{"unknown " + column.name + " '" + field + "'"};
    }
    out[offset + static_cast<std::size_t>(it - column.values.begin())] = 1;
    return {};
  }
  const auto value = ParseNumber(field);
  if (!value) return Error{column.name + " '" + field + "' is not a number"};
  const auto bin = std::upper_bound(column.bin_starts.begin(), column.bin_starts.end(), *value) -
                   column.bin_starts.begin();
  out[offset + static_cast<std::size_t>(bin)] = 1;
  return {};
}

std::vector<std::string> OneHotNames(const std::vector<Column>& schema) {
  std::vector<std::string> names;
  for (const auto& c : schema) {
    for (std::size_t i = 0; i < c.width(); ++i) {
      names.push_back(c.name + "=" +
                      (c.values.empty() ? "bin" + std::to_string(i + 1) : c.values[i]));
    }
  }
  return names;
}

// Rank (quantile) scaling of the given columns of `data` into [-1, 1]:
// x -> 2 F(x) - 1 with F the empirical distribution function at mid-ranks,
// F(x) = (#{< x} + #{= x} / 2) / n. Heavy-tailed columns (balance,
// duration, byte counts) are spread evenly instead of being squashed against
// -1 as min-max scaling does; a constant column becomes 0.
void ScaleColumns(Dataset& data, const std::vector<std::size_t>& columns) {
  const std::size_t n = data.size();
  std::vector<float> sorted(n);
  for (std::size_t c : columns) {
    for (std::size_t i = 0; i < n; ++i) sorted[i] = data.features[i * data.dimension + c];
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < n; ++i) {
      float& v = data.features[i * data.dimension + c];
      const auto lo = std::lower_bound(sorted.begin(), sorted.end(), v);
      const auto hi = std::upper_bound(lo, sorted.end(), v);
      const double f =
          (static_cast<double>(lo - sorted.begin()) + 0.5 * static_cast<double>(hi - lo)) /
          static_cast<double>(n);
      v = static_cast<float>(2 * f - 1);
    }
  }
}

}  // namespace

Result<Dataset> LoadAdult(const std::vector<std::string>& paths, const LoadLimits& limits) {
  const auto& schema = AdultSchema();
  Dataset data;
  data.name = "adult";
  data.feature_names = OneHotNames(schema);
  data.dimension = data.feature_names.size();  // 123
  std::vector<float> row(data.dimension);
  for (const auto& path : paths) {
    LineReader in(path, limits.max_line_bytes);
    if (!in.open_status().ok()) return in.open_status();
    while (auto line = in.Next()) {
      if (line->empty() || line->front() == '|') continue;  // blank end; adult.test's banner
      if (Status e = internal::CheckSize(data.size() + 1, data.dimension, limits); !e.ok()) {
        return Error{in.Where(e.error())};
      }
      const auto fields = SplitFields(*line, ',');
      if (fields.size() != schema.size() + 1) {
        return Error{in.Where("expected " + std::to_string(schema.size() + 1) +
                              " comma-separated fields, got " + std::to_string(fields.size()))};
      }
      std::fill(row.begin(), row.end(), 0.0f);
      std::size_t offset = 0;
      for (std::size_t c = 0; c < schema.size(); ++c) {
        if (fields[c] != "?") {  // missing: no feature of this attribute (as a9a)
          if (Status e = EncodeOneHot(schema[c], fields[c], row.data(), offset); !e.ok()) {
            return Error{in.Where(e.error())};
          }
        }
        offset += schema[c].width();
      }
      std::string label = fields.back();
      if (!label.empty() && label.back() == '.') label.pop_back();
      if (label != ">50K" && label != "<=50K") {
        return Error{in.Where("income must be >50K or <=50K, got '" + fields.back() + "'")};
      }
      data.Append(row, label == ">50K" ? 1 : 0);
    }
    if (!in.read_status().ok()) return in.read_status();
  }
  if (data.size() == 0) return Error{"no Adult rows in the given files"};
  return data;
}

namespace {

// Bank's input columns in file order (y last), and per column before y its
// kind: n numeric, c categorical, b yes/no, - dropped.
constexpr std::array<const char*, 17> kBankNames = {
    "age", "job",   "marital",  "education", "default", "balance",  "housing",  "loan", "contact",
    "day", "month", "duration", "campaign",  "pdays",   "previous", "poutcome", "y"};
constexpr std::string_view kBankKinds = "ncccbnbbcn-nnnn-";

const std::vector<Column>& BankCategorical() {
  static const std::vector<Column> columns = {
      {"job",
       {"admin.", "blue-collar", "entrepreneur", "housemaid", "management", "retired",
        "self-employed", "services", "student", "technician", "unemployed", "unknown"},
       {}},
      {"marital", {"divorced", "married", "single"}, {}},
      {"education", {"primary", "secondary", "tertiary", "unknown"}, {}},
      {"contact", {"cellular", "telephone", "unknown"}, {}},
  };
  return columns;
}

// One Bank record's features into `row` (zeroed here).
Status EncodeBankRow(const std::vector<std::string>& fields, std::vector<float>& row) {
  std::fill(row.begin(), row.end(), 0.0f);
  std::size_t offset = 0;
  for (std::size_t c = 0, cat = 0; c < kBankKinds.size(); ++c) {
    const std::string& f = fields[c];
    switch (kBankKinds[c]) {
      case 'n': {
        const auto v = internal::ParseFloat(f);
        if (!v)
          return Error{std::string(kBankNames[c]) + " '" + f + "' is not a number a float holds"};
        row[offset++] = *v;
        break;
      }
      case 'b':
        if (f != "yes" && f != "no") {
          return Error{std::string(kBankNames[c]) + " must be yes or no, got '" + f + "'"};
        }
        row[offset++] = f == "yes" ? 1.0f : 0.0f;
        break;
      case 'c':
        FEDLDP_RETURN_IF_ERROR(EncodeOneHot(BankCategorical()[cat], f, row.data(), offset));
        offset += BankCategorical()[cat++].width();
        break;
      default:
        break;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Dataset> LoadBank(const std::string& path, const LoadLimits& limits) {
  Dataset data;
  data.name = "bank";
  std::vector<std::size_t> numeric_columns;
  for (std::size_t c = 0, cat = 0; c < kBankKinds.size(); ++c) {
    if (kBankKinds[c] == 'c') {
      for (const auto& v : BankCategorical()[cat].values)
        data.feature_names.push_back(std::string(kBankNames[c]) + "=" + v);
      ++cat;
    } else if (kBankKinds[c] != '-') {
      if (kBankKinds[c] == 'n') numeric_columns.push_back(data.feature_names.size());
      data.feature_names.push_back(kBankNames[c]);
    }
  }
  data.dimension = data.feature_names.size();  // 32
  LineReader in(path, limits.max_line_bytes);
  if (!in.open_status().ok()) return in.open_status();
  std::vector<float> row(data.dimension);
  bool header = true;
  while (auto line = in.Next()) {
    if (line->empty()) continue;
    const auto fields = SplitFields(*line, ';');
    if (fields.size() != kBankNames.size()) {
      return Error{
          in.Where("expected 17 ';'-separated fields, got " + std::to_string(fields.size()))};
    }
    if (header) {
      header = false;
      if (fields[0] != "age" || fields[16] != "y")
        return Error{in.Where("expected the header age;...;y")};
      continue;
    }
    if (Status e = internal::CheckSize(data.size() + 1, data.dimension, limits); !e.ok()) {
      return Error{in.Where(e.error())};
    }
    if (Status e = EncodeBankRow(fields, row); !e.ok()) return Error{in.Where(e.error())};
    if (fields[16] != "yes" && fields[16] != "no")
      return Error{in.Where("y must be yes or no, got '" + fields[16] + "'")};
    data.Append(row, fields[16] == "yes" ? 1 : 0);
  }
  if (!in.read_status().ok()) return in.read_status();
  if (data.size() == 0) return Error{path + ": no Bank rows"};
  ScaleColumns(data, numeric_columns);
  return data;
}

namespace {

// KDD Cup 99: 41 input columns and the label; protocol_type, service and
// flag categorical; num_outbound_cmds (19) and is_host_login (20) constant
// in the 10 % file, dropped.
constexpr std::size_t kKddFields = 42;
constexpr std::array<std::size_t, 3> kKddCategorical = {1, 2, 3};
constexpr std::array<const char*, 3> kKddCategoricalNames = {"protocol_type", "service", "flag"};
bool KddDropped(std::size_t c) { return c == 19 || c == 20; }
using KddDictionary = std::array<std::map<std::string, std::size_t>, 3>;

// Which of the categorical columns column c is, or 3 if none.
std::size_t KddCategory(std::size_t c) {
  return static_cast<std::size_t>(std::find(kKddCategorical.begin(), kKddCategorical.end(), c) -
                                  kKddCategorical.begin());
}

// Pass 1: every line of the files, checked, where it came from (file, line
// number), and the categorical columns' values.
struct KddLines {
  std::vector<std::string> lines;
  std::vector<std::pair<std::string, std::size_t>> origin;
  KddDictionary dictionary;
};
Result<KddLines> ReadKddLines(const std::vector<std::string>& paths,
                              std::optional<std::size_t> max_rows, const LoadLimits& limits) {
  KddLines k;
  std::size_t kept_bytes = 0;
  for (const auto& path : paths) {
    LineReader in(path, limits.max_line_bytes);
    if (!in.open_status().ok()) return in.open_status();
    while (auto line = in.Next()) {
      if (line->empty()) continue;
      const auto fields = SplitFields(*line, ',');
      if (fields.size() != kKddFields) {
        return Error{
            in.Where("expected 42 comma-separated fields, got " + std::to_string(fields.size()))};
      }
      for (std::size_t i = 0; i < 3; ++i) k.dictionary[i].emplace(fields[kKddCategorical[i]], 0);
      // Every value of a categorical column is a feature: the dimension
      // grows with the dictionaries (38 numeric columns besides).
      const std::size_t dimension =
          38 + k.dictionary[0].size() + k.dictionary[1].size() + k.dictionary[2].size();
      const std::size_t rows =
          max_rows ? std::min(k.lines.size() + 1, *max_rows) : k.lines.size() + 1;
      if (Status e = internal::CheckSize(rows, dimension, limits); !e.ok()) {
        return Error{in.Where(e.error())};
      }
      // The lines are kept for the second pass: as much text as the
      // features the limits allow take (4 bytes each).
      kept_bytes += line->size();
      if (kept_bytes / 4 > limits.max_cells) {
        return Error{in.Where("the files hold more text than a loader keeps (" +
                              std::to_string(limits.max_cells * 4) + " bytes)")};
      }
      k.lines.push_back(std::move(*line));
      k.origin.emplace_back(path, in.line());
    }
    if (!in.read_status().ok()) return in.read_status();
  }
  if (k.lines.empty()) return Error{"no KDD rows in the given files"};
  return k;
}

// The output layout in input-column order: a numeric column takes one
// position, a categorical one a block (values sorted, numbered here), a
// dropped one none. Returns each input column's first position.
std::vector<std::size_t> KddLayout(Dataset& data, KddDictionary& dictionary,
                                   std::vector<std::size_t>& numeric_columns) {
  std::vector<std::size_t> position(kKddFields - 1, 0);
  for (std::size_t c = 0; c + 1 < kKddFields; ++c) {
    position[c] = data.feature_names.size();
    if (const std::size_t i = KddCategory(c); i < 3) {
      std::size_t index = 0;
      for (auto& [value, slot] : dictionary[i]) {
        slot = index++;
        data.feature_names.push_back(std::string(kKddCategoricalNames[i]) + "=" + value);
      }
    } else if (!KddDropped(c)) {
      numeric_columns.push_back(data.feature_names.size());
      data.feature_names.push_back("column" + std::to_string(c + 1));
    }
  }
  data.dimension = data.feature_names.size();
  return position;
}

// Which rows: all, or a seeded uniform subset of max_rows in file order.
std::vector<std::size_t> ChooseKddRows(std::size_t lines, std::optional<std::size_t> max_rows,
                                       std::uint64_t seed) {
  std::vector<std::size_t> chosen(lines);
  std::iota(chosen.begin(), chosen.end(), std::size_t{0});
  if (max_rows && *max_rows < lines) {
    CounterRng rng(seed, /*stream=*/0x4b4444);  // "KDD"
    for (std::size_t i = 0; i < *max_rows; ++i) {
      std::swap(chosen[i], chosen[i + UniformIndex(rng, chosen.size() - i)]);
    }
    chosen.resize(*max_rows);
    std::sort(chosen.begin(), chosen.end());
  }
  return chosen;
}

// One record's features into `row` (zeroed here), or why it cannot be.
Status EncodeKddRow(const std::vector<std::string>& fields, const KddDictionary& dictionary,
                    const std::vector<std::size_t>& position, std::vector<float>& row) {
  std::fill(row.begin(), row.end(), 0.0f);
  for (std::size_t c = 0; c + 1 < kKddFields; ++c) {
    if (const std::size_t i = KddCategory(c); i < 3) {
      row[position[c] + dictionary[i].at(fields[c])] = 1;
    } else if (!KddDropped(c)) {
      const auto v = internal::ParseFloat(fields[c]);
      if (!v) {
        return Error{"column " + std::to_string(c + 1) + " '" + fields[c] +
                     "' is not a number a float holds"};
      }
      row[position[c]] = *v;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Dataset> LoadKdd(const std::vector<std::string>& paths, std::optional<std::size_t> max_rows,
                        std::uint64_t seed, const LoadLimits& limits) {
  FEDLDP_ASSIGN_OR_RETURN(KddLines k, ReadKddLines(paths, max_rows, limits));
  Dataset data;
  data.name = "kdd";
  std::vector<std::size_t> numeric_columns;
  const std::vector<std::size_t> position = KddLayout(data, k.dictionary, numeric_columns);
  std::vector<float> row(data.dimension);
  for (std::size_t r : ChooseKddRows(k.lines.size(), max_rows, seed)) {
    const auto fields = SplitFields(k.lines[r], ',');
    auto where = [&](const std::string& reason) {
      return k.origin[r].first + ":" + std::to_string(k.origin[r].second) + ": " + reason;
    };
    if (Status e = EncodeKddRow(fields, k.dictionary, position, row); !e.ok()) {
      return Error{where(e.error())};
    }
    std::string label = fields.back();
    if (!label.empty() && label.back() == '.') label.pop_back();
    if (label.empty()) return Error{where("empty label")};
    data.Append(row, label == "normal" ? 0 : 1);
  }
  ScaleColumns(data, numeric_columns);
  return data;
}

}  // namespace fedldp
