// A FedSel deployment's report method, both sides of it: a two-stage
// variant (select, then perturb, on the gradient a user accumulated) or a
// vector randomizer on the whole gradient. The participant randomizes and
// encodes with it; the coordinator gates, adds and averages with it; neither
// asks which it holds. Make is the one place that does.
#ifndef FEDLDP_SRC_NET_FEDSEL_METHOD_H_
#define FEDLDP_SRC_NET_FEDSEL_METHOD_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/random/rng.h"
#include "fedldp/wire/report_codec.h"

namespace fedldp::net_internal {

class FedSelMethod {
 public:
  virtual ~FedSelMethod() = default;
  // The method of the plan's variant in d dimensions, or why the deployment
  // cannot serve it.
  static Result<std::unique_ptr<FedSelMethod>> Make(const FedSelPlan& plan,
                                                    const FedSelConfig& config, std::size_t d);

  // Client: whether a user keeps an accumulated vector between reports.
  virtual bool keeps_state() const = 0;
  // Client: a user's report of `gradient`, encoded for `round`; its
  // accumulated vector (keeps_state) and a scratch vector, d values each.
  virtual std::string Report(std::uint64_t round, std::span<double> accumulated,
                             std::span<double> previous, std::span<double> gradient,
                             Rng& rng) const = 0;

  // Server: the gate a round's reports pass, and the round's estimate of
  // the mean gradient from the reports it admitted.
  virtual ReportGate Gate(std::uint64_t round) const = 0;
  virtual void Reset() = 0;  // a round opens
  virtual void Add(const DecodedReport& report) = 0;
  virtual std::vector<double> Mean() const = 0;
};

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_FEDSEL_METHOD_H_
