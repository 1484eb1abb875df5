#include "fedldp/sim/shuffle_curves.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/shuffle_numerical.h"

namespace fedldp {

Status ShuffleCurvesConfig::Validate() const {
  std::ostringstream e;
  if (local_epsilons.empty() || reports.empty()) {
    e << "give at least one local epsilon and one number of reports";
  } else if (Status bad = CheckDelta(delta); !bad.ok()) {
    e << bad.error();
  } else {
    for (const double eps0 : local_epsilons) {
      if (!(std::isfinite(eps0) && eps0 > 0)) e << "a local epsilon must be > 0, got " << eps0;
    }
    for (const std::uint64_t n : reports) {
      if (n < 1) e << "the reports must be at least 1";
    }
    if (e.str().empty()) return {};
  }
  return Error{e.str()};
}

Result<std::vector<ShuffleCurve>> ShuffleCurves(
    const ShuffleCurvesConfig& c, const std::function<void(std::size_t, std::size_t)>& progress) {
  if (Status bad = c.Validate(); !bad.ok()) return Error{bad.error()};
  const double none = std::numeric_limits<double>::quiet_NaN();
  std::vector<ShuffleCurve> curves;
  const std::size_t total = c.local_epsilons.size() * c.reports.size();
  std::size_t done = 0;
  for (const double eps0 : c.local_epsilons) {
    ShuffleCurve fmt{ShuffleReductionKey(ShuffleReduction::kClones), eps0, {}};
    ShuffleCurve vr{ShuffleReductionKey(ShuffleReduction::kVariationRatio), eps0, {}};
    ShuffleCurve closed{"closed-form", eps0, {}};
    for (const std::uint64_t n : c.reports) {
      for (auto [curve, bound] : {std::pair{&fmt, ShuffleReduction::kClones},
                                  std::pair{&vr, ShuffleReduction::kVariationRatio}}) {
        const auto b = NumericalShuffleEpsilon(n, eps0, c.delta, bound);
        curve->epsilon.push_back(b.ok() ? b->epsilon_upper : none);
      }
      const auto theorem = FeldmanMcMillanTalwar(eps0, static_cast<double>(n), c.delta);
      closed.epsilon.push_back(theorem.applies ? theorem.epsilon : none);
      if (progress) progress(++done, total);
    }
    for (auto* curve : {&fmt, &vr, &closed}) curves.push_back(std::move(*curve));
  }
  return curves;
}

Figure ShuffleCurvesFigure(const ShuffleCurvesConfig& c, const std::vector<ShuffleCurve>& curves) {
  Figure f;
  f.id = "shuffle-bounds";
  std::ostringstream title;
  title << "n shuffled eps0-LDP reports: central eps at delta " << c.delta;
  f.title = title.str();
  f.xlabel = "n (reports shuffled together)";
  f.ylabel = "central eps";
  f.log_x = f.log_y = true;
  f.dodge = false;
  for (const ShuffleCurve& curve : curves) {
    std::ostringstream name;
    name << curve.bound << " at eps0 " << curve.local_epsilon;
    Series s{name.str(), {}, /*reference=*/false};
    for (std::size_t i = 0; i < c.reports.size(); ++i) {
      if (!std::isnan(curve.epsilon[i])) {
        s.points.push_back({static_cast<double>(c.reports[i]), curve.epsilon[i], 0});
      }
    }
    f.series.push_back(std::move(s));
  }
  return f;
}

}  // namespace fedldp
