// fedldp reproduce fedsel: FedSel's Table 3 (gains and losses of private
// selection at eps = 2), beside the paper's numbers and the references.
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/data/loaders.h"

namespace fedldp::cli {

void SetupReproduce(CLI::App& app, ReproduceOptions& o) {
  app.require_subcommand(1);
  auto* fedsel = app.add_subcommand(
      "fedsel",
      "FedSel Table 3: for syn-L-0.01-0.9, BANK, KDD and ADULT with logistic regression and\n"
      "SVM at eps = 2, accuracy of PM (flat) and of EXP/PE/PS-PM and -PM-C, with\n"
      "gain = acc(X-PM-C) - acc(PM) and loss = acc(X-PM-C) - acc(X-PM) in points, beside\n"
      "the paper's values, the non-private model and the majority class, and U-PM:\n"
      "the control uniform-pm (no selection, reports not enlarged by d; not in the\n"
      "paper), which shows how much of a gain the selection itself earns. Writes\n"
      "DIR/table3.md, DIR/table3.csv and DIR/runs.jsonl.\n"
      "Then the data and plots (DIR/fig*.{csv,gp,png,svg,pdf}, gnuplot) of Fig. 2(f-i) and\n"
      "Fig. 3 on ADULT with logistic regression, 2 x 5-fold CV: accuracy against\n"
      "eps in {0.5,1,2,4,8} for PM, EXP/PE/PS-PM(-C) with 1 (f) and 2 (g) epochs;\n"
      "HM/Duchi against PS-HM/PS-Duchi (h); PM-RP (i); -O against ours over 2\n"
      "epochs (3a); mu in {0.05,...,0.8} for eps in {1,2,4} (3b); the automatic mu\n"
      "for m/N in {0.002,...,0.05} at 50 iterations (3c).");
  fedsel->add_option("--out", o.out, "Output folder")->required();
  fedsel->add_flag("--quick", o.quick, "1 x 2-fold CV instead of 10 x 5 (a smoke run)");
  fedsel->add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  fedsel->add_option("--seed", o.seed, "Seed")->capture_default_str();
  fedsel->add_option("--threads", o.threads, "Threads (0: all cores)")->capture_default_str()
      ->check(CLI::Range(0, 1024));
  fedsel->add_option("--epsilon", o.epsilon, "Total budget for Table 3")->capture_default_str();
  fedsel->add_flag("--no-figures", o.no_figures, "Table 3 only");
  fedsel->add_option("--gradient-scaling", o.gradient_scaling, "clip or normalize (see train)")
      ->capture_default_str();
}

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

std::string Fixed(double v, int digits = 2) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

}  // namespace

int RunReproduceFedSel(const ReproduceOptions& o, std::ostream& out, std::ostream& err) {
  // Everything is checked, and every dataset loaded, before a file in --out
  // is opened: a bad option must not empty the runs.jsonl of an earlier run.
  if (auto e = CheckEpsilon(o.epsilon, "--epsilon"); !e.empty()) throw UsageError(e);
  const auto parsed_scaling = ParseGradientScaling(o.gradient_scaling);
  if (!parsed_scaling.ok()) throw UsageError(parsed_scaling.error());
  const GradientScaling scaling = *parsed_scaling;
  const std::vector<std::string> datasets = {"syn-L-0.01-0.9", "bank", "kdd", "adult"};
  std::vector<Dataset> loaded;
  for (const std::string& dataset : datasets) {
    auto data = LoadNamed(dataset, DataDir(o.data_dir));
    if (!data.ok()) throw UsageError(data.error() + DataDirHint(data.error()));
    loaded.push_back(std::move(data).value());
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) throw UsageError("cannot create " + o.out + ": " + ec.message());
  const CrossValidationOptions cv{o.quick ? 1 : 10, o.quick ? 2 : 5, o.seed};
  ThreadPool pool(o.threads);
  std::ofstream runs(o.out + "/runs.jsonl");
  if (!runs) throw std::runtime_error("cannot write into " + o.out);
  std::ostringstream csv;  // written whole at the end
  csv << "dataset,model,majority,np,pm,uniform_pm,exp_pm,exp_pm_c,pe_pm,pe_pm_c,ps_pm,ps_pm_c,"
         "exp_gain,exp_loss,pe_gain,pe_loss,ps_gain,ps_loss\n";
  std::ostringstream md;
  md << "| dataset | model | majority | NP | PM | U-PM | EXP-gain | EXP-loss | PE-gain | "
        "PE-loss | PS-gain | PS-loss |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  out << "fedldp reproduce fedsel: eps = " << o.epsilon << ", gradients " << o.gradient_scaling
      << ", " << cv.repeats << " x " << cv.folds << "-fold CV, seed " << o.seed << ", "
      << pool.size() << " threads -> " << o.out << "\n";
  std::size_t updates = 0;
  double seconds = 0;
  std::vector<std::string> learned_nothing;  // accuracies not above the majority class
  const std::vector<std::string> selectors = {"exp", "pe", "ps"};
  for (std::size_t which = 0; which < datasets.size(); ++which) {
    const std::string& dataset = datasets[which];
    const Dataset* data = &loaded[which];
    for (const Loss loss : {Loss::kLogistic, Loss::kHinge}) {
      const std::string row = dataset + "/" + LossName(loss);
      auto run = [&](const std::string& variant) {
        FedSelConfig config;
        config.loss = loss;
        config.variant = variant;
        config.epsilon = o.epsilon;
        config.gradient_scaling = scaling;
        // The non-private reference steps at alpha = 1: the private runs'
        // alpha = 4 makes it diverge on Bank.
        if (variant == "np") config.learning_rate = 1.0;
        const auto r = RunCrossValidation(config, *data, cv, pool, row + " " + variant);
        runs << CrossValidationRecord(dataset, *data, config, cv, r, std::nullopt).dump() << "\n";
        updates += r.updates;
        seconds += r.seconds;
        return r;
      };
      const auto np = run("np");
      const auto pm = run("pm");
      const double uniform_pm = run("uniform-pm").MeanAccuracy();
      std::map<std::string, double> acc;
      for (const auto& s : selectors) {
        acc[s] = run(s + "-pm").MeanAccuracy();
        acc[s + "-c"] = run(s + "-pm-c").MeanAccuracy();
      }
      const auto& paper = PaperTable3().at(row);
      auto flag = [&](const std::string& name, double accuracy) {
        if (accuracy <= pm.MeanMajority()) {
          learned_nothing.push_back(row + " " + name + " " + Fixed(100 * accuracy) +
                                    " % <= " + Fixed(100 * pm.MeanMajority()) + " % majority");
        }
      };
      flag("np", np.MeanAccuracy());
      flag("pm", pm.MeanAccuracy());
      flag("uniform-pm", uniform_pm);
      for (const auto& s : selectors) {
        flag(s + "-pm", acc[s]);
        flag(s + "-pm-c", acc[s + "-c"]);
      }
      md << "| " << dataset << " | " << LossName(loss) << " | " << Fixed(100 * pm.MeanMajority())
         << " | " << Fixed(100 * np.MeanAccuracy()) << " | " << Fixed(100 * pm.MeanAccuracy())
         << " | " << Fixed(100 * uniform_pm);
      // Accuracies in percent; gains and losses in points.
      csv << dataset << "," << LossName(loss) << "," << Percent(pm.MeanMajority()) << ","
          << Percent(np.MeanAccuracy()) << "," << Percent(pm.MeanAccuracy()) << ","
          << Percent(uniform_pm);
      for (const auto& s : selectors) {
        csv << "," << Percent(acc[s]) << "," << Percent(acc[s + "-c"]);
      }
      for (std::size_t i = 0; i < selectors.size(); ++i) {
        const double gain = 100 * (acc[selectors[i] + "-c"] - pm.MeanAccuracy());
        const double loss_points = 100 * (acc[selectors[i] + "-c"] - acc[selectors[i]]);
        md << " | " << Fixed(gain) << " (" << Fixed(paper.gain[i]) << ") | " << Fixed(loss_points)
           << " (" << Fixed(paper.loss[i]) << ")";
        csv << "," << gain << "," << loss_points;
      }
      md << " |\n";
      csv << "\n";
      out << "  done " << row << "\n";
      out.flush();
    }
  }
  std::ostringstream text;
  text << "FedSel Table 3, eps = " << o.epsilon << ", gradients " << o.gradient_scaling
       << ": gains and losses in accuracy points, ours "
       << "(paper's in parentheses); majority, NP, PM and U-PM (uniform selection, not "
       << "enlarged: the control) are our accuracies in %. " << cv.repeats << " x " << cv.folds
       << "-fold CV, seed " << o.seed << ".\n\n"
       << md.str();
  if (!learned_nothing.empty()) {
    text << "\nNot better than the majority class (these models learned nothing):\n";
    for (const auto& line : learned_nothing) text << "- " << line << "\n";
  }
  ReplaceOut(o.out + "/table3.csv", csv.str());
  ReplaceOut(o.out + "/table3.md", text.str());
  out << "\n"
      << text.str() << "\nTable 3 time: " << Fixed(seconds, 1) << " s of training, "
      << Fixed(static_cast<double>(updates) / seconds, 0) << " client updates/s\n";
  if (!o.no_figures) {
    out << "\nFigures (ADULT, logistic, " << (o.quick ? "1 x 2" : "2 x 5") << "-fold CV):\n";
    ReproduceFedSelFigures(o, pool, out, runs);
  }
  (void)err;
  return 0;
}

}  // namespace fedldp::cli
