// A client's share of a task, its labels matched to the task's classes.
#include <algorithm>
#include <cmath>

#include "fedldp/data/loaders.h"
#include "line_reader.h"

namespace fedldp {
namespace {

// Whether a binary task numbers its classes as LIBSVM does: -1 or 0, and 1.
bool NumberedBinary(std::span<const std::string> task) {
  if (task.size() != 2) return false;
  const auto a = internal::ParseNumber(task[0]), b = internal::ParseNumber(task[1]);
  return a && b && (*a == -1 || *a == 0) && *b == 1;
}

std::string Listed(std::span<const std::string> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 10; ++i) {
    out += (i ? ", '" : "'") + names[i] + "'";
  }
  return names.size() > 10 ? out + ", ..." : out;
}

// The task's class of a local label.
Result<int> TaskClassOf(const std::string& label, std::span<const std::string> task) {
  const auto number = internal::ParseNumber(label);
  if (task.empty()) {
    if (number && *number == std::trunc(*number) && *number >= -1 && *number <= 65535) {
      return *number == -1 ? 0 : static_cast<int>(*number);
    }
    return Error{"the label '" + label + "' is not a class number: the task names no classes " +
                 "(a built-in dataset), so labels are its class numbers 0, 1, ... (-1 as 0)"};
  }
  for (std::size_t c = 0; c < task.size(); ++c) {
    if (task[c] == label) return static_cast<int>(c);
  }
  if (number) {
    for (std::size_t c = 0; c < task.size(); ++c) {
      if (internal::ParseNumber(task[c]) == number) return static_cast<int>(c);
    }
    if (NumberedBinary(task) && (*number == -1 || *number == 0)) return 0;
  }
  return Error{"the label '" + label + "' is none of the task's classes (" + Listed(task) +
               "): is --label-column right, or the file for this task?"};
}

}  // namespace

Result<TaskData> TaskData::Of(const Dataset& data, std::span<const std::string> task_classes) {
  TaskData out;
  out.data_ = &data;
  if (data.class_names.empty()) return out;
  // Only the classes a row holds: a LIBSVM share names every number below its largest.
  std::vector<int> to_task(data.class_names.size(), -1);
  for (const int label : data.labels) {
    int& cls = to_task.at(static_cast<std::size_t>(label));
    if (cls >= 0) continue;
    FEDLDP_ASSIGN_OR_RETURN(cls, TaskClassOf(data.class_names[label], task_classes));
  }
  auto own = std::make_shared<Dataset>(data);
  int largest = 0;
  for (int& label : own->labels) {
    label = to_task.at(static_cast<std::size_t>(label));
    largest = std::max(largest, label);
  }
  own->classes =
      task_classes.empty() ? std::max(2, largest + 1) : static_cast<int>(task_classes.size());
  own->class_names.assign(task_classes.begin(), task_classes.end());
  out.own_ = std::move(own);
  return out;
}

}  // namespace fedldp
