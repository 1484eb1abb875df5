// Datasets in memory: dense row-major float features and integer labels.
// Binary tasks use labels 0 / 1 (1 = the positive class: Adult ">50K", Bank
// "yes", KDD "attack"); models map them to -1 / +1 themselves.
#ifndef FEDLDP_DATA_DATASET_H_
#define FEDLDP_DATA_DATASET_H_

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace fedldp {

struct Dataset {
  std::string name;
  std::size_t dimension = 0;
  int classes = 2;
  std::vector<float> features;  // size() * dimension, row-major
  std::vector<int> labels;
  std::vector<std::string> feature_names;  // empty or one per dimension

  std::size_t size() const { return labels.size(); }
  std::span<const float> row(std::size_t i) const {
    return {features.data() + i * dimension, dimension};
  }
  // Fraction of rows whose label is the most frequent one: the accuracy of
  // the trivial (majority-class) classifier.
  double MajorityRate() const;
  int MajorityLabel() const;
  // The rows `indices`, in that order.
  Dataset Subset(std::span<const std::size_t> indices) const;
  void Append(std::span<const float> row, int label);
};

}  // namespace fedldp

#endif  // FEDLDP_DATA_DATASET_H_
