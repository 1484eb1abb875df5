#include "fedldp/pipeline/fedsel.h"

#include <cmath>

namespace fedldp {

Result<FedSelRandomizer> FedSelRandomizer::Create(SelectorKind selector, double select_epsilon,
                                                  std::size_t d, std::size_t k,
                                                  std::optional<ValueMechanismKind> value_mechanism,
                                                  double value_epsilon, bool enlarge_uniform) {
  auto s = MakeSelector(selector, select_epsilon, d, k);
  if (!s.ok()) return Error{s.error()};
  std::shared_ptr<const ValueMechanism> m;
  if (value_mechanism) {
    if (*value_mechanism == ValueMechanismKind::kTwoPoint) {
      return Error{"FedSel perturbs values in [-1, 1]: use duchi"};
    }
    auto made = MakeValueMechanism(*value_mechanism, value_epsilon);
    if (!made.ok()) return Error{made.error()};
    m = std::move(made).value();
  }
  const double scale =
      selector == SelectorKind::kUniform && enlarge_uniform ? static_cast<double>(d) : 1.0;
  return FedSelRandomizer(std::move(s).value(), std::move(m), scale);
}

FedSelReport FedSelRandomizer::Randomize(std::span<const double> accumulated,
                                         std::span<const double> previous, double momentum,
                                         Rng& rng) const {
  const std::int64_t j = selector_->Select(accumulated, rng);
  if (j == Selector::kNone) return {};
  const auto jj = static_cast<std::size_t>(j);
  const double s = accumulated[jj] + momentum * previous[jj];
  return {j, mechanism_ ? mechanism_->Sample(s, rng) : s};
}

bool FedSelRandomizer::Validate(const FedSelReport& report) const {
  if (report.index == Selector::kNone) return selector_->NoneProbability() > 0 && report.value == 0;
  if (report.index < 0 || static_cast<std::size_t>(report.index) >= selector_->dimension()) {
    return false;
  }
  return mechanism_ ? mechanism_->CanOutput(report.value) : std::isfinite(report.value);
}

FedSelAggregator::FedSelAggregator(const FedSelRandomizer& randomizer, std::size_t d)
    : randomizer_(randomizer), sum_(d, 0.0) {}

bool FedSelAggregator::Add(const FedSelReport& report) {
  if (!randomizer_.Validate(report)) {
    ++rejected_;
    return false;
  }
  if (report.index >= 0) sum_[static_cast<std::size_t>(report.index)] += report.value;
  ++count_;
  return true;
}

std::vector<double> FedSelAggregator::Mean() const {
  std::vector<double> mean(sum_.size(), 0.0);
  if (count_ == 0) return mean;
  const double factor = randomizer_.scale() / static_cast<double>(count_);
  for (std::size_t j = 0; j < sum_.size(); ++j) mean[j] = sum_[j] * factor;
  return mean;
}

void FedSelAggregator::Reset() {
  std::fill(sum_.begin(), sum_.end(), 0.0);
  count_ = rejected_ = 0;
}

}  // namespace fedldp
