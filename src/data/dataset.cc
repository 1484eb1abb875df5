#include "fedldp/data/dataset.h"

#include <algorithm>
#include <map>

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
  out.features.reserve(indices.size() * dimension);
  out.labels.reserve(indices.size());
  for (std::size_t i : indices) out.Append(row(i), labels[i]);
  return out;
}

void Dataset::Append(std::span<const float> row, int label) {
  features.insert(features.end(), row.begin(), row.end());
  labels.push_back(label);
}

}  // namespace fedldp
