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
  if (!(delta > 0 && delta < 1)) return Error{"delta must be in (0, 1)"};
  FEDLDP_RETURN_IF_ERROR(cv.Validate());
  return tuning.Validate();
}

namespace {

bool Learned(const CrossValidationResult& r) {
  const double se = r.StdAccuracy() / std::sqrt(static_cast<double>(r.folds.size()));
  return r.MeanAccuracy() - 2 * se > r.MeanMajority();
}

}  // namespace

Result<Frontier> RunFrontier(
    const FrontierConfig& config, const Dataset& data, ThreadPool& pool,
    const std::function<void(std::size_t, std::size_t, const std::string&)>& progress,
    std::stop_token stop) {
  if (const Status s = config.Validate(); !s.ok()) return Error{s.error()};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Fold> folds = MakeFolds(data.size(), config.cv);
  const std::size_t d = LinearParameters(data);
  const std::size_t modes = (config.local ? 1 : 0) + (config.shuffled ? 1 : 0);
  const std::size_t total = 1 + config.methods.size() * config.epsilons.size() * modes;
  std::size_t done = 0;
  const auto grid_for = [&](const FedSelVariant& v, bool shuffled) {
    return config.grid ? *config.grid : DefaultGrid(v, shuffled);
  };

  Frontier frontier;
  const auto stopped = [&] {
    frontier.stopped = true;
    frontier.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return frontier;
  };
  {  // The non-private model, tuned on the same grid.
    FedSelConfig np = DefaultFedSelConfig(ParseFedSelVariant("np").value());
    np.even_rounds = true;
    const FedSelVariant v = ParseFedSelVariant("np").value();
    auto r = CrossValidateTuned(np, grid_for(v, false), data, config.cv, config.tuning, pool, {},
                                {}, stop);
    if (!r.ok()) return Error{"np: " + r.error()};
    if (r->result.stopped) return stopped();
    frontier.nonprivate.method = "np";
    frontier.nonprivate.target_epsilon = std::numeric_limits<double>::infinity();
    frontier.nonprivate.total_epsilon = std::numeric_limits<double>::infinity();
    frontier.nonprivate.local_epsilon = std::numeric_limits<double>::infinity();
    frontier.nonprivate.cv = std::move(r->result);
    frontier.nonprivate.chosen = std::move(r->chosen);
    frontier.nonprivate.learned = Learned(frontier.nonprivate.cv);
    frontier.majority = frontier.nonprivate.cv.MeanMajority();
    if (progress) progress(++done, total, "np");
  }

  for (const bool shuffled : {false, true}) {
    if (shuffled ? !config.shuffled : !config.local) continue;
    for (const FedSelVariant& variant : config.methods) {
      const std::string method = FedSelVariantName(variant);
      const bool gaussian = NeedsDelta(variant);
      for (double eps : config.epsilons) {
        if (stop.stop_requested()) return stopped();
        FrontierRow row;
        row.method = method;
        row.shuffled = shuffled;
        row.target_epsilon = eps;
        std::ostringstream label_text;
        label_text << method << (shuffled ? " shuffled" : " local") << " eps " << eps;
        const std::string label = label_text.str();
        if (shuffled && gaussian) {
          row.skipped = "no amplification by shuffling is proven for the Gaussian's reports";
          frontier.rows.push_back(std::move(row));
          if (progress) progress(++done, total, label);
          continue;
        }
        FedSelConfig base = DefaultFedSelConfig(variant);
        base.epochs = 1;
        base.even_rounds = true;
        base.epsilon = eps;
        base.delta = config.delta;
        base.shuffle = shuffled;
        PreparePoint prepare;
        if (shuffled) {
          prepare = [&, eps](const FedSelConfig& c, std::size_t clients) {
            return CalibrateToCentral(c, clients, d, eps, config.delta);
          };
        }
        auto r = CrossValidateTuned(base, grid_for(variant, shuffled), data, config.cv,
                                    config.tuning, pool, prepare, {}, stop);
        if (r.ok() && r->result.stopped) return stopped();
        if (!r.ok()) {
          row.skipped = r.error();
        } else {
          row.cv = std::move(r->result);
          row.chosen = std::move(r->chosen);
          row.learned = Learned(row.cv);
          row.local_epsilon = std::numeric_limits<double>::infinity();
          // What each fold spent, from its own plan.
          for (std::size_t f = 0; f < row.chosen.size(); ++f) {
            const FedSelConfig& c = row.chosen[f];
            auto plan = PlanFedSel(c, folds[f].train.size(), d);
            if (!plan.ok()) return Error{plan.error()};
            const double report = plan->ReportEpsilon();
            row.local_epsilon = std::min(row.local_epsilon, report);
            if (shuffled) {
              auto p = AccountRun(FedSelRunPrivacy(*plan, c, config.delta));
              if (!p.ok()) return Error{p.error()};
              row.total_epsilon = std::max(row.total_epsilon, p->total.epsilon);
              row.total_delta = p->total.delta;
            } else {
              row.total_epsilon = std::max(row.total_epsilon, report * c.epochs);
              row.total_delta = gaussian ? c.delta : 0.0;
            }
          }
        }
        frontier.rows.push_back(std::move(row));
        if (progress) progress(++done, total, label);
      }
    }
  }
  frontier.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return frontier;
}

}  // namespace fedldp
