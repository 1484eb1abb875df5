#include "fedldp/pipeline/flat.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "fedldp/base/limits.h"

namespace fedldp {

std::vector<std::uint32_t> SampleWithoutReplacement(std::size_t d, std::size_t k, Rng& rng) {
  std::vector<std::uint32_t> chosen;
  chosen.reserve(k);
  if (k * 4 >= d) {
    // Dense case: partial Fisher-Yates on the whole range.
    std::vector<std::uint32_t> all(d);
    for (std::size_t j = 0; j < d; ++j) all[j] = static_cast<std::uint32_t>(j);
    for (std::size_t i = 0; i < k; ++i) std::swap(all[i], all[i + UniformIndex(rng, d - i)]);
    chosen.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k));
  } else {
    // Floyd: for j = d-k .. d-1 pick t in [0, j]; take t unless taken, else j.
    std::unordered_set<std::uint32_t> taken;
    for (std::size_t j = d - k; j < d; ++j) {
      const auto t = static_cast<std::uint32_t>(UniformIndex(rng, j + 1));
      const auto pick = taken.count(t) ? static_cast<std::uint32_t>(j) : t;
      taken.insert(pick);
      chosen.push_back(pick);
    }
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

std::size_t FlatRandomizer::DefaultK(double epsilon, std::size_t d) {
  const double k = std::floor(epsilon / 2.5);
  return static_cast<std::size_t>(std::max(1.0, std::min(static_cast<double>(d), k)));
}

Result<FlatRandomizer> FlatRandomizer::Create(ValueMechanismKind mechanism, double epsilon,
                                              std::size_t d, std::optional<std::size_t> k) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kDimension, d));
  const std::size_t kk = k.value_or(DefaultK(epsilon, d));
  if (kk < 1 || kk > d) {
    return Error{"k must be in [1, d] = [1, " + std::to_string(d) + "], got " + std::to_string(kk)};
  }
  if (mechanism == ValueMechanismKind::kTwoPoint)
    return Error{"the flat solution perturbs values in [-1, 1]: use duchi"};
  auto m = MakeValueMechanism(mechanism, epsilon / static_cast<double>(kk));
  if (!m.ok()) return Error{m.error()};
  return FlatRandomizer(std::move(m).value(), epsilon, d, kk);
}

FlatRandomizer::FlatRandomizer(std::shared_ptr<const ValueMechanism> m, double epsilon,
                               std::size_t d, std::size_t k)
    : mechanism_(std::move(m)), epsilon_(epsilon), d_(d), k_(k) {}

SparseReport FlatRandomizer::Randomize(std::span<const double> x, Rng& rng) const {
  SparseReport report;
  report.index = SampleWithoutReplacement(d_, k_, rng);
  report.value.reserve(k_);
  for (std::uint32_t j : report.index) report.value.push_back(mechanism_->Sample(x[j], rng));
  return report;
}

bool FlatRandomizer::Validate(const SparseReport& report) const {
  if (report.index.size() != k_ || report.value.size() != k_) return false;
  for (std::size_t i = 0; i < k_; ++i) {
    if (report.index[i] >= d_ || (i > 0 && report.index[i] <= report.index[i - 1])) return false;
    if (!mechanism_->CanOutput(report.value[i])) return false;
  }
  return true;
}

double FlatRandomizer::Likelihood(const SparseReport& report, std::span<const double> x) const {
  if (!Validate(report)) return 0.0;
  // 1 / C(d, k), in logs.
  double log_set = std::lgamma(static_cast<double>(k_) + 1) +
                   std::lgamma(static_cast<double>(d_ - k_) + 1) -
                   std::lgamma(static_cast<double>(d_) + 1);
  double likelihood = std::exp(log_set);
  for (std::size_t i = 0; i < k_; ++i) {
    likelihood *= mechanism_->Likelihood(report.value[i], x[report.index[i]]);
  }
  return likelihood;
}

double FlatRandomizer::CoordinateVariance(double xj) const {
  const double x = mechanism_->Clip(xj);
  return scale() * (mechanism_->Variance(x) + x * x) - x * x;
}

FlatAggregator::FlatAggregator(const FlatRandomizer& randomizer)
    : randomizer_(randomizer), sum_(randomizer.dimension(), 0.0) {}

bool FlatAggregator::Add(const SparseReport& report) {
  if (!randomizer_.Validate(report)) return false;
  for (std::size_t i = 0; i < report.index.size(); ++i) {
    sum_[report.index[i]] += randomizer_.scale() * report.value[i];
  }
  ++count_;
  return true;
}

std::vector<double> FlatAggregator::Estimate() const {
  std::vector<double> mean(sum_.size(), 0.0);
  if (count_ == 0) return mean;
  for (std::size_t j = 0; j < sum_.size(); ++j) mean[j] = sum_[j] / static_cast<double>(count_);
  return mean;
}

}  // namespace fedldp
