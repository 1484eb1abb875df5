// The data behind FedSel's Fig. 2(f-i) and Fig. 3, on ADULT with logistic
// regression, and their plots. The paper shows the figures without their
// exact grids; ours are written down in SetupReproduce's help and docs/fedsel.md.
#include <fstream>
#include <map>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/data/loaders.h"

namespace fedldp::cli {
namespace {

struct Context {
  const ReproduceOptions& options;
  GradientScaling scaling;
  const Dataset& data;
  CrossValidationOptions cv;
  ThreadPool& pool;
  std::ofstream& runs;
};

// A configuration with the run's gradient scaling.
FedSelConfig Base(const Context& c) {
  FedSelConfig config;
  config.gradient_scaling = c.scaling;
  return config;
}

Point Evaluate(Context& c, const FedSelConfig& config, double x, bool misclassification) {
  const auto r = RunCrossValidation(config, c.data, c.cv, c.pool, "adult " + config.variant);
  c.runs << CrossValidationRecord("adult", c.data, config, c.cv, r, std::nullopt).dump() << "\n";
  const double mean = r.MeanAccuracy();
  return {x, Percent(misclassification ? 1 - mean : mean), Percent(r.StdAccuracy())};
}

// NP (alpha = 1) and the majority class as flat reference lines over xs.
void AddReferences(Context& c, Figure& f, const std::vector<double>& xs, int epochs,
                   bool misclassification) {
  FedSelConfig np = Base(c);
  np.variant = "np";
  np.learning_rate = 1.0;
  np.epochs = epochs;
  const auto r = RunCrossValidation(np, c.data, c.cv, c.pool, "adult np");
  c.runs << CrossValidationRecord("adult", c.data, np, c.cv, r, std::nullopt).dump() << "\n";
  Series npl{"NP (non-private)", {}, true}, maj{"majority class", {}, true};
  for (double x : xs) {
    const double a = r.MeanAccuracy(), m = r.MeanMajority();
    npl.points.push_back({x, Percent(misclassification ? 1 - a : a), 0});
    maj.points.push_back({x, Percent(misclassification ? 1 - m : m), 0});
  }
  f.series.push_back(npl);
  f.series.push_back(maj);
}

Series Sweep(Context& c, const std::string& variant, const std::vector<double>& epsilons,
             int epochs, bool misclassification) {
  Series s{variant, {}, false};
  for (double eps : epsilons) {
    FedSelConfig config = Base(c);
    config.variant = variant;
    config.epsilon = eps;
    config.epochs = epochs;
    s.points.push_back(Evaluate(c, config, eps, misclassification));
  }
  return s;
}

std::string Upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

void ReproduceFedSelFigures(const ReproduceOptions& o, ThreadPool& pool, std::ostream& out,
                            std::ofstream& runs) {
  auto data = LoadNamed("adult", DataDir(o.data_dir));
  if (!data.ok()) throw UsageError(data.error() + DataDirHint(data.error()));
  const auto scaling = ParseGradientScaling(o.gradient_scaling);
  if (!scaling.ok()) throw UsageError(scaling.error());
  Context c{o, *scaling, *data, {o.quick ? 1 : 2, o.quick ? 2 : 5, o.seed}, pool, runs};
  const std::vector<double> eps =
      o.quick ? std::vector<double>{1, 4} : std::vector<double>{0.5, 1, 2, 4, 8};
  const std::vector<std::string> selectors = {"exp", "pe", "ps"};
  auto finish = [&](Figure& f) {
    for (auto& s : f.series) s.name = Upper(s.name);
    f.error_bars = "error bars: ± 1 sd of the test accuracy over " + std::to_string(c.cv.repeats) +
                   " x " + std::to_string(c.cv.folds) + "-fold CV; dashed: the mean alone";
    DrawFigure(f, o.out, out);
    out << "  wrote " << o.out << "/" << f.id << ".{csv,gp,png,svg,pdf}\n";
    out.flush();
  };
  // Fig. 2(f), (g): two-stage against flat PM, one and two epochs.
  for (int epochs : {1, 2}) {
    Figure f{
        epochs == 1 ? "fig2f" : "fig2g",
        "ADULT, logistic, " + std::to_string(epochs) + " epoch(s): accuracy against the budget",
        "total epsilon per client (-C variants spend (1 + mu) times it)",
        "test accuracy (%)",
        true,
        {},
        {}};
    f.series.push_back(Sweep(c, "pm", eps, epochs, false));
    for (const auto& s : selectors) {
      f.series.push_back(Sweep(c, s + "-pm", eps, epochs, false));
      f.series.push_back(Sweep(c, s + "-pm-c", eps, epochs, false));
    }
    AddReferences(c, f, eps, epochs, false);
    finish(f);
  }
  {  // Fig. 2(h): other value mechanisms, with and without selection.
    Figure f{"fig2h",
             "ADULT, logistic: flat HM and Duchi against PS-HM and PS-Duchi",
             "total epsilon per client",
             "misclassification rate (%)",
             true,
             {},
             {}};
    for (const std::string v : {"hm", "ps-hm", "duchi", "ps-duchi"}) {
      f.series.push_back(Sweep(c, v, eps, 1, true));
    }
    AddReferences(c, f, eps, 1, true);
    finish(f);
  }
  {  // Fig. 2(i): the compressed solution.
    Figure f{"fig2i",
             "ADULT, logistic: random projection (q = 0.1 d) against selection",
             "total epsilon per client",
             "test accuracy (%)",
             true,
             {},
             {}};
    for (const std::string v : {"pm", "pm-rp", "ps-pm"})
      f.series.push_back(Sweep(c, v, eps, 1, false));
    AddReferences(c, f, eps, 1, false);
    finish(f);
  }
  {  // Fig. 3(a): accumulating g (ours) against alpha g (-O).
    Figure f{"fig3a",
             "ADULT, logistic, 2 epochs: accumulation r += g against r += alpha g (-O)",
             "total epsilon per client",
             "misclassification rate (%)",
             true,
             {},
             {}};
    for (const auto& s : selectors) {
      f.series.push_back(Sweep(c, s + "-pm", eps, 2, true));
      f.series.push_back(Sweep(c, s + "-pm-o", eps, 2, true));
    }
    AddReferences(c, f, eps, 2, true);
    finish(f);
  }
  {  // Fig. 3(b): the share mu of the budget spent on selection.
    const std::vector<double> mus = o.quick ? std::vector<double>{0.1, 0.6}
                                            : std::vector<double>{0.05, 0.1, 0.2, 0.4, 0.6, 0.8};
    Figure f{"fig3b", "ADULT, logistic: PS-PM against mu, flat PM as dashed lines",
             "mu",    "misclassification rate (%)",
             false,   {},
             {}};
    for (double e : o.quick ? std::vector<double>{2} : std::vector<double>{1, 2, 4}) {
      std::ostringstream label;
      label << "ps-pm eps=" << e;
      Series s{label.str(), {}, false};
      for (double mu : mus) {
        FedSelConfig config = Base(c);
        config.variant = "ps-pm";
        config.epsilon = e;
        config.mu = mu;
        s.points.push_back(Evaluate(c, config, mu, true));
      }
      f.series.push_back(s);
      FedSelConfig pm = Base(c);
      pm.variant = "pm";
      pm.epsilon = e;
      const Point p = Evaluate(c, pm, 0, true);
      Series flat{"pm eps=" + label.str().substr(label.str().find('=') + 1), {}, true};
      for (double mu : mus) flat.points.push_back({mu, p.mean, 0});
      f.series.push_back(flat);
    }
    AddReferences(c, f, mus, 1, true);
    finish(f);
  }
  {  // Fig. 3(c): hyper-parameter-free mu across batch sizes, equal iterations.
    const std::vector<double> fractions = o.quick
                                              ? std::vector<double>{0.005, 0.02}
                                              : std::vector<double>{0.002, 0.005, 0.01, 0.02, 0.05};
    Figure f{"fig3c",
             "ADULT, logistic, eps = 2, 50 iterations: hyper-parameter-free mu (theta = 0.2)",
             "batch size m / N",
             "misclassification rate (%)",
             true,
             {},
             {}};
    for (const std::string v : {"pm", "exp-pm", "pe-pm", "ps-pm"}) {
      Series s{v == "pm" ? v : v + " (auto mu)", {}, false};
      for (double fraction : fractions) {
        FedSelConfig config = Base(c);
        config.variant = v;
        config.batch_fraction = fraction;
        config.max_iterations = 50;
        config.mu.reset();
        s.points.push_back(Evaluate(c, config, fraction, true));
      }
      f.series.push_back(s);
    }
    AddReferences(c, f, fractions, 1, true);  // NP over all its epoch, for scale
    finish(f);
  }
}

}  // namespace fedldp::cli
