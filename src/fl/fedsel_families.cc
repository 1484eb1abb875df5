#include "fedsel_families.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <span>
#include <string_view>
#include <utility>

#include "fedldp/base/names.h"
#include "fedldp/mechanism/value_mechanism.h"
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

using Kind = FedSelVariant::Kind;

// The scalar mechanisms FedSel perturbs a value in [-1, 1] with.
std::optional<ValueMechanismKind> VariantMechanism(std::string_view s) {
  if (s == "pm") return ValueMechanismKind::kPiecewise;
  if (s == "hm") return ValueMechanismKind::kHybrid;
  if (s == "duchi") return ValueMechanismKind::kDuchi;
  return std::nullopt;
}

std::string MechanismName(const FedSelVariant& v) {
  return v.mechanism ? std::string(ValueMechanismName(*v.mechanism)) : "?";
}

template <typename Reports, typename... Args>
Result<std::unique_ptr<SlotReports>> Made(Args&&... args) {
  return std::unique_ptr<SlotReports>(new Reports(std::forward<Args>(args)...));
}

// np: the full gradient, no noise.
class FullGradientFamily final : public FedSelFamily {
 public:
  Kind kind() const override { return Kind::kFullGradient; }
  std::optional<Result<FedSelVariant>> Parse(const std::string& name) const override {
    if (name != "np") return std::nullopt;
    FedSelVariant v;
    v.kind = kind(), v.mechanism = std::nullopt;
    return v;
  }
  std::string Name(const FedSelVariant&) const override { return "np"; }
  std::string Names() const override { return "np"; }
  FedSelTraits Traits(const FedSelVariant&) const override { return {.is_reference = true}; }
  Result<std::unique_ptr<SlotReports>> Reports(const FedSelPlan&, const FedSelConfig&,
                                               const SlotShape&, std::uint64_t) const override {
    return Made<FullGradientReports>();
  }
};

// {selector}-{mechanism}[-c][-o]; false if `name` is not of that form.
bool ParseSelectThenPerturb(std::string rest, FedSelVariant& v) {
  bool selected = false;
  for (const SelectorKind selector :
       {SelectorKind::kPePublished, SelectorKind::kExp, SelectorKind::kPe, SelectorKind::kPs,
        SelectorKind::kUniform}) {
    const std::string prefix = std::string(SelectorName(selector)) + "-";
    if (rest.starts_with(prefix)) {
      v.selector = selector, selected = true;
      rest = rest.substr(prefix.size());
      break;
    }
  }
  const auto dash = rest.find('-');
  v.mechanism = VariantMechanism(rest.substr(0, dash));
  std::string flags = dash == std::string::npos ? "" : rest.substr(dash);
  while (!flags.empty()) {
    if (flags.starts_with("-c")) {
      v.control = true;
    } else if (flags.starts_with("-o")) {
      v.scaled_accumulation = true;
    } else {
      break;
    }
    flags = flags.substr(2);
  }
  return selected && v.mechanism && flags.empty();
}

// FedSel's two stages, and its noise-free selections np-rs, np-k, np-k-o.
class TwoStageFamily final : public FedSelFamily {
 public:
  Kind kind() const override { return Kind::kTwoStage; }
  std::optional<Result<FedSelVariant>> Parse(const std::string& name) const override {
    FedSelVariant v;
    if (name == "np-rs") {
      v.selector = SelectorKind::kUniform, v.mechanism = std::nullopt, v.accumulate = false;
      return v;
    }
    if (name == "np-k" || name == "np-k-o") {
      v.selector = SelectorKind::kTopK, v.mechanism = std::nullopt;
      v.scaled_accumulation = name == "np-k-o";
      return v;
    }
    if (!ParseSelectThenPerturb(name, v)) return std::nullopt;
    if (v.selector == SelectorKind::kUniform) {
      if (v.control) {
        return Result<FedSelVariant>(Error{
            "variant '" + name + "': uniform selection spends no budget, so -c means nothing"});
      }
      v.enlarge_uniform = false;
    }
    return v;
  }
  std::string Name(const FedSelVariant& v) const override {
    if (!v.mechanism) {
      if (v.selector == SelectorKind::kUniform) return "np-rs";
      if (v.selector == SelectorKind::kTopK) return v.scaled_accumulation ? "np-k-o" : "np-k";
      return "?";
    }
    return std::string(SelectorName(v.selector)) + "-" + MechanismName(v) +
           (v.control ? "-c" : "") + (v.scaled_accumulation ? "-o" : "");
  }
  std::string Names() const override {
    return "np-rs, np-k, np-k-o, {exp,pe,ps}-{pm,hm,duchi} with optional -c and -o, "
           "uniform-{pm,hm,duchi}";
  }
  FedSelTraits Traits(const FedSelVariant& v) const override {
    return {.is_private = v.mechanism.has_value(), .selects = true};
  }
  std::string FloatingPoint(const FedSelVariant&) const override {
    return FloatingPointStatement(std::nullopt, ", and so is the selected index (one of d)");
  }
  // Uniform selection spends no budget: eps' goes to the value.
  bool SpendsSelection(const FedSelVariant& v) const override {
    return v.mechanism.has_value() && v.selector != SelectorKind::kUniform;
  }
  // A private variant with eps1 = 0 (mu = 0, which the automatic rule gives
  // for small budgets) may only select data-independently: uniform sampling
  // is the one selection that spends nothing.
  Status Complete(const FedSelConfig&, FedSelPlan& plan) const override {
    const FedSelVariant& v = plan.variant;
    plan.selector =
        v.mechanism && plan.budget.select_epsilon <= 0 ? SelectorKind::kUniform : v.selector;
    return {};
  }
  Result<std::unique_ptr<SlotReports>> Reports(const FedSelPlan& plan, const FedSelConfig& config,
                                               const SlotShape& shape,
                                               std::uint64_t) const override {
    FEDLDP_ASSIGN_OR_RETURN(auto r, MakeFedSelRandomizer(plan, shape.d));
    return Made<TwoStageSlotReports>(std::move(r), config, shape);
  }
};

// The flat solution (Wang et al.): one coordinate at eps', enlarged by d.
class FlatFamily final : public FedSelFamily {
 public:
  Kind kind() const override { return Kind::kFlat; }
  std::optional<Result<FedSelVariant>> Parse(const std::string& name) const override {
    const auto m = VariantMechanism(name);
    if (!m) return std::nullopt;
    FedSelVariant v;
    v.kind = kind(), v.mechanism = m;
    return v;
  }
  std::string Name(const FedSelVariant& v) const override { return MechanismName(v); }
  std::string Names() const override { return "pm, hm, duchi"; }
  FedSelTraits Traits(const FedSelVariant& v) const override {
    return {.is_private = v.mechanism.has_value()};
  }
  Result<std::unique_ptr<SlotReports>> Reports(const FedSelPlan& plan, const FedSelConfig&,
                                               const SlotShape& shape,
                                               std::uint64_t) const override {
    FEDLDP_ASSIGN_OR_RETURN(auto r, FlatRandomizer::Create(*plan.variant.mechanism,
                                                           plan.budget.value_epsilon, shape.d));
    return Made<SparseSlotReports<FlatRandomizer, FlatAggregator>>(std::move(r), shape.slots);
  }
};

// The compressed solution: a random projection to q = ratio d, then flat.
class CompressedFamily final : public FedSelFamily {
 public:
  Kind kind() const override { return Kind::kCompressed; }
  std::optional<Result<FedSelVariant>> Parse(const std::string& name) const override {
    if (name.size() <= 3 || !name.ends_with("-rp")) return std::nullopt;
    const auto m = VariantMechanism(std::string_view(name).substr(0, name.size() - 3));
    if (!m) return std::nullopt;
    FedSelVariant v;
    v.kind = kind(), v.mechanism = m;
    return v;
  }
  std::string Name(const FedSelVariant& v) const override { return MechanismName(v) + "-rp"; }
  std::string Names() const override { return "pm-rp"; }
  FedSelTraits Traits(const FedSelVariant& v) const override {
    return {.is_private = v.mechanism.has_value()};
  }
  Result<std::unique_ptr<SlotReports>> Reports(const FedSelPlan& plan, const FedSelConfig& config,
                                               const SlotShape& shape,
                                               std::uint64_t seed) const override {
    const auto q = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(config.projection_ratio * shape.d)));
    FEDLDP_ASSIGN_OR_RETURN(
        auto r, CompressedRandomizer::Create(*plan.variant.mechanism, plan.budget.value_epsilon,
                                             shape.d, q, seed));
    return Made<SparseSlotReports<CompressedRandomizer, CompressedAggregator>>(std::move(r),
                                                                               shape.slots);
  }
};

// The vector randomizer of a kVector variant at eps per report.
VectorRandomizerConfig VectorConfigFor(const FedSelVariant& variant, const FedSelConfig& config,
                                       double epsilon, std::size_t d, std::uint64_t seed) {
  VectorRandomizerConfig vc;
  vc.mechanism = variant.vector;
  vc.dimension = d;
  vc.epsilon = epsilon;
  vc.clip = config.clip;
  vc.delta = vc.mechanism.traits().needs_delta ? config.delta : 0.0;
  vc.k = vc.mechanism.traits().takes_k ? config.projection_k : 0;
  vc.public_seed = seed;
  return vc;
}

// Every registered vector randomizer on the whole gradient (beyond the
// paper, issue 20); vector duchi is "twopoint" ("duchi" names the flat
// solution): LDP-FL's randomizer on the whole gradient, the per-weight
// two-point mechanism with c = 0, r = C on every coordinate at eps/d each,
// so its honest total is the eps asked for.
class VectorFamily final : public FedSelFamily {
 public:
  Kind kind() const override { return Kind::kVector; }
  std::optional<Result<FedSelVariant>> Parse(const std::string& name) const override {
    FedSelVariant v;
    v.kind = kind();
    if (name == "twopoint") {
      v.vector = VectorMechanism::kDuchi;
      return v;
    }
    const auto vm = ParseVectorMechanism(name);
    if (!vm.ok() || *vm == VectorMechanism::kDuchi) return std::nullopt;
    v.vector = *vm;
    return v;
  }
  std::string Name(const FedSelVariant& v) const override {
    return v.vector == VectorMechanism::kDuchi ? "twopoint"
                                               : std::string(VectorMechanismName(v.vector));
  }
  std::string Names() const override { return Listed(FedSelVectorVariantNames(), ", "); }
  FedSelTraits Traits(const FedSelVariant& v) const override {
    return {.is_private = true, .whole_vector = true, .needs_delta = v.vector.traits().needs_delta};
  }
  std::string FloatingPoint(const FedSelVariant& v) const override {
    return FloatingPointStatement(v.vector);
  }
  Status Complete(const FedSelConfig& config, FedSelPlan& plan) const override {
    const Status s =
        VectorConfigFor(plan.variant, config, plan.budget.value_epsilon, plan.dimension, 0)
            .Validate();
    if (!s.ok()) return Error{"variant " + Name(plan.variant) + ": " + s.error()};
    return {};
  }
  void Defaults(FedSelConfig& c) const override;
  void StatePrivacy(const FedSelPlan& plan, const FedSelConfig& config,
                    RunPrivacyConfig& run) const override {
    run.report_deviation =
        MakeFedSelVectorRandomizer(plan, config, plan.dimension, 0).value()->deviation();
  }
  Result<std::unique_ptr<SlotReports>> Reports(const FedSelPlan& plan, const FedSelConfig& config,
                                               const SlotShape& shape,
                                               std::uint64_t seed) const override {
    FEDLDP_ASSIGN_OR_RETURN(auto r, MakeFedSelVectorRandomizer(plan, config, shape.d, seed));
    return Made<VectorSlotReports>(std::move(r));
  }
};

void VectorFamily::Defaults(FedSelConfig& c) const {
  // The winners of `fedldp tune --variant V` on adult-train at eps = 2
  // (DefaultGrid, 3 splits holding out 20 %, score = mean - sd;
  // docs/frontier.md). Validation accuracy in the comments.
  struct Tuned {
    const char* variant;
    double lr, batch_fraction, clip;
  };
  static constexpr Tuned kTuned[] = {
      {"privunitg", 2, 0.1, 2},           // 81.35 %
      {"fastprojunit", 16, 0.2, 2},       // 81.27 %
      {"fastprojunit-corr", 8, 0.1, 1},   // 81.13 %
      {"gaussian", 2, 0.1, 0.5},          // 76.37 % (majority 76.0 %)
      {"gaussian-classic", 4, 0.2, 0.5},  // 76.31 %
      {"twopoint", 0.5, 0.2, 0.5},        // 52.25 %: learns nothing at eps/d
  };
  c.tail_average = 0.5;
  c.even_rounds = true;
  // A seeded form draws its twin's law: the same defaults.
  const std::string_view law = c.variant.vector.kind().law_of;
  const std::string name = law.empty() ? Name(c.variant) : std::string(law);
  for (const Tuned& t : kTuned) {
    if (name == t.variant) {
      c.learning_rate = t.lr;
      c.batch_fraction = t.batch_fraction;
      c.clip = t.clip;
    }
  }
}

const FullGradientFamily kFullGradient;
const TwoStageFamily kTwoStage;
const FlatFamily kFlat;
const CompressedFamily kCompressed;
const VectorFamily kVector;
// The registry: names are tried in this order.
const FedSelFamily* const kFamilies[] = {&kFullGradient, &kTwoStage, &kFlat, &kCompressed,
                                         &kVector};

}  // namespace

std::string FedSelFamily::FloatingPoint(const FedSelVariant&) const {
  return FloatingPointStatement(std::nullopt);
}

std::span<const FedSelFamily* const> FedSelFamilies() { return kFamilies; }

const FedSelFamily& FamilyOf(const FedSelVariant& variant) {
  for (const FedSelFamily* family : kFamilies) {
    if (family->kind() == variant.kind) return *family;
  }
  return kTwoStage;  // unreachable: every kind is registered
}

}  // namespace fedldp::fl_internal

namespace fedldp {

using fl_internal::FamilyOf;

Result<FedSelVariant> ParseFedSelVariant(std::string_view raw) {
  std::string name(raw);
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> names;
  for (const fl_internal::FedSelFamily* family : fl_internal::FedSelFamilies()) {
    if (auto v = family->Parse(name)) return *v;
    names.push_back(family->Names());
  }
  names.back() = "or " + names.back();
  return Error{"unknown variant '" + std::string(raw) + "' (" + Listed(names, ", ") + ")"};
}

std::string FedSelVariantName(const FedSelVariant& v) { return FamilyOf(v).Name(v); }

FedSelTraits TraitsOf(const FedSelVariant& variant) { return FamilyOf(variant).Traits(variant); }

bool FedSelVariant::is_private() const { return TraitsOf(*this).is_private; }

bool NeedsDelta(const FedSelVariant& variant) { return TraitsOf(variant).needs_delta; }

std::string FloatingPointStatement(const FedSelVariant& variant) {
  return FamilyOf(variant).FloatingPoint(variant);
}

std::vector<std::string> FedSelVectorVariantNames() {
  std::vector<std::string> names;
  for (const auto& name : VectorMechanismNames()) {
    FedSelVariant v;
    v.kind = FedSelVariant::Kind::kVector, v.vector = ParseVectorMechanism(name).value();
    names.push_back(FedSelVariantName(v));
  }
  return names;
}

FedSelConfig DefaultFedSelConfig(const FedSelVariant& variant) {
  FedSelConfig c;
  c.variant = variant;
  FamilyOf(variant).Defaults(c);
  return c;
}

FedSelConfig DefaultFedSelVariantConfig() {
  return DefaultFedSelConfig(ParseFedSelVariant(kDefaultFedSelVariant).value());
}

Result<FedSelRandomizer> MakeFedSelRandomizer(const FedSelPlan& plan, std::size_t d) {
  const FedSelVariant& v = plan.variant;
  if (!TraitsOf(v).selects || !plan.selector) {
    return Error{"variant '" + FedSelVariantName(v) +
                 "' is not a two-stage (select, then perturb) variant"};
  }
  const std::size_t k = v.selector == SelectorKind::kTopK ? 1 : plan.k;
  // topk and uniform ignore their epsilon, and "none" its value budget: pass
  // valid ones.
  const double eps_select = plan.budget.select_epsilon, eps_value = plan.budget.value_epsilon;
  const double select_eps = plan.selector == v.selector && eps_select > 0 ? eps_select : 1.0;
  return FedSelRandomizer::Create(*plan.selector, select_eps, d, k, v.mechanism,
                                  eps_value > 0 ? eps_value : 1.0, v.enlarge_uniform);
}

Result<std::unique_ptr<VectorRandomizer>> MakeFedSelVectorRandomizer(const FedSelPlan& plan,
                                                                     const FedSelConfig& config,
                                                                     std::size_t d,
                                                                     std::uint64_t public_seed) {
  if (!TraitsOf(plan.variant).whole_vector) {
    return Error{"variant '" + FedSelVariantName(config.variant) +
                 "' does not privatise the whole vector"};
  }
  return MakeVectorRandomizer(fl_internal::VectorConfigFor(
      plan.variant, config, plan.budget.value_epsilon, d, public_seed));
}

}  // namespace fedldp
