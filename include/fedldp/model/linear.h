// l2-regularised linear models with hand-written gradients: logistic
// regression and the linear SVM (hinge loss), labels y in {-1, +1} taken from
// dataset labels {0, 1}. No intercept (the paper's d counts features only;
// every encoding here has one-hot groups that can carry one).
//   logistic: L = log(1 + exp(-y w.x)) + lambda/2 |w|^2
//   hinge:    L = max(0, 1 - y w.x)    + lambda/2 |w|^2
// With K > 2 classes the weights are K vectors of d, class-major (w_k =
// w[k d, (k + 1) d)), and the model is multinomial (beyond the paper; MNIST):
//   logistic: L = -log softmax(W x)_y                       + lambda/2 |W|^2
//   hinge:    L = max(0, 1 + max_{k != y} w_k.x - w_y.x)    + lambda/2 |W|^2
//             (Crammer & Singer)
// The functions below tell the two apart by size: w.size() == x.size() is
// binary, w.size() == K x.size() has K classes.
// Gradients are brought into [-clip, clip]^d (FedSel: the value mechanism's
// input domain [-1, 1]) by coordinate-wise clipping (the default, as the paper
// says) or, optionally, by normalising to max_j |g_j| = clip: the direction
// at full scale, whatever the magnitude (a reading of "clipped" that the
// paper's numbers may reflect; see docs/fedsel.md).
#ifndef FEDLDP_MODEL_LINEAR_H_
#define FEDLDP_MODEL_LINEAR_H_

#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"

namespace fedldp {

enum class Loss { kLogistic, kHinge };
enum class GradientScaling { kClip, kNormalize };
Result<GradientScaling> ParseGradientScaling(const std::string& name);  // clip, normalize
std::string GradientScalingName(GradientScaling scaling);               // clip, normalize
Result<Loss> ParseLoss(const std::string& name);  // "logistic" / "lr", "svm" / "hinge"
std::string LossName(Loss loss);

// The number of weights of a linear model for `data`: d for a binary task,
// classes x d otherwise.
std::size_t LinearParameters(const Dataset& data);

struct LinearModel {
  fedldp::Loss loss = fedldp::Loss::kLogistic;
  double lambda = 1e-4;
  double clip = 1.0;
  GradientScaling scaling = GradientScaling::kClip;

  // g = clip(grad L(w; x, y)); y in {0, 1} (binary) or {0, ..., K - 1}.
  void Gradient(std::span<const double> w, std::span<const float> x, int y,
                std::span<double> g) const;
  double Objective(std::span<const double> w, std::span<const float> x, int y) const;
  static int Predict(std::span<const double> w, std::span<const float> x);
  // Fraction of `rows` of `data` predicted correctly (all rows if empty).
  static double Accuracy(std::span<const double> w, const Dataset& data,
                         std::span<const std::size_t> rows);
};

}  // namespace fedldp

#endif  // FEDLDP_MODEL_LINEAR_H_
