#include "fedldp/sim/frontier_reproduction.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fedldp/base/files.h"
#include "fedldp/base/format.h"
#include "fedldp/base/limits.h"
#include "fedldp/base/units.h"
#include "fedldp/data/loaders.h"
#include "fedldp/sim/records.h"

namespace fedldp {

namespace {

std::string Chosen(const std::vector<FedSelConfig>& chosen, bool vector) {
  std::string s;
  for (const FedSelConfig& c : chosen) {
    if (!s.empty()) s += ";";
    s += Significant(c.learning_rate) + "/" + Significant(c.batch_fraction) +
         (vector ? "/" + Significant(c.clip) : "") + "/" + std::to_string(c.epochs);
  }
  return s;
}

bool IsVector(const std::string& method) {
  auto v = ParseFedSelVariant(method);
  return v.ok() && TraitsOf(*v).whole_vector;
}

std::string RowJson(const FrontierRow& r, const Frontier& f, const std::string& dataset,
                    std::uint64_t seed) {
  nlohmann::ordered_json o;
  StartRecord(o);
  o["dataset"] = dataset;
  o["seed"] = seed;
  o["method"] = r.method;
  o["mode"] = r.method == "np" ? "non-private" : r.shuffled ? "shuffled" : "local";
  o["target_epsilon"] = FiniteOrNull(r.target_epsilon);
  o["total_epsilon"] = FiniteOrNull(r.total_epsilon);
  o["total_delta"] = FiniteOrNull(r.total_delta);
  o["local_epsilon"] = FiniteOrNull(r.local_epsilon);
  o["privacy"] = PrivacyJson(r.privacy);
  if (!r.skipped.empty()) {
    o["accuracy_mean"] = nullptr;
    o["accuracy_sd"] = nullptr;
    o["fold_accuracies"] = nullptr;
    o["skipped"] = r.skipped;
  } else {
    o["accuracy_mean"] = FiniteOrNull(Percent(r.cv.MeanAccuracy()));
    o["accuracy_sd"] = FiniteOrNull(Percent(r.cv.StdAccuracy()));
    o["fold_accuracies"] = nlohmann::ordered_json::array();
    for (const auto& fold : r.cv.folds)
      o["fold_accuracies"].push_back(FiniteOrNull(Percent(fold.accuracy)));
    o["chosen"] = nlohmann::ordered_json::array();
    for (const FedSelConfig& c : r.chosen) {
      nlohmann::ordered_json point;
      AddFedSelConfigFields(point, c);
      o["chosen"].push_back(std::move(point));
    }
    o["learned"] = r.learned;
    o["skipped"] = nullptr;
  }
  o["majority_mean"] = FiniteOrNull(Percent(f.majority));
  o["nonprivate_mean"] = FiniteOrNull(Percent(f.nonprivate.cv.MeanAccuracy()));
  return o.dump();
}

Status Replace(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, text, 0644, /*overwrite=*/true);
}

std::string Mode(const FrontierRow& r) {
  return r.method == "np" ? "non-private" : r.shuffled ? "shuffled" : "local";
}

std::string CsvRow(const FrontierRow& r, const Frontier& f) {
  std::ostringstream csv;
  csv << r.method << "," << Mode(r) << "," << Significant(r.target_epsilon, 6) << ","
      << Significant(r.total_epsilon, 6) << "," << Significant(r.total_delta, 6) << ","
      << Significant(r.local_epsilon, 6) << ",";
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
  for (char& ch : why) ch = ch == ',' ? ';' : ch;
  csv << why << "\n";
  return csv.str();
}

std::string MarkdownRow(const FrontierRow& r) {
  std::ostringstream md;
  md << "| " << r.method << " | " << Mode(r) << " | "
     << (r.method == "np" ? "-" : Significant(r.target_epsilon)) << " | ";
  if (!r.skipped.empty()) {
    md << "| | skipped: " << r.skipped << " | |\n";
    return md.str();
  }
  if (r.method == "np") {
    md << "none | none | ";
  } else {
    md << "(" << Significant(r.total_epsilon) << ", " << Significant(r.total_delta, 2) << ") | "
       << Significant(r.local_epsilon) << " | ";
  }
  md << PercentText(r.cv.MeanAccuracy()) << " +- " << PercentText(r.cv.StdAccuracy()) << " | "
     << (r.method == "np" ? ""
         : r.learned      ? "yes"
                          : "**no: learned nothing**")
     << " |\n";
  return md.str();
}

// The goals of issue 20, as this run measured them.
std::string Goals(const Frontier& f, const FrontierConfig& config) {
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
    goals << "best local at total eps <= 2: " << r->method << " "
          << PercentText(r->cv.MeanAccuracy()) << " % at eps " << Significant(r->target_epsilon)
          << " (Adult goal >= 81 %)\n";
  }
  if (const FrontierRow* r = best_at(true, 1)) {
    goals << "best shuffled at central eps <= 1, delta " << Significant(config.delta, 2) << ": "
          << r->method << " " << PercentText(r->cv.MeanAccuracy()) << " % at eps "
          << Significant(r->target_epsilon) << " (Adult goal >= 83 %)\n";
  }
  std::size_t nothing = 0;
  for (const FrontierRow& r : f.rows) nothing += r.skipped.empty() && !r.learned;
  goals << nothing << " private row(s) learned nothing (not above the majority class by 2 SE)\n";
  return goals.str();
}

// The frontier of the local or the shuffled rows: accuracy against the
// total eps, per method, beside the non-private model and the majority.
Figure FrontierFigure(const FrontierReproductionConfig& c, const FrontierConfig& config,
                      const Frontier& f, bool shuffled) {
  double lo = config.epsilons.front(), hi = config.epsilons.front();
  for (double e : config.epsilons) lo = std::min(lo, e), hi = std::max(hi, e);
  Figure fig;
  fig.id = shuffled ? "frontier-shuffled" : "frontier-local";
  fig.title = c.data_label() + (shuffled ? ", shuffled: central (eps, " +
                                               Significant(config.delta, 2) + ") per client"
                                         : ", local: total eps per client");
  fig.xlabel = shuffled ? "central eps per client, total" : "eps per client, total";
  fig.ylabel = "test accuracy (%)";
  fig.log_x = true;
  fig.error_bars = "error bars: ± 1 sd of the test accuracy over " +
                   std::to_string(config.cv.repeats) + " x " + std::to_string(config.cv.folds) +
                   "-fold CV, tuned on the training rows of each fold; dashed: the mean alone";
  for (const FedSelVariant& variant : config.methods) {
    const std::string method = FedSelVariantName(variant);
    Series s{method, {}, false};
    for (const FrontierRow& r : f.rows) {
      if (r.method != method || r.shuffled != shuffled || !r.skipped.empty()) continue;
      s.points.push_back({r.total_epsilon, 100 * r.cv.MeanAccuracy(), 100 * r.cv.StdAccuracy()});
    }
    if (!s.points.empty()) fig.series.push_back(std::move(s));
  }
  if (fig.series.empty()) return fig;
  const double np = 100 * f.nonprivate.cv.MeanAccuracy();
  fig.series.push_back({"non-private (tuned)", {{lo / 2, np, 0}, {hi, np, 0}}, true});
  fig.series.push_back(
      {"majority class", {{lo / 2, 100 * f.majority, 0}, {hi, 100 * f.majority, 0}}, true});
  return fig;
}

// The table's files (frontier.csv, frontier.jsonl, summary.md) and the
// figures; the summary and figures go into `result`.
Status WriteFrontier(const FrontierReproductionConfig& c, FrontierReproduction& result) {
  const Frontier& f = result.frontier;
  const FrontierConfig& config = result.config;
  std::ostringstream csv, jsonl, md;
  csv << "method,mode,target_epsilon,total_epsilon,total_delta,local_epsilon,accuracy_mean,"
         "accuracy_sd,folds,majority_mean,nonprivate_mean,learned,chosen_lr_m_clip_epochs,"
         "skipped\n";
  md << "| method | mode | target eps | spent (eps, delta) | local eps per report | accuracy % "
        "| learned |\n|---|---|---|---|---|---|---|\n";
  const auto add = [&](const FrontierRow& r) {
    jsonl << RowJson(r, f, c.data_label(), c.seed) << "\n";
    csv << CsvRow(r, f);
    md << MarkdownRow(r);
  };
  add(f.nonprivate);
  for (const FrontierRow& r : f.rows) add(r);
  md << "\nmajority class: " << PercentText(f.majority) << " %. Accuracy: mean +- sd over "
     << config.cv.repeats * config.cv.folds << " test folds. " << Significant(f.seconds, 4)
     << " s.\n";
  md << "\n" << Goals(f, config);
  result.summary = md.str();
  for (const auto& [name, text] : {std::pair<const char*, std::string>{"frontier.csv", csv.str()},
                                   {"frontier.jsonl", jsonl.str()},
                                   {"summary.md", result.summary}}) {
    if (Status s = Replace(c.out + "/" + name, text); !s.ok()) return Error{s.error(), s.code()};
  }
  if (!c.figures) return Status::Ok();
  for (const bool shuffled : {false, true}) {
    Figure fig = FrontierFigure(c, config, f, shuffled);
    if (fig.series.empty()) continue;
    auto drawn = WriteFigure(fig, c.out);
    if (!drawn.ok()) return Error{drawn.error(), drawn.code()};
    if (!drawn->empty()) result.figure_notes.push_back(*drawn);
    result.figures.push_back(std::move(fig));
  }
  return Status::Ok();
}

}  // namespace

FrontierConfig FrontierReproductionConfig::Frontier() const {
  FrontierConfig config;
  config.delta = delta;
  config.cv = {repeats, folds, seed};
  config.tuning.splits = tuning_splits;
  config.tuning.seed = seed;
  if (quick) {
    config.epsilons = {1, 4};
    config.cv = {1, 2, seed};
    config.tuning.splits = 1;
    FedSelGrid grid;
    grid.learning_rates = {1, 4};
    grid.batch_fractions = {0.02, 0.1};
    grid.tail_averages = {0.5};
    config.grid = grid;
  }
  return config;
}

Status FrontierReproductionConfig::Validate() const {
  if (out.empty()) return Error{"out must name a folder"};
  if (!label_column.empty() && data_file.empty()) {
    return Error{"a label column applies to a CSV data file only"};
  }
  FEDLDP_RETURN_IF_ERROR(CheckCount(kRepeats, repeats));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kFolds, folds));
  if (tuning_splits < 1 || tuning_splits > 100) return Error{"tuning splits must be in [1, 100]"};
  if (threads < 0 || threads > 1024) return Error{"threads must be in [0, 1024]"};
  return Frontier().Validate();
}

Result<FrontierReproduction> ReproduceFrontier(const FrontierReproductionConfig& c,
                                               const FrontierReproductionObserver& observer,
                                               std::stop_token stop) {
  if (const Status s = c.Validate(); !s.ok()) return Error{s.error()};
  FrontierReproduction result;
  result.config = c.Frontier();
  const FrontierConfig& config = result.config;
  auto data = c.data_file.empty() ? LoadNamed(c.dataset, c.data_dir)
                                  : LoadDataFile(c.data_file, c.label_column);
  if (!data.ok()) return Error{data.error(), data.code()};
  const std::string& named = c.data_label();
  if (data->classes != 2) {
    return Error{named + " has " + std::to_string(data->classes) +
                 " classes: the linear frontier compares methods on a binary task"};
  }
  std::error_code ec;
  std::filesystem::create_directories(c.out, ec);
  if (ec) return Error{"cannot create " + c.out + ": " + ec.message()};
  // Before an hour of work, not after it.
  if (Status s = CheckOutputFile(c.out + "/frontier.jsonl"); !s.ok()) {
    return Error{s.error(), s.code()};
  }

  ThreadPool pool(static_cast<std::size_t>(c.threads));
  if (observer.started) {
    std::ostringstream s;
    s << named << " (" << data->size() << " records, d = " << data->dimension << "), "
      << config.cv.repeats << " x " << config.cv.folds << "-fold CV, " << config.tuning.splits
      << " validation split(s) per grid point, seed " << c.seed << ", " << pool.size()
      << " threads";
    if (const std::string w = FeatureScaleWarning(*data); !w.empty()) s << "\nwarning: " << w;
    observer.started(s.str());
  }
  auto frontier = RunFrontier(config, *data, pool, observer.progress, std::move(stop));
  if (!frontier.ok()) return Error{frontier.error(), frontier.code()};
  result.frontier = std::move(frontier).value();
  if (result.frontier.stopped) {
    result.stopped = true;
    return result;
  }
  if (Status s = WriteFrontier(c, result); !s.ok()) return Error{s.error(), s.code()};
  return result;
}

}  // namespace fedldp
