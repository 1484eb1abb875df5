#include "fedldp/pipeline/compressed.h"

#include <algorithm>
#include <cmath>

#include "fedldp/base/limits.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp {

Result<CompressedRandomizer> CompressedRandomizer::Create(ValueMechanismKind mechanism,
                                                          double epsilon, std::size_t d,
                                                          std::size_t q,
                                                          std::uint64_t projection_seed) {
  FEDLDP_RETURN_IF_ERROR(CheckCount(kDimension, d));
  if (q < 1 || q > d || q > 4096) {
    return Error{"q must be in [1, min(d, 4096)], got " + std::to_string(q)};
  }
  if (mechanism == ValueMechanismKind::kTwoPoint)
    return Error{"the compressed solution perturbs values in [-1, 1]: use duchi"};
  auto m = MakeValueMechanism(mechanism, epsilon);
  if (!m.ok()) return Error{m.error()};
  return CompressedRandomizer(std::move(m).value(), d, q, projection_seed);
}

CompressedRandomizer::CompressedRandomizer(std::shared_ptr<const ValueMechanism> m, std::size_t d,
                                           std::size_t q, std::uint64_t seed)
    : mechanism_(std::move(m)), d_(d), q_(q), phi_(q * d), cholesky_(q * q, 0.0) {
  // Public: every party derives the same Phi from the seed.
  CounterRng rng(seed, /*stream=*/0x5052'4f4a);  // "PROJ"
  const double sd = 1.0 / std::sqrt(static_cast<double>(q));
  for (auto& v : phi_) v = sd * StandardNormal(rng);
  // Gram matrix G = Phi Phi^T and its Cholesky factor. Gaussian rows are
  // linearly independent with probability 1 when q <= d.
  std::vector<double> gram(q * q);
  for (std::size_t a = 0; a < q; ++a) {
    for (std::size_t b = 0; b <= a; ++b) {
      double s = 0;
      for (std::size_t j = 0; j < d; ++j) s += phi_[a * d + j] * phi_[b * d + j];
      gram[a * q + b] = gram[b * q + a] = s;
    }
  }
  for (std::size_t a = 0; a < q; ++a) {
    for (std::size_t b = 0; b <= a; ++b) {
      double s = gram[a * q + b];
      for (std::size_t c = 0; c < b; ++c) s -= cholesky_[a * q + c] * cholesky_[b * q + c];
      cholesky_[a * q + b] = a == b ? std::sqrt(s) : s / cholesky_[b * q + b];
    }
  }
}

std::vector<double> CompressedRandomizer::Project(std::span<const double> x) const {
  std::vector<double> y(q_, 0.0);
  for (std::size_t a = 0; a < q_; ++a) {
    double s = 0;
    for (std::size_t j = 0; j < d_; ++j) s += phi_[a * d_ + j] * x[j];
    y[a] = s;
  }
  return y;
}

std::vector<double> CompressedRandomizer::Recover(std::span<const double> y) const {
  // Solve L L^T z = y, then x = Phi^T z.
  std::vector<double> z(y.begin(), y.end());
  for (std::size_t a = 0; a < q_; ++a) {
    for (std::size_t c = 0; c < a; ++c) z[a] -= cholesky_[a * q_ + c] * z[c];
    z[a] /= cholesky_[a * q_ + a];
  }
  for (std::size_t a = q_; a-- > 0;) {
    for (std::size_t c = a + 1; c < q_; ++c) z[a] -= cholesky_[c * q_ + a] * z[c];
    z[a] /= cholesky_[a * q_ + a];
  }
  std::vector<double> x(d_, 0.0);
  for (std::size_t a = 0; a < q_; ++a) {
    for (std::size_t j = 0; j < d_; ++j) x[j] += phi_[a * d_ + j] * z[a];
  }
  return x;
}

SparseReport CompressedRandomizer::Randomize(std::span<const double> x, Rng& rng) const {
  const auto i = static_cast<std::uint32_t>(UniformIndex(rng, q_));
  double yi = 0;
  for (std::size_t j = 0; j < d_; ++j) yi += phi_[i * d_ + j] * x[j];
  return {{i}, {mechanism_->Sample(yi, rng)}};
}

bool CompressedRandomizer::Validate(const SparseReport& report) const {
  return report.index.size() == 1 && report.value.size() == 1 && report.index[0] < q_ &&
         mechanism_->CanOutput(report.value[0]);
}

double CompressedRandomizer::Likelihood(const SparseReport& report,
                                        std::span<const double> x) const {
  if (!Validate(report)) return 0.0;
  const std::uint32_t i = report.index[0];
  double yi = 0;
  for (std::size_t j = 0; j < d_; ++j) yi += phi_[i * d_ + j] * x[j];
  return mechanism_->Likelihood(report.value[0], yi) / static_cast<double>(q_);
}

CompressedAggregator::CompressedAggregator(const CompressedRandomizer& randomizer)
    : randomizer_(randomizer), sum_(randomizer.q(), 0.0) {}

bool CompressedAggregator::Add(const SparseReport& report) {
  if (!randomizer_.Validate(report)) return false;
  sum_[report.index[0]] += static_cast<double>(randomizer_.q()) * report.value[0];
  ++count_;
  return true;
}

std::vector<double> CompressedAggregator::ProjectedEstimate() const {
  std::vector<double> y(sum_.size(), 0.0);
  if (count_ == 0) return y;
  for (std::size_t a = 0; a < y.size(); ++a) y[a] = sum_[a] / static_cast<double>(count_);
  return y;
}

std::vector<double> CompressedAggregator::Estimate() const {
  return randomizer_.Recover(ProjectedEstimate());
}

}  // namespace fedldp
