#include "fedldp/model/linear.h"

#include <cmath>

namespace fedldp {
namespace {

double Dot(std::span<const double> w, std::span<const float> x) {
  double s = 0;
  for (std::size_t j = 0; j < w.size(); ++j) s += w[j] * x[j];
  return s;
}

}  // namespace

Result<Loss> ParseLoss(const std::string& name) {
  if (name == "logistic" || name == "lr") return Loss::kLogistic;
  if (name == "svm" || name == "hinge") return Loss::kHinge;
  return Error{"unknown model '" + name + "' (expected logistic or svm)"};
}

std::string LossName(Loss loss) { return loss == Loss::kLogistic ? "logistic" : "svm"; }

void LinearModel::Gradient(std::span<const double> w, std::span<const float> x, int y,
                           std::span<double> g) const {
  const double sign = y == 1 ? 1.0 : -1.0;
  const double margin = sign * Dot(w, x);
  // dL/d(margin), times -y for d/dw.
  double coefficient;
  if (loss == Loss::kLogistic) {
    coefficient = -sign / (1 + std::exp(margin));  // -y sigma(-y w.x)
  } else {
    coefficient = margin < 1 ? -sign : 0.0;
  }
  if (scaling == GradientScaling::kClip) {
    for (std::size_t j = 0; j < w.size(); ++j) {
      const double v = coefficient * x[j] + lambda * w[j];
      g[j] = v > clip ? clip : (v < -clip ? -clip : v);
    }
    return;
  }
  double top = 0;
  for (std::size_t j = 0; j < w.size(); ++j) {
    g[j] = coefficient * x[j] + lambda * w[j];
    top = std::fmax(top, std::fabs(g[j]));
  }
  if (top > 0) {
    for (std::size_t j = 0; j < w.size(); ++j) g[j] *= clip / top;
  }
}

Result<GradientScaling> ParseGradientScaling(const std::string& name) {
  if (name == "clip") return GradientScaling::kClip;
  if (name == "normalize") return GradientScaling::kNormalize;
  return Error{"gradient scaling must be clip or normalize, got '" + name + "'"};
}

double LinearModel::Objective(std::span<const double> w, std::span<const float> x, int y) const {
  const double margin = (y == 1 ? 1.0 : -1.0) * Dot(w, x);
  double norm = 0;
  for (double v : w) norm += v * v;
  const double data =
      loss == Loss::kLogistic ? std::log1p(std::exp(-margin)) : std::fmax(0.0, 1 - margin);
  return data + lambda / 2 * norm;
}

int LinearModel::Predict(std::span<const double> w, std::span<const float> x) {
  return Dot(w, x) > 0 ? 1 : 0;
}

double LinearModel::Accuracy(std::span<const double> w, const Dataset& data,
                             std::span<const std::size_t> rows) {
  std::size_t correct = 0, total = 0;
  auto check = [&](std::size_t i) {
    correct += Predict(w, data.row(i)) == data.labels[i];
    ++total;
  };
  if (rows.empty()) {
    for (std::size_t i = 0; i < data.size(); ++i) check(i);
  } else {
    for (std::size_t i : rows) check(i);
  }
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

}  // namespace fedldp
