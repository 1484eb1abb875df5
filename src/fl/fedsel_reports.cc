#include "fedsel_reports.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "fedldp/pipeline/compressed.h"
#include "fedldp/pipeline/fedsel.h"
#include "fedldp/pipeline/flat.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp::fl_internal {

void SlotReports::Put(std::string&, std::size_t) const {}
void SlotReports::Get(Reader&, std::size_t) {}
bool SlotReports::Valid(std::span<const double>) const { return true; }
std::size_t SlotReports::Aggregate(std::size_t, std::vector<double>&) { return 0; }

namespace {

// The noise-free reference: the gradient itself.
class FullGradientReports final : public SlotReports {
 public:
  bool dense() const override { return true; }
  void Randomize(const ReportSlot&, std::span<double>, CounterRng&) override {}
};

// A vector randomizer on the whole gradient.
class VectorSlotReports final : public SlotReports {
 public:
  explicit VectorSlotReports(std::unique_ptr<VectorRandomizer> randomizer)
      : randomizer_(std::move(randomizer)) {}
  bool dense() const override { return true; }
  void Randomize(const ReportSlot&, std::span<double> g, CounterRng& rng) override {
    const std::vector<double> clean(g.begin(), g.end());
    randomizer_->Randomize(clean, g, rng);
  }
  bool Valid(std::span<const double> report) const override {
    return randomizer_->ValidateReport(report).ok();
  }

 private:
  const std::unique_ptr<VectorRandomizer> randomizer_;
};

// The flat and compressed baselines: sparse reports, one per slot.
template <typename Randomizer, typename Aggregator>
class SparseSlotReports final : public SlotReports {
 public:
  SparseSlotReports(Randomizer randomizer, std::size_t slots)
      : randomizer_(std::move(randomizer)), reports_(slots) {}
  void Randomize(const ReportSlot& at, std::span<double> g, CounterRng& rng) override {
    reports_[at.slot] = randomizer_.Randomize(g, rng);
  }
  void Put(std::string& out, std::size_t slot) const override {
    PutVector(out, reports_[slot].index);
    PutVector(out, reports_[slot].value);
  }
  void Get(Reader& in, std::size_t slot) override {
    in.GetVector(reports_[slot].index);
    in.GetVector(reports_[slot].value);
  }
  std::size_t Aggregate(std::size_t m, std::vector<double>& mean) override {
    Aggregator aggregator(randomizer_);
    std::size_t rejected = 0;
    for (std::size_t s = 0; s < m; ++s) rejected += !aggregator.Add(reports_[s]);
    mean = aggregator.Estimate();
    return rejected;
  }

 private:
  const Randomizer randomizer_;
  std::vector<SparseReport> reports_;
};

// FedSel's two stages (select one of the Top-k, perturb its value), on the
// gradient accumulated since the client last reported it (or, np-rs, on the
// fresh gradient with no state).
class TwoStageSlotReports final : public SlotReports {
 public:
  TwoStageSlotReports(FedSelRandomizer randomizer, const FedSelConfig& config,
                      const SlotShape& shape)
      : randomizer_(std::move(randomizer)),
        variant_(config.variant),
        scale_(variant_.scaled_accumulation ? config.learning_rate : 1.0),
        momentum_(config.momentum),
        d_(shape.d),
        first_owned_(shape.owned.first),
        accumulated_((shape.owned.second - shape.owned.first) * shape.d, 0.0),
        previous_(shape.rows * shape.d),
        reports_(shape.slots) {}
  void Randomize(const ReportSlot& at, std::span<double> g, CounterRng& rng) override {
    if (!variant_.accumulate) {
      reports_[at.slot] = randomizer_.Randomize(g, g, 0.0, rng);
      return;
    }
    reports_[at.slot] = FedSelClientStep(
        {accumulated_.data() + (at.client - first_owned_) * d_, d_},
        {previous_.data() + at.row * d_, d_}, g, scale_, randomizer_, momentum_, rng);
  }
  void Put(std::string& out, std::size_t slot) const override {
    fl_internal::Put(out, reports_[slot].index);
    fl_internal::Put(out, reports_[slot].value);
  }
  void Get(Reader& in, std::size_t slot) override {
    reports_[slot].index = in.Get<std::int64_t>();
    reports_[slot].value = in.Get<double>();
  }
  std::size_t Aggregate(std::size_t m, std::vector<double>& mean) override {
    FedSelAggregator aggregator(randomizer_, d_);
    for (std::size_t s = 0; s < m; ++s) aggregator.Add(reports_[s]);
    mean = aggregator.Mean();
    return aggregator.rejected();
  }

 private:
  const FedSelRandomizer randomizer_;
  const FedSelVariant variant_;
  const double scale_, momentum_;
  const std::size_t d_, first_owned_;
  std::vector<double> accumulated_;  // r of every client this process owns
  std::vector<double> previous_;     // per scratch row
  std::vector<FedSelReport> reports_;
};

}  // namespace

Result<std::unique_ptr<SlotReports>> MakeSlotReports(const FedSelPlan& plan,
                                                     const FedSelConfig& config,
                                                     const SlotShape& shape, std::uint64_t seed) {
  using Kind = FedSelVariant::Kind;
  const FedSelVariant& variant = plan.variant;
  const double eps_value = plan.budget.value_epsilon;
  const std::size_t d = shape.d;
  switch (variant.kind) {
    case Kind::kTwoStage: {
      FEDLDP_ASSIGN_OR_RETURN(auto r, MakeFedSelRandomizer(plan, d));
      return std::unique_ptr<SlotReports>(new TwoStageSlotReports(std::move(r), config, shape));
    }
    case Kind::kFlat: {
      FEDLDP_ASSIGN_OR_RETURN(auto r, FlatRandomizer::Create(*variant.mechanism, eps_value, d));
      return std::unique_ptr<SlotReports>(
          new SparseSlotReports<FlatRandomizer, FlatAggregator>(std::move(r), shape.slots));
    }
    case Kind::kCompressed: {
      const auto q = std::max<std::size_t>(
          1, static_cast<std::size_t>(std::llround(config.projection_ratio * d)));
      FEDLDP_ASSIGN_OR_RETURN(
          auto r, CompressedRandomizer::Create(*variant.mechanism, eps_value, d, q, seed));
      return std::unique_ptr<SlotReports>(
          new SparseSlotReports<CompressedRandomizer, CompressedAggregator>(std::move(r),
                                                                            shape.slots));
    }
    case Kind::kVector: {
      FEDLDP_ASSIGN_OR_RETURN(auto r, MakeFedSelVectorRandomizer(plan, config, d, seed));
      return std::unique_ptr<SlotReports>(new VectorSlotReports(std::move(r)));
    }
    case Kind::kFullGradient:
      break;
  }
  return std::unique_ptr<SlotReports>(new FullGradientReports());
}

}  // namespace fedldp::fl_internal
