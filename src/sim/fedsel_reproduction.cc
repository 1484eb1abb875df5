#include "fedldp/sim/fedsel_reproduction.h"

#include <cctype>
#include <filesystem>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>

#include "fedldp/base/files.h"
#include "fedldp/base/format.h"
#include "fedldp/base/units.h"
#include "fedldp/data/loaders.h"
#include "fedldp/sim/records.h"

namespace fedldp {

namespace {

struct PaperRow {
  double gain[3], loss[3];  // EXP, PE, PS
};

// FedSel, Table 3 (accuracy points).
const std::map<std::string, PaperRow>& PaperTable3() {
  static const std::map<std::string, PaperRow> table = {
      {"syn-L-0.01-0.9/logistic", {{8.6074, 5.410, 5.975}, {0.3517, 1.192, 0.4970}}},
      {"syn-L-0.01-0.9/svm", {{7.1950, 3.7704, 5.065}, {2.1593, 0.8533, 2.0816}}},
      {"bank/logistic", {{2.4197, 3.2338, 2.5525}, {-0.157, 0.0464, 0.1463}}},
      {"bank/svm", {{4.3823, 3.4369, 4.0244}, {0.4436, 0.2530, 0.0164}}},
      {"kdd/logistic", {{2.0471, 2.5148, 2.0171}, {0.5091, 0.2322, 0.3428}}},
      {"kdd/svm", {{1.85629, 2.2168, 1.8291}, {-0.1625, 0.2288, 0.4465}}},
      {"adult/logistic", {{5.5745, 5.6445, 6.0535}, {0.2935, 1.3096, 0.8091}}},
      {"adult/svm", {{5.5361, 5.6057, 5.1442}, {0.1949, 0.9550, 0.3852}}},
  };
  return table;
}

std::string Upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// Thrown to leave every loop at once; caught in ReproduceFedSel.
struct Failed {
  Error error;
};
struct Stopped {};

// A file written: throws Failed if it could not be.
void Check(const Status& written) {
  if (!written.ok()) throw Failed{{written.error(), written.code()}};
}

void Replace(const std::string& path, const std::string& text) {
  Check(WriteFileAtomically(path, text, 0644, /*overwrite=*/true));
}

// Cross-validates configurations and appends each one's record to
// runs.jsonl; throws Failed or Stopped.
class Evaluator {
 public:
  Evaluator(const FedSelReproductionConfig& c, const FedSelReproductionObserver& observer,
            std::stop_token stop)
      : c_(c), observer_(observer), stop_(std::move(stop)), pool_(c.threads) {
    Replace(Runs(), "");
  }
  std::size_t threads() const { return pool_.size(); }

  CrossValidationResult Run(const FedSelConfig& config, const std::string& dataset,
                            const Dataset& data, const CrossValidationOptions& cv,
                            const std::string& label) {
    if (stop_.stop_requested()) throw Stopped{};
    auto r = CrossValidateFedSel(
        config, data, cv, pool_,
        [&](std::size_t done, std::size_t total) {
          if (observer_.progress) observer_.progress(label, done, total);
        },
        stop_);
    if (!r.ok()) throw Failed{{label + ": " + r.error(), r.code()}};
    if (r->stopped) throw Stopped{};
    const auto record = CrossValidationRecord(
        dataset, data, config, cv, *r, std::nullopt,
        FedSelPrivacyRecordOf(r->last.plan, config, RunPrivacyConfig{}.delta));
    Check(AppendToFile(Runs(), record.dump() + "\n"));
    return std::move(r).value();
  }

 private:
  std::string Runs() const { return c_.out + "/runs.jsonl"; }
  const FedSelReproductionConfig& c_;
  const FedSelReproductionObserver& observer_;
  std::stop_token stop_;
  ThreadPool pool_;
};

const std::vector<std::string> kDatasets = {"syn-L-0.01-0.9", "bank", "kdd", "adult"};
const std::vector<std::string> kSelectors = {"exp", "pe", "ps"};

// One row of Table 3's accuracies: the non-private model, flat PM,
// uniform PM and each selector's X-PM and X-PM-C.
struct Table3Accuracies {
  double majority = 0, np = 0, pm = 0, uniform_pm = 0;
  std::map<std::string, double> selected;  // "exp", "exp-c", ...
};

Table3Accuracies RunTable3Row(FedSelReproduction& result, const std::string& dataset, Loss loss,
                              const Dataset& data, Evaluator& evaluate) {
  const FedSelReproductionConfig& c = result.config;
  const std::string row = dataset + "/" + LossName(loss);
  auto run = [&](const std::string& variant) {
    FedSelConfig config;
    config.loss = loss;
    config.variant = ParseFedSelVariant(variant).value();
    config.epsilon = c.epsilon;
    config.gradient_scaling = c.gradient_scaling;
    // The non-private reference steps at alpha = 1: the private runs'
    // alpha = 4 makes it diverge on Bank.
    if (variant == "np") config.learning_rate = 1.0;
    const auto r = evaluate.Run(config, dataset, data, result.table_cv, row + " " + variant);
    result.updates += r.updates;
    result.seconds += r.seconds;
    return r;
  };
  Table3Accuracies a;
  a.np = run("np").MeanAccuracy();
  const auto pm = run("pm");
  a.majority = pm.MeanMajority();
  a.pm = pm.MeanAccuracy();
  a.uniform_pm = run("uniform-pm").MeanAccuracy();
  for (const auto& s : kSelectors) {
    a.selected[s] = run(s + "-pm").MeanAccuracy();
    a.selected[s + "-c"] = run(s + "-pm-c").MeanAccuracy();
  }
  // Not better than the majority class: learned nothing.
  const auto flag = [&](const std::string& name, double accuracy) {
    if (accuracy <= a.majority) {
      result.learned_nothing.push_back(row + " " + name + " " + Fixed(100 * accuracy) +
                                       " % <= " + Fixed(100 * a.majority) + " % majority");
    }
  };
  flag("np", a.np);
  flag("pm", a.pm);
  flag("uniform-pm", a.uniform_pm);
  for (const auto& s : kSelectors) {
    flag(s + "-pm", a.selected[s]);
    flag(s + "-pm-c", a.selected[s + "-c"]);
  }
  return a;
}

// The row in markdown (gains and losses beside the paper's) and CSV
// (accuracies in percent; gains and losses in points).
void WriteTable3Row(const std::string& dataset, Loss loss, const Table3Accuracies& a,
                    std::ostream& md, std::ostream& csv) {
  const auto& paper = PaperTable3().at(dataset + "/" + LossName(loss));
  md << "| " << dataset << " | " << LossName(loss) << " | " << Fixed(100 * a.majority) << " | "
     << Fixed(100 * a.np) << " | " << Fixed(100 * a.pm) << " | " << Fixed(100 * a.uniform_pm);
  csv << dataset << "," << LossName(loss) << "," << Percent(a.majority) << "," << Percent(a.np)
      << "," << Percent(a.pm) << "," << Percent(a.uniform_pm);
  for (const auto& s : kSelectors) {
    csv << "," << Percent(a.selected.at(s)) << "," << Percent(a.selected.at(s + "-c"));
  }
  for (std::size_t i = 0; i < kSelectors.size(); ++i) {
    const double gain = 100 * (a.selected.at(kSelectors[i] + "-c") - a.pm);
    const double loss_points =
        100 * (a.selected.at(kSelectors[i] + "-c") - a.selected.at(kSelectors[i]));
    md << " | " << Fixed(gain) << " (" << Fixed(paper.gain[i]) << ") | " << Fixed(loss_points)
       << " (" << Fixed(paper.loss[i]) << ")";
    csv << "," << gain << "," << loss_points;
  }
  md << " |\n";
  csv << "\n";
}

void Table3(FedSelReproduction& result, const std::vector<Dataset>& loaded, Evaluator& evaluate,
            const FedSelReproductionObserver& observer) {
  const FedSelReproductionConfig& c = result.config;
  const CrossValidationOptions& cv = result.table_cv;
  std::ostringstream csv;
  csv << "dataset,model,majority,np,pm,uniform_pm,exp_pm,exp_pm_c,pe_pm,pe_pm_c,ps_pm,ps_pm_c,"
         "exp_gain,exp_loss,pe_gain,pe_loss,ps_gain,ps_loss\n";
  std::ostringstream md;
  md << "| dataset | model | majority | NP | PM | U-PM | EXP-gain | EXP-loss | PE-gain | "
        "PE-loss | PS-gain | PS-loss |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t which = 0; which < kDatasets.size(); ++which) {
    for (const Loss loss : {Loss::kLogistic, Loss::kHinge}) {
      const Table3Accuracies a =
          RunTable3Row(result, kDatasets[which], loss, loaded[which], evaluate);
      WriteTable3Row(kDatasets[which], loss, a, md, csv);
      if (observer.row) observer.row(kDatasets[which] + "/" + LossName(loss));
    }
  }
  std::ostringstream text;
  text << "FedSel Table 3, eps = " << c.epsilon << ", gradients "
       << GradientScalingName(c.gradient_scaling) << ": gains and losses in accuracy points, ours "
       << "(paper's in parentheses); majority, NP, PM and U-PM (uniform selection, not "
       << "enlarged: the control) are our accuracies in %. " << cv.repeats << " x " << cv.folds
       << "-fold CV, seed " << c.seed << ".\n\n"
       << md.str();
  if (!result.learned_nothing.empty()) {
    text << "\nNot better than the majority class (these models learned nothing):\n";
    for (const auto& line : result.learned_nothing) text << "- " << line << "\n";
  }
  result.table3 = text.str();
  Replace(c.out + "/table3.csv", csv.str());
  Replace(c.out + "/table3.md", result.table3);
  if (observer.table3) observer.table3(result);
}

// The data behind Fig. 2(f-i) and Fig. 3, on ADULT with logistic regression.
// The paper shows the figures without their exact grids; ours are in
// docs/fedsel.md.
class Figures {
 public:
  Figures(FedSelReproduction& result, const Dataset& adult, Evaluator& evaluate,
          const FedSelReproductionObserver& observer)
      : r_(result), data_(adult), evaluate_(evaluate), observer_(observer) {}

  void All() {
    const std::vector<double> eps =
        r_.config.quick ? std::vector<double>{1, 4} : std::vector<double>{0.5, 1, 2, 4, 8};
    Fig2fg(eps);
    Fig2h(eps);
    Fig2i(eps);
    Fig3a(eps);
    Fig3b();
    Fig3c();
  }

 private:
  // Fig. 2(f), (g): two-stage against flat PM, one and two epochs.
  void Fig2fg(const std::vector<double>& eps) {
    for (int epochs : {1, 2}) {
      Figure f{
          epochs == 1 ? "fig2f" : "fig2g",
          "ADULT, logistic, " + std::to_string(epochs) + " epoch(s): accuracy against the budget",
          "total epsilon per client (-C variants spend (1 + mu) times it)",
          "test accuracy (%)",
          true,
          {},
          {}};
      f.series.push_back(Sweep("pm", eps, epochs));
      for (const auto& s : kSelectors) {
        f.series.push_back(Sweep(s + "-pm", eps, epochs));
        f.series.push_back(Sweep(s + "-pm-c", eps, epochs));
      }
      AddReferences(f, eps, epochs);
      Finish(f);
    }
  }

  // Fig. 2(h): other value mechanisms, with and without selection.
  void Fig2h(const std::vector<double>& eps) {
    Figure f{"fig2h",
             "ADULT, logistic: flat HM and Duchi against PS-HM and PS-Duchi",
             "total epsilon per client",
             "test accuracy (%)",
             true,
             {},
             {}};
    for (const std::string v : {"hm", "ps-hm", "duchi", "ps-duchi"}) {
      f.series.push_back(Sweep(v, eps, 1));
    }
    AddReferences(f, eps, 1);
    Finish(f);
  }

  // Fig. 2(i): the compressed solution.
  void Fig2i(const std::vector<double>& eps) {
    Figure f{"fig2i",
             "ADULT, logistic: random projection (q = 0.1 d) against selection",
             "total epsilon per client",
             "test accuracy (%)",
             true,
             {},
             {}};
    for (const std::string v : {"pm", "pm-rp", "ps-pm"}) f.series.push_back(Sweep(v, eps, 1));
    AddReferences(f, eps, 1);
    Finish(f);
  }

  // Fig. 3(a): accumulating g (ours) against alpha g (-O).
  void Fig3a(const std::vector<double>& eps) {
    Figure f{"fig3a",
             "ADULT, logistic, 2 epochs: accumulation r += g against r += alpha g (-O)",
             "total epsilon per client",
             "test accuracy (%)",
             true,
             {},
             {}};
    for (const auto& s : kSelectors) {
      f.series.push_back(Sweep(s + "-pm", eps, 2));
      f.series.push_back(Sweep(s + "-pm-o", eps, 2));
    }
    AddReferences(f, eps, 2);
    Finish(f);
  }

  // Fig. 3(b): the share mu of the budget spent on selection.
  void Fig3b() {
    const bool quick = r_.config.quick;
    const std::vector<double> mus =
        quick ? std::vector<double>{0.1, 0.6} : std::vector<double>{0.05, 0.1, 0.2, 0.4, 0.6, 0.8};
    Figure f{"fig3b", "ADULT, logistic: PS-PM against mu, flat PM as dashed lines",
             "mu",    "test accuracy (%)",
             false,   {},
             {}};
    for (double e : quick ? std::vector<double>{2} : std::vector<double>{1, 2, 4}) {
      std::ostringstream label;
      label << "ps-pm eps=" << e;
      Series s{label.str(), {}, false};
      for (double mu : mus) {
        FedSelConfig config = Base();
        config.variant = ParseFedSelVariant("ps-pm").value();
        config.epsilon = e;
        config.mu = mu;
        s.points.push_back(Evaluate(config, mu));
      }
      f.series.push_back(s);
      FedSelConfig pm = Base();
      pm.variant = ParseFedSelVariant("pm").value();
      pm.epsilon = e;
      const Point p = Evaluate(pm, 0);
      Series flat{"pm eps=" + label.str().substr(label.str().find('=') + 1), {}, true};
      for (double mu : mus) flat.points.push_back({mu, p.mean, 0});
      f.series.push_back(flat);
    }
    AddReferences(f, mus, 1);
    Finish(f);
  }

  // Fig. 3(c): hyper-parameter-free mu across batch sizes, equal iterations.
  void Fig3c() {
    const bool quick = r_.config.quick;
    const std::vector<double> fractions = quick
                                              ? std::vector<double>{0.005, 0.02}
                                              : std::vector<double>{0.002, 0.005, 0.01, 0.02, 0.05};
    Figure f{"fig3c",
             "ADULT, logistic, eps = 2, 50 iterations: hyper-parameter-free mu (theta = 0.2)",
             "batch size m / N",
             "test accuracy (%)",
             true,
             {},
             {}};
    for (const std::string v : {"pm", "exp-pm", "pe-pm", "ps-pm"}) {
      Series s{v == "pm" ? v : v + " (auto mu)", {}, false};
      for (double fraction : fractions) {
        FedSelConfig config = Base();
        config.variant = ParseFedSelVariant(v).value();
        config.batch_fraction = fraction;
        config.max_iterations = 50;
        config.mu.reset();
        s.points.push_back(Evaluate(config, fraction));
      }
      f.series.push_back(s);
    }
    AddReferences(f, fractions, 1);  // NP over all its epoch, for scale
    Finish(f);
  }

  // A configuration with the run's gradient scaling.
  FedSelConfig Base() const {
    FedSelConfig config;
    config.gradient_scaling = r_.config.gradient_scaling;
    return config;
  }

  // Every figure plots test accuracy, one metric across the set (the paper
  // drew Fig. 2(h) and 3 as misclassification, 100 minus it).
  Point Evaluate(const FedSelConfig& config, double x) {
    const auto r = evaluate_.Run(config, "adult", data_, r_.figure_cv,
                                 "adult " + FedSelVariantName(config.variant));
    const double mean = r.MeanAccuracy();
    return {x, Percent(mean), Percent(r.StdAccuracy())};
  }

  // NP (alpha = 1) and the majority class as flat reference lines over xs.
  void AddReferences(Figure& f, const std::vector<double>& xs, int epochs) {
    FedSelConfig np = Base();
    np.variant = ParseFedSelVariant("np").value();
    np.learning_rate = 1.0;
    np.epochs = epochs;
    const auto r = evaluate_.Run(np, "adult", data_, r_.figure_cv, "adult np");
    Series npl{"NP (non-private)", {}, true}, maj{"majority class", {}, true};
    for (double x : xs) {
      const double a = r.MeanAccuracy(), m = r.MeanMajority();
      npl.points.push_back({x, Percent(a), 0});
      maj.points.push_back({x, Percent(m), 0});
    }
    f.series.push_back(npl);
    f.series.push_back(maj);
  }

  Series Sweep(const std::string& variant, const std::vector<double>& epsilons, int epochs) {
    Series s{variant, {}, false};
    for (double eps : epsilons) {
      FedSelConfig config = Base();
      config.variant = ParseFedSelVariant(variant).value();
      config.epsilon = eps;
      config.epochs = epochs;
      s.points.push_back(Evaluate(config, eps));
    }
    return s;
  }

  void Finish(Figure& f) {
    for (auto& s : f.series) s.name = Upper(s.name);
    f.error_bars = "error bars: ± 1 sd of the test accuracy over " +
                   std::to_string(r_.figure_cv.repeats) + " x " +
                   std::to_string(r_.figure_cv.folds) + "-fold CV; dashed: the mean alone";
    auto drawn = WriteFigure(f, r_.config.out);
    if (!drawn.ok()) throw Failed{{drawn.error(), drawn.code()}};
    if (!drawn->empty()) r_.figure_notes.push_back(*drawn);
    r_.figures.push_back(f);
    if (observer_.figure) observer_.figure(f, *drawn);
  }

  FedSelReproduction& r_;
  const Dataset& data_;
  Evaluator& evaluate_;
  const FedSelReproductionObserver& observer_;
};

}  // namespace

Status FedSelReproductionConfig::Validate() const {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  if (out.empty()) return Error{"out must name a folder"};
  if (threads > 1024) return Error{"threads must be in [0, 1024]"};
  return {};
}

Result<FedSelReproduction> ReproduceFedSel(const FedSelReproductionConfig& config,
                                           const FedSelReproductionObserver& observer,
                                           std::stop_token stop) {
  // Everything is checked, and every dataset loaded, before a file in out is
  // opened: a bad option must not empty the runs.jsonl of an earlier run.
  if (Status s = config.Validate(); !s.ok()) return Error{s.error()};
  std::vector<Dataset> loaded;
  for (const std::string& dataset : kDatasets) {
    auto data = LoadNamed(dataset, config.data_dir);
    if (!data.ok()) return Error{data.error(), data.code()};
    loaded.push_back(std::move(data).value());
  }
  std::error_code ec;
  std::filesystem::create_directories(config.out, ec);
  if (ec) return Error{"cannot create " + config.out + ": " + ec.message()};
  FedSelReproduction result;
  result.config = config;
  result.table_cv = {config.quick ? 1 : 10, config.quick ? 2 : 5, config.seed};
  result.figure_cv = {config.quick ? 1 : 2, config.quick ? 2 : 5, config.seed};
  try {
    Evaluator evaluate(config, observer, std::move(stop));
    if (observer.started) {
      std::ostringstream s;
      s << "eps = " << config.epsilon << ", gradients "
        << GradientScalingName(config.gradient_scaling) << ", " << result.table_cv.repeats << " x "
        << result.table_cv.folds << "-fold CV, seed " << config.seed << ", " << evaluate.threads()
        << " threads -> " << config.out;
      observer.started(s.str());
    }
    Table3(result, loaded, evaluate, observer);
    if (config.figures) Figures(result, loaded.back(), evaluate, observer).All();
  } catch (const Failed& f) {
    return f.error;
  } catch (const Stopped&) {
    result.stopped = true;
  }
  return result;
}

}  // namespace fedldp
