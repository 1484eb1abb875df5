// FedSel's methods as one pair each, client to server: a randomizer that
// turns a client's gradient into the report of its slot in the round, and
// the server's side that validates and averages the slots. The two-stage
// variants (select, then perturb, with accumulation), the flat and
// compressed baselines, the vector randomizers and the noise-free full
// gradient each have one; MakeSlotReports, once per run, is the only place
// that asks a variant's kind. The simulator's trainer loops over the pair.
#ifndef FEDLDP_FL_FEDSEL_REPORTS_H_
#define FEDLDP_FL_FEDSEL_REPORTS_H_

#include <cstddef>
#include <memory>
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
Result<std::unique_ptr<SlotReports>> MakeSlotReports(const FedSelPlan& plan,
                                                     const FedSelConfig& config,
                                                     const SlotShape& shape, std::uint64_t seed);

}  // namespace fedldp::fl_internal

#endif  // FEDLDP_FL_FEDSEL_REPORTS_H_
