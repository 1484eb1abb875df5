#include "fedsel_method.h"

#include <optional>
#include <utility>

#include "fedldp/pipeline/fedsel.h"
#include "fedldp/vector/vector_randomizer.h"
#include "served_randomizer.h"

namespace fedldp::net_internal {
namespace {

class TwoStageMethod final : public FedSelMethod {
 public:
  TwoStageMethod(FedSelRandomizer randomizer, const FedSelPlan& plan, const FedSelConfig& config,
                 std::size_t d)
      : randomizer_(std::move(randomizer)),
        accumulate_(plan.variant.accumulate),
        scale_(plan.variant.scaled_accumulation ? config.learning_rate : 1.0),
        momentum_(config.momentum),
        d_(d) {}
  bool keeps_state() const override { return true; }
  std::string Report(std::uint64_t round, std::span<double> accumulated, std::span<double> previous,
                     std::span<double> gradient, Rng& rng) const override {
    if (!accumulate_) {  // np-rs: the fresh gradient, no state
      return EncodeReport(round, randomizer_.Randomize(gradient, gradient, 0.0, rng));
    }
    return EncodeReport(round, FedSelClientStep(accumulated, previous, gradient, scale_,
                                                randomizer_, momentum_, rng));
  }
  ReportGate Gate(std::uint64_t round) const override { return ReportGate(round, randomizer_); }
  void Reset() override { aggregator_.emplace(randomizer_, d_); }
  void Add(const DecodedReport& report) override {
    aggregator_->Add(std::get<FedSelReport>(report));
  }
  std::vector<double> Mean() const override { return aggregator_->Mean(); }

 private:
  const FedSelRandomizer randomizer_;
  const bool accumulate_;
  const double scale_, momentum_;
  const std::size_t d_;
  std::optional<FedSelAggregator> aggregator_;
};

// The whole gradient, clipped and privatised; the server averages.
class VectorMethod final : public FedSelMethod {
 public:
  explicit VectorMethod(std::unique_ptr<VectorRandomizer> randomizer, std::size_t d)
      : randomizer_(std::move(randomizer)), d_(d) {}
  bool keeps_state() const override { return false; }
  std::string Report(std::uint64_t round, std::span<double>, std::span<double>,
                     std::span<double> gradient, Rng& rng) const override {
    return EncodeReport(round, DrawVectorReport(*randomizer_, gradient, rng));
  }
  ReportGate Gate(std::uint64_t round) const override { return ReportGate(round, *randomizer_); }
  void Reset() override {
    sum_.assign(d_, 0.0);
    count_ = 0;
  }
  void Add(const DecodedReport& report) override {
    const std::vector<double>& values = std::get<VectorReport>(report).values;
    for (std::size_t j = 0; j < values.size(); ++j) sum_[j] += values[j];
    ++count_;
  }
  std::vector<double> Mean() const override {
    std::vector<double> mean = sum_;
    for (double& v : mean) v /= static_cast<double>(count_);
    return mean;
  }

 private:
  const std::unique_ptr<const VectorRandomizer> randomizer_;
  const std::size_t d_;
  std::vector<double> sum_;  // the open round's admitted reports, summed
  std::size_t count_ = 0;
};

}  // namespace

Result<std::unique_ptr<FedSelMethod>> FedSelMethod::Make(const FedSelPlan& plan,
                                                         const FedSelConfig& config,
                                                         std::size_t d) {
  if (TraitsOf(plan.variant).whole_vector) {
    FEDLDP_RETURN_IF_ERROR(
        CheckServedRandomizer(plan.variant.vector, "variant " + FedSelVariantName(config.variant)));
    if (config.tail_average > 0) {
      return Error{"the deployment serves the last iterate: tail averaging is not in its state"};
    }
    auto vector = MakeFedSelVectorRandomizer(plan, config, d, 0);
    if (!vector.ok()) return Error{vector.error()};
    return std::unique_ptr<FedSelMethod>(new VectorMethod(std::move(vector).value(), d));
  }
  auto randomizer = MakeFedSelRandomizer(plan, d);
  if (!randomizer.ok()) {
    return Error{"the deployment runs two-stage and vector variants only: " + randomizer.error()};
  }
  return std::unique_ptr<FedSelMethod>(
      new TwoStageMethod(std::move(randomizer).value(), plan, config, d));
}

}  // namespace fedldp::net_internal
