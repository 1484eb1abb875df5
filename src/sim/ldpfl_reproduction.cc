#include "fedldp/sim/ldpfl_reproduction.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "fedldp/base/files.h"
#include "fedldp/base/format.h"
#include "fedldp/base/limits.h"
#include "fedldp/base/units.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/sim/records.h"
#include "fedldp/sim/run_journal.h"
#include "fedldp/sim/thread_pool.h"

namespace fedldp {

namespace {

struct Paper {
  std::size_t clients;         // Table 1 and Fig. 5
  double radius;               // fixed range (0, r)
  double fig3_epsilon;         // Fig. 3's budget
  std::vector<double> fig5;    // Fig. 5's budgets
  std::vector<std::size_t> n;  // Fig. 3's client counts (ours: the paper's axis is not given)
  double table1[2][2];         // [eps 5, eps 10][fixed, adaptive], %
};

Paper PaperFor(ImageDataset dataset) {
  if (dataset == ImageDataset::kMnist) {
    return {100,
            0.075,
            1.0,
            {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0},
            {50, 100, 200, 300, 500},
            {{96.34, 96.06}, {96.39, 96.11}}};
  }
  return {200,
          0.015,
          5.0,
          {1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
          {50, 100, 200, 300, 500},
          {{85.95, 87.54}, {86.10, 87.57}}};
}

// One configuration of a sweep.
struct Setting {
  bool is_private = true;
  bool adaptive = false;
  double epsilon = 0;
  std::size_t clients = 0;
  std::string Key() const {
    std::ostringstream s;
    s << (is_private ? (adaptive ? "adaptive" : "fixed") : "noise-free") << " n=" << clients;
    if (is_private) s << " eps=" << epsilon;
    return s.str();
  }
};

struct Stats {
  double mean = 0, sd = 0;
};

std::string Cell(const Stats& s, int repeats) {
  return Fixed(100 * s.mean) + (repeats > 1 ? " ± " + Fixed(100 * s.sd) : "");
}

// The line under each figure: what its error bars are.
std::string ErrorBars(int repeats) {
  return repeats > 1 ? "error bars: ± 1 sd over " + std::to_string(repeats) +
                           " runs (seeds) per point; dashed: one value, no bars"
                     : "one run per point (--repeats 1): no error bars";
}

// Thrown inside the runner to leave every loop at once; caught in
// ReproduceLdpFl, never outside this file.
struct Failed {
  Error error;
};
// A file written: throws Failed if it could not be.
void Check(const Status& written) {
  if (!written.ok()) throw Failed{{written.error(), written.code()}};
}
struct Stopped {};

class Runner {
 public:
  Runner(const LdpFlReproductionConfig& c, const Paper& paper, const Dataset& train,
         const Dataset& test, const LdpFlReproductionObserver& observer, std::stop_token stop)
      : c_(c),
        paper_(paper),
        train_(train),
        test_(test),
        observer_(observer),
        stop_(std::move(stop)),
        pool_(static_cast<std::size_t>(c.threads)),
        path_(c.out + "/runs.jsonl") {}

  // Opens runs.jsonl (sim/run_journal.h), keeping its runs with resume (a
  // torn or foreign line, or one of accuracies not in percent as earlier
  // builds wrote them, is run again). A run killed from now on loses none of
  // the kept ones.
  void Open() {
    auto journal = RunJournal::Open(path_, c_.resume);
    if (!journal.ok()) throw Failed{{journal.error(), journal.code()}};
    journal_.emplace(std::move(journal).value());
  }
  std::size_t resumed() const { return journal_->size(); }

  // The progress counter's total: the runs of `settings` (each repeated)
  // that are not already in runs.jsonl.
  void Plan(const std::vector<Setting>& settings) {
    std::set<std::string> keys;
    for (const Setting& s : settings) {
      for (int r = 0; r < c_.repeats; ++r) {
        const std::string key = KeyOf(s, c_.seed + r);
        if (!journal_->Find(key)) keys.insert(key);
      }
    }
    planned_ = keys.size();
  }

  // Mean and standard deviation over the repeats of one setting.
  Stats Get(const Setting& s) {
    if (s.is_private) {  // all clients join every round
      privacy_[{s.epsilon, s.clients}] =
          AccountLdpFl(s.epsilon, parameters_, static_cast<std::size_t>(c_.rounds), s.clients);
    }
    std::vector<double> values;
    for (int r = 0; r < c_.repeats; ++r) values.push_back(One(s, c_.seed + r));
    Stats st;
    const double n = static_cast<double>(values.size());
    for (double v : values) st.mean += v / n;
    for (double v : values) st.sd += (v - st.mean) * (v - st.mean) / std::max(1.0, n - 1);
    st.sd = std::sqrt(st.sd);
    return st;
  }

  void Report(LdpFlReproduction& r) const {
    r.trained = trained_;
    r.privacy = privacy_;
    r.private_seconds = seconds_;
    r.round_seconds = rounds_ ? seconds_ / static_cast<double>(rounds_) : 0;
    r.perturb_share = seconds_ > 0 ? perturb_ / seconds_ : 0;
    r.shuffle_share = seconds_ > 0 ? shuffle_ / seconds_ : 0;
  }

 private:
  // Only private fixed-range runs perturb updates: adaptive ranges are
  // defined on weights, and the noise-free model is the same either way.
  bool Updates(const Setting& s) const { return c_.perturb_updates && s.is_private && !s.adaptive; }

  static std::string Shown(const Setting& s, std::uint64_t seed) {
    return s.Key() + " seed=" + std::to_string(seed);
  }
  // Everything that changes the result is in the key: a resumed folder never
  // mixes runs of another dataset, E, B, round count, subsample, input
  // scaling or perturbed quantity.
  std::string KeyOf(const Setting& s, std::uint64_t seed) const {
    return std::string(ImageDatasetName(c_.dataset)) + " E=" + std::to_string(c_.local_epochs) +
           " B=" + std::to_string(c_.batch) + " rounds=" + std::to_string(c_.rounds) +
           " rows=" + std::to_string(train_.size()) + (c_.raw_inputs ? " raw" : "") +
           (Updates(s) ? " updates" : "") + " " + Shown(s, seed);
  }

  // The paper's CNN in setting `s`.
  LdpFlConfig Training(const Setting& s) const {
    LdpFlConfig c;
    c.arch = "cnn";
    c.clients = s.clients;
    c.rounds = c_.rounds;
    c.local_epochs = c_.local_epochs;
    c.batch = c_.batch;
    c.learning_rate = 0.03;
    c.is_private = s.is_private;
    c.epsilon = s.is_private ? s.epsilon : 1.0;
    c.adaptive = s.adaptive;
    c.fixed_range = {0, paper_.radius};
    c.standardize_inputs = !c_.raw_inputs;
    c.perturb_updates = Updates(s);
    return c;
  }

  // A run's line in runs.jsonl, before its results.
  nlohmann::ordered_json Record(const std::string& key, const Setting& s, const LdpFlConfig& c,
                                std::uint64_t seed) const {
    nlohmann::ordered_json j;
    j["key"] = key;
    StartRecord(j);
    j["dataset"] = ImageDatasetName(c_.dataset);
    j["private"] = s.is_private;
    j["range"] = s.adaptive ? "adaptive" : "fixed";
    j["perturb"] = c.perturb_updates ? "updates" : "weights";
    j["epsilon"] = c.epsilon;
    j["clients"] = s.clients;
    j["rounds"] = c.rounds;
    j["local_epochs"] = c.local_epochs;
    j["batch"] = c.batch;
    j["lr"] = c.learning_rate;
    j["standardized"] = c.standardize_inputs;
    j["train_rows"] = train_.size();
    j["seed"] = seed;
    return j;
  }

  double One(const Setting& s, std::uint64_t seed) {
    const std::string key = KeyOf(s, seed);
    if (const nlohmann::json* done = journal_->Find(key))
      return (*done)["accuracy"].get<double>() / 100;
    if (stop_.stop_requested()) throw Stopped{};
    LdpFlReproductionRun progress;
    progress.index = ++index_;
    progress.planned = planned_;
    progress.label = Shown(s, seed);
    const LdpFlConfig c = Training(s);
    const auto start = std::chrono::steady_clock::now();
    auto run = TrainLdpFl(
        c, train_, test_, seed,
        [&](const LdpFlRound& r) {
          if (observer_.round) observer_.round(progress, r.round, c.rounds);
        },
        stop_, pool_.AsParallelFor());
    if (!run.ok()) throw Failed{{progress.label + ": " + run.error(), run.code()}};
    if (run->stopped) throw Stopped{};
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double perturb = 0, shuffle = 0;
    nlohmann::json per_round = nlohmann::json::array();
    for (const auto& r : run->rounds) {
      perturb += r.perturb_seconds;
      shuffle += r.shuffle_seconds;
      per_round.push_back(Percent(r.accuracy));
    }
    if (s.is_private) {
      seconds_ += wall, perturb_ += perturb, shuffle_ += shuffle;
      rounds_ += run->rounds.size();
    }
    ++trained_;
    const double accuracy = run->final_accuracy();
    nlohmann::ordered_json j = Record(key, s, c, seed);
    j["accuracy"] = Percent(accuracy);
    j["accuracy_per_round"] = std::move(per_round);
    j["majority"] = Percent(run->majority);
    j["seconds"] = wall;
    j["privacy"] = PrivacyJson(LdpFlPrivacyRecord(c, run->privacy, run->vector_privacy));
    Check(journal_->Append(j));
    progress.accuracy = accuracy;
    progress.seconds = wall;
    if (observer_.finished) observer_.finished(progress);
    return accuracy;
  }

  const LdpFlReproductionConfig& c_;
  const Paper& paper_;
  const Dataset& train_;
  const Dataset& test_;
  const LdpFlReproductionObserver& observer_;
  std::stop_token stop_;
  ThreadPool pool_;  // a round's clients, trained at once
  std::string path_;
  std::size_t parameters_ = NeuralNet::Create("cnn", 0).value().parameters();
  std::optional<RunJournal> journal_;  // runs.jsonl, once opened
  std::map<std::pair<double, std::size_t>, LdpFlPrivacy> privacy_;
  std::size_t index_ = 0, planned_ = 0, trained_ = 0, rounds_ = 0;
  double seconds_ = 0, perturb_ = 0, shuffle_ = 0;
};

void Replace(const std::string& path, const std::string& text) {
  Check(WriteFileAtomically(path, text, 0644, /*overwrite=*/true));
}

// The settings a call asks for, in the order it asks (for the counter):
// Table 1's, then the figures'.
std::vector<Setting> PlanSettings(const LdpFlReproductionConfig& c, const Paper& paper,
                                  std::span<const double> table_eps) {
  std::vector<Setting> plan = {{false, false, 0, paper.clients}};
  for (double e : table_eps) {
    for (bool adaptive : {false, true}) plan.push_back({true, adaptive, e, paper.clients});
  }
  if (c.figures) {
    for (double e : paper.fig5) plan.push_back({true, false, e, paper.clients});
    for (std::size_t n : paper.n) {
      plan.push_back({true, false, paper.fig3_epsilon, n});
      plan.push_back({false, false, 0, n});
    }
  }
  return plan;
}

std::string StartLine(const LdpFlReproductionConfig& c, const Paper& paper, const Dataset& train,
                      const Dataset& test) {
  std::ostringstream s;
  s << ImageDatasetName(c.dataset) << " (" << train.size() << " train, " << test.size()
    << " test), cnn, n = " << paper.clients << ", fraction 1, " << c.rounds
    << " rounds, E = " << c.local_epochs << ", B = " << c.batch << ", lr 0.03, "
    << (c.raw_inputs ? "raw [0, 1]" : "standardised") << " inputs, fixed (c, r) = (0, "
    << paper.radius << ")" << (c.perturb_updates ? " on the update W - W_global" : "") << ", "
    << c.repeats << " run(s) per setting from seed " << c.seed << " -> " << c.out;
  return s.str();
}

std::string DatasetTitle(const LdpFlReproductionConfig& c) {
  return c.dataset == ImageDataset::kMnist ? "MNIST" : "Fashion-MNIST";
}

// A setting whose mean accuracy is not above the majority class, once.
void Flag(LdpFlReproduction& result, const Setting& s, const Stats& st, double majority) {
  auto& nothing = result.learned_nothing;
  if (st.mean <= majority && std::find(nothing.begin(), nothing.end(), s.Key()) == nothing.end()) {
    nothing.push_back(s.Key());
  }
}

// Table 1 (eps 5 and 10, fixed and adaptive ranges) as markdown (into
// result.table1) and CSV (returned).
std::string Table1(LdpFlReproduction& result, Runner& runner, const Paper& paper,
                   std::size_t train_rows, double majority) {
  const LdpFlReproductionConfig& c = result.config;
  constexpr double kTableEps[] = {5, 10};
  const Stats noise_free = runner.Get({false, false, 0, paper.clients});
  std::ostringstream md;
  md << "LDP-FL Table 1 on " << DatasetTitle(c) << " (n = " << paper.clients << ", " << c.rounds
     << " rounds, E = " << c.local_epochs << ", B = " << c.batch << ", " << train_rows
     << " training images; mean" << (c.repeats > 1 ? " ± sd" : "") << " over " << c.repeats
     << " run(s)): test accuracy in %, the paper's in parentheses.\n\n"
     << "| eps | fixed (0, " << paper.radius << ")" << (c.perturb_updates ? ", updates" : "")
     << " | adaptive | noise-free FL | majority |\n"
     << "|---|---|---|---|---|\n";
  std::ostringstream csv;
  csv << "dataset,clients,epsilon,fixed,fixed_sd,adaptive,adaptive_sd,noise_free,majority,"
         "paper_fixed,paper_adaptive\n";
  Flag(result, {false, false, 0, paper.clients}, noise_free, majority);
  for (int e = 0; e < 2; ++e) {
    Stats row[2];
    for (int a = 0; a < 2; ++a) row[a] = runner.Get({true, a == 1, kTableEps[e], paper.clients});
    md << "| " << kTableEps[e] << " | " << Cell(row[0], c.repeats) << " ("
       << Fixed(paper.table1[e][0]) << ") | " << Cell(row[1], c.repeats) << " ("
       << Fixed(paper.table1[e][1]) << ") | " << Cell(noise_free, c.repeats) << " | "
       << Fixed(100 * majority) << " |\n";
    csv << ImageDatasetName(c.dataset) << "," << paper.clients << "," << kTableEps[e] << ","
        << Percent(row[0].mean) << "," << Percent(row[0].sd) << "," << Percent(row[1].mean) << ","
        << Percent(row[1].sd) << "," << Percent(noise_free.mean) << "," << Percent(majority) << ","
        << paper.table1[e][0] << "," << paper.table1[e][1] << "\n";
    for (int a = 0; a < 2; ++a) {
      Flag(result, {true, a == 1, kTableEps[e], paper.clients}, row[a], majority);
    }
  }
  if (c.quick) md << "\n(--quick: a smoke run on a subsample; not comparable with the paper.)\n";
  result.table1 = md.str();
  return csv.str();
}

Series Flat(const std::string& label, double y, const std::vector<double>& xs) {
  Series s{label, {}, true};
  for (double x : xs) s.points.push_back({x, 100 * y, 0});
  return s;
}

// Figure 5: accuracy against eps at the paper's n.
Figure Figure5(LdpFlReproduction& result, Runner& runner, const Paper& paper, double majority) {
  const LdpFlReproductionConfig& c = result.config;
  Series ldp{
      c.perturb_updates ? "LDP-FL (fixed range; updates)" : "LDP-FL (fixed range)", {}, false};
  for (double e : paper.fig5) {
    const Setting setting{true, false, e, paper.clients};
    const Stats s = runner.Get(setting);
    Flag(result, setting, s, majority);
    ldp.points.push_back({e, 100 * s.mean, 100 * s.sd});
  }
  const Stats noise_free = runner.Get({false, false, 0, paper.clients});
  return {c.dataset == ImageDataset::kMnist ? "fig5a" : "fig5b",
          "LDP-FL on " + DatasetTitle(c) + ", n = " + std::to_string(paper.clients) +
              ": accuracy vs eps",
          "eps (per weight)",
          "test accuracy (%)",
          false,
          {ldp, Flat("noise-free FL", noise_free.mean, paper.fig5),
           Flat("majority class", majority, paper.fig5)},
          ErrorBars(c.repeats)};
}

// Figure 3: accuracy against the number of clients, private and noise-free.
Figure Figure3(LdpFlReproduction& result, Runner& runner, const Paper& paper, double majority) {
  const LdpFlReproductionConfig& c = result.config;
  Series ldp_n{
      "LDP-FL at eps " + Fixed(paper.fig3_epsilon, 0) + (c.perturb_updates ? " (updates)" : ""),
      {},
      false};
  Series free_n{"noise-free FL", {}, false};
  std::vector<double> xs;
  for (std::size_t n : paper.n) {
    const Setting private_n{true, false, paper.fig3_epsilon, n}, free{false, false, 0, n};
    const Stats p = runner.Get(private_n);
    const Stats f = runner.Get(free);
    Flag(result, private_n, p, majority);
    Flag(result, free, f, majority);
    ldp_n.points.push_back({static_cast<double>(n), 100 * p.mean, 100 * p.sd});
    free_n.points.push_back({static_cast<double>(n), 100 * f.mean, 100 * f.sd});
    xs.push_back(static_cast<double>(n));
  }
  return {c.dataset == ImageDataset::kMnist ? "fig3a" : "fig3b",
          "LDP-FL on " + DatasetTitle(c) + ": accuracy vs the number of clients n",
          "clients n",
          "test accuracy (%)",
          false,
          {ldp_n, free_n, Flat("majority class", majority, xs)},
          ErrorBars(c.repeats)};
}

// Every run is done: only now are the folder's summaries replaced.
void WriteSummaries(LdpFlReproduction& result, Runner& runner, const std::string& csv) {
  const LdpFlReproductionConfig& c = result.config;
  runner.Report(result);
  Replace(c.out + "/table1.csv", csv);
  Replace(c.out + "/table1.md", result.table1);
  for (const Figure& f : result.figures) {
    auto drawn = WriteFigure(f, c.out);
    if (!drawn.ok()) throw Failed{{drawn.error(), drawn.code()}};
    if (!drawn->empty()) result.figure_notes.push_back(*drawn);
  }
  if (!result.privacy.empty()) {
    std::ostringstream privacy;  // one statement per (eps, n)
    for (const auto& [setting, p] : result.privacy) {
      privacy << "## eps = " << setting.first << ", n = " << setting.second << "\n\n```\n"
              << DescribeLdpFlPrivacy(p) << "```\n\n";
    }
    Replace(c.out + "/privacy.md", privacy.str());
  }
}

// Everything after the data is loaded and checked; throws Failed or Stopped.
void Reproduce(LdpFlReproduction& result, Runner& runner, const Paper& paper, const Dataset& train,
               const Dataset& test, const LdpFlReproductionObserver& observer) {
  const LdpFlReproductionConfig& c = result.config;
  runner.Open();
  result.resumed = runner.resumed();
  const std::vector<double> table_eps = {5, 10};
  runner.Plan(PlanSettings(c, paper, table_eps));
  if (observer.started) observer.started(StartLine(c, paper, train, test), result.resumed);
  const double majority = test.MajorityRate();
  const std::string csv = Table1(result, runner, paper, train.size(), majority);
  if (c.figures) {
    Figure fig5 = Figure5(result, runner, paper, majority);
    Figure fig3 = Figure3(result, runner, paper, majority);
    result.figures = {std::move(fig5), std::move(fig3)};
  }
  WriteSummaries(result, runner, csv);
}

}  // namespace

Status LdpFlReproductionConfig::Validate() const {
  if (dataset != ImageDataset::kMnist && dataset != ImageDataset::kFmnist) {
    return Error{"dataset must be mnist or fmnist (the paper's two)"};
  }
  if (out.empty()) return Error{"out must name a folder"};
  FEDLDP_RETURN_IF_ERROR(CheckCount(kLocalEpochs, local_epochs));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kBatch, batch));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kRounds, rounds));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kRepeats, repeats));
  if (threads < 0) return Error{"threads must be >= 0"};
  return {};
}

Result<LdpFlReproduction> ReproduceLdpFl(const LdpFlReproductionConfig& config,
                                         const LdpFlReproductionObserver& observer,
                                         std::stop_token stop) {
  if (Status s = config.Validate(); !s.ok()) return Error{s.error()};
  auto split = LoadImageSplit(std::string(ImageDatasetName(config.dataset)), config.data_dir);
  if (!split.ok()) return Error{split.error()};
  Dataset train = std::move(split->train), test = std::move(split->test);
  LdpFlReproduction result;
  result.config = config;
  Paper paper = PaperFor(config.dataset);
  if (config.quick) {
    // The first rows: deterministic, and every class is present in both.
    train = std::move(train).First(6000);
    test = std::move(test).First(1000);
    paper.clients = 10;
    paper.fig5 = {paper.fig5.front(), paper.fig5.back()};
    paper.n = {5, 10};
    result.config.rounds = std::min(config.rounds, 3);
  }
  std::error_code ec;
  std::filesystem::create_directories(config.out, ec);
  if (ec) return Error{"cannot create " + config.out + ": " + ec.message()};
  NeuralNet::SetThreads(1);  // a round's clients train at once, one per thread
  Runner runner(result.config, paper, train, test, observer, std::move(stop));
  try {
    Reproduce(result, runner, paper, train, test, observer);
  } catch (const Failed& f) {
    return f.error;
  } catch (const Stopped&) {
    result.stopped = true;
  }
  runner.Report(result);
  return result;
}

}  // namespace fedldp
