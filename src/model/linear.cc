#include "fedldp/model/linear.h"

#include <algorithm>
#include <cmath>

namespace fedldp {
namespace {

double Dot(std::span<const double> w, std::span<const float> x) {
  double s = 0;
  for (std::size_t j = 0; j < w.size(); ++j) s += w[j] * x[j];
  return s;
}

// The K = w.size() / x.size() class scores w_k.x.
std::vector<double> Scores(std::span<const double> w, std::span<const float> x) {
  const std::size_t d = x.size(), classes = d ? w.size() / d : 0;
  std::vector<double> z(classes);
  for (std::size_t k = 0; k < classes; ++k) z[k] = Dot(w.subspan(k * d, d), x);
  return z;
}

// The coefficients c_k of dL/dw_k = c_k x for the multinomial losses, and L.
double MulticlassCoefficients(Loss loss, std::span<const double> w, std::span<const float> x, int y,
                              std::vector<double>& c) {
  c = Scores(w, x);
  const auto label = static_cast<std::size_t>(y);
  if (loss == Loss::kLogistic) {
    double top = c[0];
    for (double z : c) top = std::fmax(top, z);
    double sum = 0;
    for (double z : c) sum += std::exp(z - top);
    const double log_sum = top + std::log(sum);
    const double data = log_sum - c[label];
    for (std::size_t k = 0; k < c.size(); ++k) c[k] = std::exp(c[k] - log_sum) - (k == label);
    return data;
  }
  std::size_t rival = label == 0 ? 1 : 0;
  for (std::size_t k = 0; k < c.size(); ++k) {
    if (k != label && c[k] > c[rival]) rival = k;
  }
  const double data = std::fmax(0.0, 1 + c[rival] - c[label]);
  std::fill(c.begin(), c.end(), 0.0);
  if (data > 0) c[rival] = 1, c[label] = -1;
  return data;
}

}  // namespace

Result<Loss> ParseLoss(const std::string& name) {
  if (name == "logistic" || name == "lr") return Loss::kLogistic;
  if (name == "svm" || name == "hinge") return Loss::kHinge;
  return Error{"unknown model '" + name + "' (expected logistic or svm)"};
}

std::string LossName(Loss loss) { return loss == Loss::kLogistic ? "logistic" : "svm"; }

std::size_t LinearParameters(const Dataset& data) {
  return data.classes > 2 ? static_cast<std::size_t>(data.classes) * data.dimension
                          : data.dimension;
}

void LinearModel::Gradient(std::span<const double> w, std::span<const float> x, int y,
                           std::span<double> g) const {
  // dL/dw_k = c_k x: one coefficient per class (one in all for binary). The
  // binary one lives on the stack: this runs once per client update, where a
  // heap allocation costs as much as the arithmetic.
  double binary = 0;
  thread_local std::vector<double> multiclass;
  std::span<const double> coefficients(&binary, 1);
  if (w.size() == x.size()) {
    const double sign = y == 1 ? 1.0 : -1.0;
    const double margin = sign * Dot(w, x);
    // dL/d(margin), times -y for d/dw.
    if (loss == Loss::kLogistic) {
      binary = -sign / (1 + std::exp(margin));  // -y sigma(-y w.x)
    } else {
      binary = margin < 1 ? -sign : 0.0;
    }
  } else {
    MulticlassCoefficients(loss, w, x, y, multiclass);
    coefficients = multiclass;
  }
  const std::size_t d = x.size();
  for (std::size_t k = 0; k < coefficients.size(); ++k) {
    const double c = coefficients[k];
    const std::size_t offset = k * d;
    for (std::size_t j = 0; j < d; ++j) g[offset + j] = c * x[j] + lambda * w[offset + j];
  }
  if (scaling == GradientScaling::kClip) {
    for (std::size_t j = 0; j < w.size(); ++j) g[j] = std::clamp(g[j], -clip, clip);
    return;
  }
  double top = 0;
  for (std::size_t j = 0; j < w.size(); ++j) top = std::fmax(top, std::fabs(g[j]));
  if (top > 0) {
    for (std::size_t j = 0; j < w.size(); ++j) g[j] *= clip / top;
  }
}

std::string GradientScalingName(GradientScaling scaling) {
  return scaling == GradientScaling::kClip ? "clip" : "normalize";
}

Result<GradientScaling> ParseGradientScaling(const std::string& name) {
  if (name == "clip") return GradientScaling::kClip;
  if (name == "normalize") return GradientScaling::kNormalize;
  return Error{"gradient scaling must be clip or normalize, got '" + name + "'"};
}

double LinearModel::Objective(std::span<const double> w, std::span<const float> x, int y) const {
  double norm = 0;
  for (double v : w) norm += v * v;
  double data;
  if (w.size() == x.size()) {
    const double margin = (y == 1 ? 1.0 : -1.0) * Dot(w, x);
    data = loss == Loss::kLogistic ? std::log1p(std::exp(-margin)) : std::fmax(0.0, 1 - margin);
  } else {
    std::vector<double> unused;
    data = MulticlassCoefficients(loss, w, x, y, unused);
  }
  return data + lambda / 2 * norm;
}

int LinearModel::Predict(std::span<const double> w, std::span<const float> x) {
  if (w.size() == x.size()) return Dot(w, x) > 0 ? 1 : 0;
  const std::vector<double> z = Scores(w, x);
  return static_cast<int>(std::max_element(z.begin(), z.end()) - z.begin());
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
