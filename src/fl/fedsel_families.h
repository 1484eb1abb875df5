// FedSel's families of variants, each registered once: the two-stage
// variants (select, then perturb, with accumulation), the flat and
// compressed baselines, the vector randomizers and the noise-free full
// gradient. A family reads and writes its variants' names, states their
// traits, completes their plan and makes their pair, client to server: a
// randomizer that turns a client's gradient into the report of its slot in
// the round, and the server's side that validates and averages the slots.
// The registry (FamilyOf) is the only code that asks a variant's kind; the
// simulator's trainer loops over the pair.
#ifndef FEDLDP_FL_FEDSEL_FAMILIES_H_
#define FEDLDP_FL_FEDSEL_FAMILIES_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "exchange.h"
#include "fedldp/base/status.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp::fl_internal {

// Where one client's report goes: its slot in the round, its scratch row in
// the chunk being computed, and the client.
struct ReportSlot {
  std::size_t slot = 0, row = 0, client = 0;
};

class SlotReports {
 public:
  virtual ~SlotReports() = default;
  // Dense reports replace the gradient in its scratch row (d values) and
  // are summed chunk by chunk; the others are kept per slot.
  virtual bool dense() const { return false; }
  // Client: the gradient g (the scratch row) into the report of `at`.
  virtual void Randomize(const ReportSlot& at, std::span<double> g, CounterRng& rng) = 0;
  // Across processes: a slot's report (not for dense ones, which travel as
  // their rows).
  virtual void Put(std::string& out, std::size_t slot) const;
  virtual void Get(Reader& in, std::size_t slot);
  // Server, dense: whether a report may count.
  virtual bool Valid(std::span<const double> report) const;
  // Server, per-slot reports: the mean of slots [0, m) into `mean`;
  // returns how many were refused.
  virtual std::size_t Aggregate(std::size_t m, std::vector<double>& mean);
};

// The pair of `plan`'s variant for a run in which this process computes
// the clients `owned` ([first, end)), in rounds of at most `slots` clients
// computed `rows` at a time, of d-dimensional gradients.
struct SlotShape {
  std::size_t d = 0, slots = 0, rows = 0;
  std::pair<std::size_t, std::size_t> owned;
};

class FedSelFamily {
 public:
  virtual ~FedSelFamily() = default;
  virtual FedSelVariant::Kind kind() const = 0;
  // The variant a lower-case name names in this family (an error if it is
  // of the family's form but means nothing); nullopt if not the family's.
  virtual std::optional<Result<FedSelVariant>> Parse(const std::string& name) const = 0;
  // v's name ("?" if its parts name none).
  virtual std::string Name(const FedSelVariant& v) const = 0;
  // The family's names, as the error on an unknown variant lists them.
  virtual std::string Names() const = 0;
  virtual FedSelTraits Traits(const FedSelVariant& v) const = 0;
  // FloatingPointStatement for the family's reports.
  virtual std::string FloatingPoint(const FedSelVariant& v) const;
  // Whether a report spends eps1 on a private selection (mu applies).
  virtual bool SpendsSelection(const FedSelVariant&) const { return false; }
  // The parts of the plan only the family knows, or why the plan fails.
  virtual Status Complete(const FedSelConfig&, FedSelPlan&) const { return {}; }
  // The configuration of a variant when nothing is said (config.variant set).
  virtual void Defaults(FedSelConfig&) const {}
  // What the accountant is told beyond the budget (PlanFedSel checked the plan).
  virtual void StatePrivacy(const FedSelPlan&, const FedSelConfig&, RunPrivacyConfig&) const {}
  // The pair of a run (see SlotShape).
  virtual Result<std::unique_ptr<SlotReports>> Reports(const FedSelPlan& plan,
                                                       const FedSelConfig& config,
                                                       const SlotShape& shape,
                                                       std::uint64_t seed) const = 0;
};

// The registered families, in the order names are tried, and the family of
// a variant.
std::span<const FedSelFamily* const> FedSelFamilies();
const FedSelFamily& FamilyOf(const FedSelVariant& variant);

}  // namespace fedldp::fl_internal

#endif  // FEDLDP_FL_FEDSEL_FAMILIES_H_
