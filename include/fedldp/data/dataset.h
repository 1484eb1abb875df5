// Datasets in memory: dense row-major float features and integer labels.
// Binary tasks use labels 0 / 1 (1 = the positive class: Adult ">50K", Bank
// "yes", KDD "attack"); models map them to -1 / +1 themselves.
#ifndef FEDLDP_DATA_DATASET_H_
#define FEDLDP_DATA_DATASET_H_

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"

namespace fedldp {

struct Dataset {
  std::string name;
  std::size_t dimension = 0;
  int classes = 2;
  std::vector<float> features;  // size() * dimension, row-major
  std::vector<int> labels;
  std::vector<std::string> feature_names;  // empty or one per dimension
  // Empty (a built-in dataset: its labels are the classes) or, for a file,
  // one per class: the label as the file writes it ("-1", ">50K").
  std::vector<std::string> class_names;

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
  // The first n rows (all of them if n is 0 or at least size()); on an
  // rvalue, all of them are moved, not copied.
  Dataset First(std::size_t n) const&;
  Dataset First(std::size_t n) &&;
  void Append(std::span<const float> row, int label);
};

// What a user's features say about their scale: empty when every |x| is
// within [kFeatureScaleLow, kFeatureScaleHigh] at its column's largest (or the
// column is all 0), else one sentence naming the column furthest off and the
// fix. The linear models clip each gradient to a norm that assumes features in
// about [-1, 1]: an unscaled column (an age, an income) swamps the others.
inline constexpr double kFeatureScaleHigh = 10, kFeatureScaleLow = 1e-3;
std::string FeatureScaleWarning(const Dataset& data);

// Subtracts `center` from every feature of every row: a public constant,
// chosen without looking at the private rows (on validation rows, like a
// learning rate), so it costs no privacy. Centring MNIST's [0, 1] pixels
// on 0.13 (about the mean pixel) conditions the linear model's steps
// better: a private run learns more in the same rounds (docs/frontier.md).
// Refused unless |center| <= kMaxFeatureCenter (the features' scale).
inline constexpr double kMaxFeatureCenter = 1;
Status CheckFeatureCenter(double center);
Status CenterFeatures(Dataset& data, double center);

// A client's rows with a task's classes. A file's labels are named
// (Dataset::class_names); the task names its classes as the server's file
// did. Each local class becomes the task's class of the same name (numbers
// equal as numbers, "1" = "1.0" = "+1"; in a binary task whose classes are
// numbered -1 or 0 and 1, -1 and 0 are one class, as LIBSVM has it). A task
// that names no classes (a built-in dataset) numbers them: a label is its
// class number, -1 taken as 0. Data without class names (a built-in
// dataset's) is used as it is, not copied.
class TaskData {
 public:
  static Result<TaskData> Of(const Dataset& data, std::span<const std::string> task_classes);
  const Dataset& get() const { return own_ ? *own_ : *data_; }

 private:
  const Dataset* data_ = nullptr;
  std::shared_ptr<const Dataset> own_;  // the relabelled copy
};

}  // namespace fedldp

#endif  // FEDLDP_DATA_DATASET_H_
