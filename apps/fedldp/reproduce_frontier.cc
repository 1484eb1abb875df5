// fedldp reproduce frontier: accuracy against an honest total eps per client
// for the papers' methods, the Gaussian baseline and the vector randomizers,
// with and without the shuffler (sim/frontier.h does the work).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "fedldp/sim/frontier.h"
#include "progress.h"

namespace fedldp::cli {

void SetupReproduceFrontier(CLI::App& reproduce, ReproduceFrontierOptions& o) {
  auto* app = reproduce.add_subcommand(
      "frontier",
      "The accuracy-privacy frontier (docs/frontier.md): FedSel PS-PM, flat PM, LDP-FL's\n"
      "per-weight two-point at eps/d per coordinate, the Gaussian, PrivUnitG and\n"
      "FastProjUnit, local and through the shuffler, at total eps in {0.5,1,2,4,8} per\n"
      "client, on the same folds and seeds. Each fold chooses lr, m / N and the clip on\n"
      "validation rows carved from its own training rows (nested CV); the non-private\n"
      "model is tuned the same way. Writes DIR/frontier.csv, DIR/frontier.jsonl,\n"
      "DIR/summary.md and the plots DIR/frontier-local.* and DIR/frontier-shuffled.*.");
  app->add_option("--out", o.out, "Output folder")->required();
  app->add_flag("--quick", o.quick,
                "A smoke run: eps in {1, 4}, 1 x 2-fold CV, one validation split, a 4-point grid");
  app->add_option("--dataset", o.dataset, "A binary dataset (see train)")->capture_default_str();
  app->add_option("--data-dir", o.data_dir, "Folder of the dataset files");
  app->add_option("--repeats", o.repeats, "Cross-validation repeats")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app->add_option("--folds", o.folds, "Cross-validation folds")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  app->add_option("--tuning-splits", o.tuning_splits, "Validation splits per grid point")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app->add_option("--delta", o.delta,
                  "Total delta per client of the shuffled runs, and the Gaussian's per report")
      ->capture_default_str();
  app->add_option("--seed", o.seed, "Seed")->capture_default_str();
  app->add_option("--threads", o.threads, "Threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app->add_flag("--no-figures", o.no_figures, "Data only, no plots");
}

namespace {

std::string Num(double v, int digits = 4) {
  std::ostringstream s;
  s << std::setprecision(digits) << v;
  return s.str();
}

std::string Pct(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100 * v;
  return s.str();
}

std::string Chosen(const std::vector<FedSelConfig>& chosen, bool vector) {
  std::string s;
  for (const FedSelConfig& c : chosen) {
    if (!s.empty()) s += ";";
    s += Num(c.learning_rate) + "/" + Num(c.batch_fraction) + (vector ? "/" + Num(c.clip) : "") +
         "/" + std::to_string(c.epochs);
  }
  return s;
}

bool IsVector(const std::string& method) {
  auto v = ParseFedSelVariant(method);
  return v.ok() && v->kind == FedSelVariant::Kind::kVector;
}

// A finite number, or null (the non-private row's eps is infinite).
nlohmann::ordered_json Number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

std::string RowJson(const FrontierRow& r, const Frontier& f, const std::string& dataset,
                    std::uint64_t seed) {
  nlohmann::ordered_json o;
  StartRecord(o);
  o["dataset"] = dataset;
  o["seed"] = seed;
  o["method"] = r.method;
  o["mode"] = r.method == "np" ? "non-private" : r.shuffled ? "shuffled" : "local";
  o["target_epsilon"] = Number(r.target_epsilon);
  o["total_epsilon"] = Number(r.total_epsilon);
  o["total_delta"] = Number(r.total_delta);
  o["local_epsilon"] = Number(r.local_epsilon);
  if (!r.skipped.empty()) {
    o["accuracy_mean"] = nullptr;
    o["accuracy_sd"] = nullptr;
    o["fold_accuracies"] = nullptr;
    o["skipped"] = r.skipped;
  } else {
    o["accuracy_mean"] = Number(Percent(r.cv.MeanAccuracy()));
    o["accuracy_sd"] = Number(Percent(r.cv.StdAccuracy()));
    o["fold_accuracies"] = nlohmann::ordered_json::array();
    for (const auto& fold : r.cv.folds)
      o["fold_accuracies"].push_back(Number(Percent(fold.accuracy)));
    o["chosen"] = nlohmann::ordered_json::array();
    for (const FedSelConfig& c : r.chosen) {
      nlohmann::ordered_json point;
      AddFedSelConfigFields(point, c);
      o["chosen"].push_back(std::move(point));
    }
    o["learned"] = r.learned;
    o["skipped"] = nullptr;
  }
  o["majority_mean"] = Number(Percent(f.majority));
  o["nonprivate_mean"] = Number(Percent(f.nonprivate.cv.MeanAccuracy()));
  return o.dump();
}

}  // namespace

int RunReproduceFrontier(const ReproduceFrontierOptions& o, std::ostream& out, std::ostream& err) {
  FrontierConfig config;
  config.delta = o.delta;
  config.cv = {o.repeats, o.folds, o.seed};
  config.tuning.splits = o.tuning_splits;
  config.tuning.seed = o.seed;
  if (o.quick) {
    config.epsilons = {1, 4};
    config.cv = {1, 2, o.seed};
    config.tuning.splits = 1;
    FedSelGrid grid;
    grid.learning_rates = {1, 4};
    grid.batch_fractions = {0.02, 0.1};
    grid.tail_averages = {0.5};
    config.grid = grid;
  }
  if (const Status s = config.Validate(); !s.ok()) throw UsageError(s.error());
  auto data = LoadNamed(o.dataset, DataDir(o.data_dir));
  if (!data.ok()) throw UsageError(data.error() + DataDirHint(data.error()));
  if (data->classes != 2) throw UsageError("dataset " + o.dataset + " is not a binary task");
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) throw UsageError("cannot create " + o.out + ": " + ec.message());
  CheckOut(o.out + "/frontier.jsonl");

  ThreadPool pool(static_cast<std::size_t>(o.threads));
  out << "fedldp reproduce frontier: " << o.dataset << " (" << data->size()
      << " records, d = " << data->dimension << "), " << config.cv.repeats << " x "
      << config.cv.folds << "-fold CV, " << config.tuning.splits
      << " validation split(s) per grid point, seed " << o.seed << ", " << pool.size()
      << " threads\n";
  out.flush();
  // A bar on a terminal; otherwise (a log file, CI) one line per row.
  ProgressBar bar("frontier");
  const bool terminal = isatty(STDERR_FILENO) == 1;
  const auto start = std::chrono::steady_clock::now();
  auto frontier = RunFrontier(
      config, *data, pool, [&](std::size_t done, std::size_t total, const std::string& what) {
        bar.Update(done, total);
        if (!terminal) {
          err << "[" << done << "/" << total << "] " << what << " done, "
              << static_cast<long>(
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                         .count())
              << " s\n";
          err.flush();
        }
      });
  if (!frontier.ok()) throw UsageError(frontier.error());
  const Frontier& f = *frontier;

  // The table, the files.
  std::ostringstream csv, jsonl, md;
  csv << "method,mode,target_epsilon,total_epsilon,total_delta,local_epsilon,accuracy_mean,"
         "accuracy_sd,folds,majority_mean,nonprivate_mean,learned,chosen_lr_m_clip_epochs,"
         "skipped\n";
  md << "| method | mode | target eps | spent (eps, delta) | local eps per report | accuracy % "
        "| learned |\n|---|---|---|---|---|---|---|\n";
  const auto add = [&](const FrontierRow& r) {
    const std::string mode = r.method == "np" ? "non-private" : r.shuffled ? "shuffled" : "local";
    jsonl << RowJson(r, f, o.dataset, o.seed) << "\n";
    csv << r.method << "," << mode << "," << Num(r.target_epsilon, 6) << ","
        << Num(r.total_epsilon, 6) << "," << Num(r.total_delta, 6) << "," << Num(r.local_epsilon, 6)
        << ",";
    if (r.skipped.empty()) {
      csv << Percent(r.cv.MeanAccuracy()) << "," << Percent(r.cv.StdAccuracy()) << ","
          << r.cv.folds.size();
    } else {
      csv << ",,0";
    }
    csv << "," << Percent(f.majority) << "," << Percent(f.nonprivate.cv.MeanAccuracy()) << ","
        << (r.skipped.empty() ? (r.learned ? "yes" : "no") : "") << ","
        << Chosen(r.chosen, IsVector(r.method)) << ",";
    std::string why = r.skipped;
    for (char& c : why) c = c == ',' ? ';' : c;
    csv << why << "\n";
    md << "| " << r.method << " | " << mode << " | "
       << (r.method == "np" ? "-" : Num(r.target_epsilon)) << " | ";
    if (!r.skipped.empty()) {
      md << "| | skipped: " << r.skipped << " | |\n";
      return;
    }
    if (r.method == "np") {
      md << "none | none | ";
    } else {
      md << "(" << Num(r.total_epsilon) << ", " << Num(r.total_delta, 2) << ") | "
         << Num(r.local_epsilon) << " | ";
    }
    md << Pct(r.cv.MeanAccuracy()) << " +- " << Pct(r.cv.StdAccuracy()) << " | "
       << (r.method == "np" ? ""
           : r.learned      ? "yes"
                            : "**no: learned nothing**")
       << " |\n";
  };
  add(f.nonprivate);
  for (const FrontierRow& r : f.rows) add(r);
  md << "\nmajority class: " << Pct(f.majority) << " %. Accuracy: mean +- sd over "
     << config.cv.repeats * config.cv.folds << " test folds. " << Num(f.seconds, 4) << " s.\n";
  // The goals of issue 20, as this run measured them.
  const auto best_at = [&](bool shuffled, double eps) -> const FrontierRow* {
    const FrontierRow* best = nullptr;
    for (const FrontierRow& r : f.rows) {
      if (r.shuffled != shuffled || r.target_epsilon > eps || !r.skipped.empty()) continue;
      if (!best || r.cv.MeanAccuracy() > best->cv.MeanAccuracy()) best = &r;
    }
    return best;
  };
  std::ostringstream goals;
  if (const FrontierRow* r = best_at(false, 2)) {
    goals << "best local at total eps <= 2: " << r->method << " " << Pct(r->cv.MeanAccuracy())
          << " % at eps " << Num(r->target_epsilon) << " (Adult goal >= 81 %)\n";
  }
  if (const FrontierRow* r = best_at(true, 1)) {
    goals << "best shuffled at central eps <= 1, delta " << Num(config.delta, 2) << ": "
          << r->method << " " << Pct(r->cv.MeanAccuracy()) << " % at eps " << Num(r->target_epsilon)
          << " (Adult goal >= 83 %)\n";
  }
  std::size_t nothing = 0;
  for (const FrontierRow& r : f.rows) nothing += r.skipped.empty() && !r.learned;
  goals << nothing << " private row(s) learned nothing (not above the majority class by 2 SE)\n";
  md << "\n" << goals.str();

  ReplaceOut(o.out + "/frontier.csv", csv.str());
  ReplaceOut(o.out + "/frontier.jsonl", jsonl.str());
  ReplaceOut(o.out + "/summary.md", md.str());
  out << md.str();
  if (!o.no_figures) {
    double lo = config.epsilons.front(), hi = config.epsilons.front();
    for (double e : config.epsilons) lo = std::min(lo, e), hi = std::max(hi, e);
    for (const bool shuffled : {false, true}) {
      Figure fig;
      fig.id = shuffled ? "frontier-shuffled" : "frontier-local";
      fig.title = o.dataset +
                  (shuffled ? ", shuffled: central (eps, " + Num(config.delta, 2) + ") per client"
                            : ", local: total eps per client");
      fig.xlabel = shuffled ? "central eps per client, total" : "eps per client, total";
      fig.ylabel = "test accuracy (%)";
      fig.log_x = true;
      fig.error_bars = "error bars: ± 1 sd of the test accuracy over " +
                       std::to_string(config.cv.repeats) + " x " + std::to_string(config.cv.folds) +
                       "-fold CV, tuned on the training rows of each fold; dashed: the mean alone";
      for (const std::string& method : config.methods) {
        Series s{method, {}, false};
        for (const FrontierRow& r : f.rows) {
          if (r.method != method || r.shuffled != shuffled || !r.skipped.empty()) continue;
          s.points.push_back(
              {r.total_epsilon, 100 * r.cv.MeanAccuracy(), 100 * r.cv.StdAccuracy()});
        }
        if (!s.points.empty()) fig.series.push_back(std::move(s));
      }
      if (fig.series.empty()) continue;
      const double np = 100 * f.nonprivate.cv.MeanAccuracy();
      fig.series.push_back({"non-private (tuned)", {{lo / 2, np, 0}, {hi, np, 0}}, true});
      fig.series.push_back(
          {"majority class", {{lo / 2, 100 * f.majority, 0}, {hi, 100 * f.majority, 0}}, true});
      DrawFigure(fig, o.out, err);
    }
  }
  out << "wrote " << o.out << "/{frontier.csv,frontier.jsonl,summary.md"
      << (o.no_figures ? "" : ",frontier-local.*,frontier-shuffled.*") << "}\n";
  return 0;
}

}  // namespace fedldp::cli
