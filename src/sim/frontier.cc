#include "fedldp/sim/frontier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "fedldp/privacy/run_accounting.h"

namespace fedldp {

std::vector<FedSelVariant> FrontierMethods() {
  std::vector<FedSelVariant> methods;
  for (const char* name : {"ps-pm", "pm", "twopoint", "gaussian", "privunitg", "fastprojunit"}) {
    methods.push_back(ParseFedSelVariant(name).value());
  }
  return methods;
}

Status FrontierConfig::Validate() const {
  if (methods.empty()) return Error{"the frontier needs at least one method"};
  for (const FedSelVariant& v : methods) {
    FEDLDP_RETURN_IF_ERROR(v.Validate());
    if (!v.is_private()) return Error{"method " + FedSelVariantName(v) + " is not private"};
  }
  if (epsilons.empty()) return Error{"the frontier needs at least one epsilon"};
  for (double e : epsilons) {
    if (!(e > 0 && std::isfinite(e))) return Error{"every epsilon must be a finite number > 0"};
  }
  if (!local && !shuffled) return Error{"neither local nor shuffled runs asked for"};
  FEDLDP_RETURN_IF_ERROR(CheckDelta(delta));
  FEDLDP_RETURN_IF_ERROR(cv.Validate());
  return tuning.Validate();
}

namespace {

bool Learned(const CrossValidationResult& r) {
  const double se = r.StdAccuracy() / std::sqrt(static_cast<double>(r.folds.size()));
  return r.MeanAccuracy() - 2 * se > r.MeanMajority();
}

// What a frontier's points share.
struct Points {
  const FrontierConfig& config;
  const Dataset& data;
  ThreadPool& pool;
  std::vector<Fold> folds;
  std::size_t d;
  std::stop_token stop;

  FedSelGrid GridFor(const FedSelVariant& v, bool shuffled) const {
    return config.grid ? *config.grid : DefaultGrid(v, shuffled);
  }
};

// The non-private model, tuned on the same grid; nullopt if stopped.
Result<std::optional<FrontierRow>> NonPrivatePoint(const Points& p) {
  FedSelConfig np = DefaultFedSelConfig(ParseFedSelVariant("np").value());
  np.even_rounds = true;
  const FedSelVariant v = ParseFedSelVariant("np").value();
  auto r = CrossValidateTuned(np, p.GridFor(v, false), p.data, p.config.cv, p.config.tuning, p.pool,
                              {}, {}, p.stop);
  if (!r.ok()) return Error{"np: " + r.error()};
  if (r->result.stopped) return std::optional<FrontierRow>();
  FrontierRow row;
  row.method = "np";
  row.target_epsilon = std::numeric_limits<double>::infinity();
  row.total_epsilon = std::numeric_limits<double>::infinity();
  row.local_epsilon = std::numeric_limits<double>::infinity();
  row.cv = std::move(r->result);
  row.chosen = std::move(r->chosen);
  row.learned = Learned(row.cv);
  return std::optional<FrontierRow>(std::move(row));
}

// What each fold of a tuned row spent, from its own plan.
Status StateSpent(const Points& p, bool shuffled, bool gaussian, FrontierRow& row) {
  row.local_epsilon = std::numeric_limits<double>::infinity();
  for (std::size_t f = 0; f < row.chosen.size(); ++f) {
    const FedSelConfig& c = row.chosen[f];
    auto plan = PlanFedSel(c, p.folds[f].train.size(), p.d);
    if (!plan.ok()) return Error{plan.error()};
    const double report = plan->ReportEpsilon();
    row.local_epsilon = std::min(row.local_epsilon, report);
    auto record = FedSelPrivacyRecordOf(*plan, c, p.config.delta);
    if (record && (!row.privacy || record->total.epsilon > row.privacy->total.epsilon)) {
      row.privacy = std::move(record);
    }
    if (shuffled) {
      auto spent = AccountRun(FedSelRunPrivacy(*plan, c, p.config.delta));
      if (!spent.ok()) return Error{spent.error()};
      row.total_epsilon = std::max(row.total_epsilon, spent->total.epsilon);
      row.total_delta = spent->total.delta;
    } else {
      row.total_epsilon = std::max(row.total_epsilon, report * c.epochs);
      row.total_delta = gaussian ? c.delta : 0.0;
    }
  }
  return {};
}

// One point: `variant` at target eps, local or shuffled, tuned on the grid
// (a row that says why it was skipped where no run is possible); nullopt if
// stopped.
Result<std::optional<FrontierRow>> PrivatePoint(const Points& p, const FedSelVariant& variant,
                                                double eps, bool shuffled) {
  FrontierRow row;
  row.method = FedSelVariantName(variant);
  row.shuffled = shuffled;
  row.target_epsilon = eps;
  const bool gaussian = NeedsDelta(variant);
  if (shuffled && gaussian) {
    row.skipped = "no amplification by shuffling is proven for the Gaussian's reports";
    return std::optional<FrontierRow>(std::move(row));
  }
  FedSelConfig base = DefaultFedSelConfig(variant);
  base.epochs = 1;
  base.even_rounds = true;
  base.epsilon = eps;
  base.delta = p.config.delta;
  base.shuffle = shuffled;
  PreparePoint prepare;
  if (shuffled) {
    prepare = [&p, eps](const FedSelConfig& c, std::size_t clients) {
      return CalibrateToCentral(c, clients, p.d, eps, p.config.delta);
    };
  }
  auto r = CrossValidateTuned(base, p.GridFor(variant, shuffled), p.data, p.config.cv,
                              p.config.tuning, p.pool, prepare, {}, p.stop);
  if (r.ok() && r->result.stopped) return std::optional<FrontierRow>();
  if (!r.ok()) {
    row.skipped = r.error();
    return std::optional<FrontierRow>(std::move(row));
  }
  row.cv = std::move(r->result);
  row.chosen = std::move(r->chosen);
  row.learned = Learned(row.cv);
  FEDLDP_RETURN_IF_ERROR(StateSpent(p, shuffled, gaussian, row));
  return std::optional<FrontierRow>(std::move(row));
}

}  // namespace

Result<Frontier> RunFrontier(
    const FrontierConfig& config, const Dataset& data, ThreadPool& pool,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress,
    std::stop_token stop) {
  if (const Status s = config.Validate(); !s.ok()) return Error{s.error()};
  const auto start = std::chrono::steady_clock::now();
  const Points points{config, data, pool, MakeFolds(data.size(), config.cv), LinearParameters(data),
                      stop};
  const std::size_t modes = (config.local ? 1 : 0) + (config.shuffled ? 1 : 0);
  const std::size_t total = 1 + config.methods.size() * config.epsilons.size() * modes;
  std::size_t done = 0;
  Frontier frontier;
  const auto finished = [&](bool stopped) {
    frontier.stopped = stopped;
    frontier.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return frontier;
  };
  FEDLDP_ASSIGN_OR_RETURN(std::optional<FrontierRow> np, NonPrivatePoint(points));
  if (!np) return finished(true);
  frontier.nonprivate = std::move(*np);
  frontier.majority = frontier.nonprivate.cv.MeanMajority();
  if (progress) progress(++done, total, "np");
  for (const bool shuffled : {false, true}) {
    if (shuffled ? !config.shuffled : !config.local) continue;
    for (const FedSelVariant& variant : config.methods) {
      for (double eps : config.epsilons) {
        if (stop.stop_requested()) return finished(true);
        FEDLDP_ASSIGN_OR_RETURN(std::optional<FrontierRow> row,
                                PrivatePoint(points, variant, eps, shuffled));
        if (!row) return finished(true);
        std::ostringstream label;
        label << row->method << (shuffled ? " shuffled" : " local") << " eps " << eps;
        frontier.rows.push_back(std::move(*row));
        if (progress) progress(++done, total, label.str());
      }
    }
  }
  return finished(false);
}

}  // namespace fedldp
