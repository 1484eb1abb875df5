#include "fedldp/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <utility>
#include <vector>

namespace fedldp {

int Dataset::MajorityLabel() const {
  std::map<int, std::size_t> counts;
  for (int y : labels) ++counts[y];
  int best = 0;
  std::size_t best_count = 0;
  for (const auto& [label, count] : counts) {
    if (count > best_count) best = label, best_count = count;
  }
  return best;
}

double Dataset::MajorityRate() const {
  if (labels.empty()) return 0.0;
  const int majority = MajorityLabel();
  return static_cast<double>(std::count(labels.begin(), labels.end(), majority)) /
         static_cast<double>(labels.size());
}

Dataset Dataset::Subset(std::span<const std::size_t> indices) const {
  Dataset out;
  out.name = name;
  out.dimension = dimension;
  out.classes = classes;
  out.feature_names = feature_names;
  out.class_names = class_names;
  out.features.reserve(indices.size() * dimension);
  out.labels.reserve(indices.size());
  for (std::size_t i : indices) out.Append(row(i), labels[i]);
  return out;
}

Dataset Dataset::First(std::size_t n) const& {
  if (n == 0 || n >= size()) return *this;
  std::vector<std::size_t> rows(n);
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  return Subset(rows);
}

Dataset Dataset::First(std::size_t n) && {
  if (n == 0 || n >= size()) return std::move(*this);
  return std::as_const(*this).First(n);
}

void Dataset::Append(std::span<const float> row, int label) {
  features.insert(features.end(), row.begin(), row.end());
  labels.push_back(label);
}

Status CheckFeatureCenter(double center) {
  if (std::fabs(center) <= kMaxFeatureCenter) return Status::Ok();
  std::ostringstream out;
  out << "the features' centre must be a number in [-" << kMaxFeatureCenter << ", "
      << kMaxFeatureCenter << "] (the features' scale), got " << center;
  return Error{out.str(), ErrorCode::kInvalidArgument};
}

Status CenterFeatures(Dataset& data, double center) {
  FEDLDP_RETURN_IF_ERROR(CheckFeatureCenter(center));
  const auto by = static_cast<float>(center);
  for (float& x : data.features) x -= by;
  return {};
}

namespace {

// How far a column's largest |x| is from the unit range, as a factor >= 1
// (1 inside [kFeatureScaleLow, kFeatureScaleHigh] or for an all-zero column).
double Offness(double largest) {
  if (largest > kFeatureScaleHigh) return largest / kFeatureScaleHigh;
  if (largest > 0 && largest < kFeatureScaleLow) return kFeatureScaleLow / largest;
  return 1;
}

}  // namespace

std::string FeatureScaleWarning(const Dataset& data) {
  std::vector<double> largest(data.dimension, 0.0);
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto row = data.row(i);
    for (std::size_t j = 0; j < data.dimension; ++j) {
      largest[j] = std::max(largest[j], static_cast<double>(std::fabs(row[j])));
    }
  }
  std::size_t off = 0, worst = 0;
  for (std::size_t j = 0; j < data.dimension; ++j) {
    if (Offness(largest[j]) > 1) ++off;
    if (Offness(largest[j]) > Offness(largest[worst])) worst = j;
  }
  if (off == 0) return "";
  std::ostringstream w;
  w << off << " of " << data.dimension << " feature columns are far from unit scale; column "
    << worst;
  if (worst < data.feature_names.size()) w << " ('" << data.feature_names[worst] << "')";
  w << " reaches |x| = " << largest[worst]
    << ". The linear models clip each gradient assuming features in about [-1, 1]: scale every "
       "column first (to [0, 1], or subtract its mean and divide by its standard deviation)";
  return w.str();
}

}  // namespace fedldp
