// fedldp reproduce ldpfl: LDP-FL's Table 1 (fixed against adaptive ranges),
// the eps sweep of Fig. 5(a, b) and the client-count sweep of Fig. 3(a, b),
// for MNIST or Fashion-MNIST, beside the paper's numbers, the noise-free
// federated model and the majority class.
//
// Every run is one (configuration, seed) pair, written to DIR/runs.jsonl as
// soon as it ends; --resume reuses the runs found there, so a long job that
// is stopped loses at most the run in progress.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "experiment.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/model/neural_net.h"
#include "figure.h"
#include "progress.h"

namespace fedldp::cli {

void SetupReproduceLdpFl(CLI::App& reproduce, ReproduceLdpFlOptions& o) {
  auto* app = reproduce.add_subcommand(
      "ldpfl",
      "LDP-FL (Sun, Qian & Chen, IJCAI 2021) on MNIST (n = 100) or Fashion-MNIST\n"
      "(n = 200), 10 rounds, fraction 1, lr 0.03, the CNN:\n"
      "  Table 1: fixed (c, r) against adaptive per-layer ranges at eps = 5 and 10;\n"
      "  Fig. 5(a, b): accuracy against eps (MNIST 0.1..1, Fashion-MNIST 1..10),\n"
      "    fixed range, beside the noise-free federated model;\n"
      "  Fig. 3(a, b): accuracy against the number of clients n (eps 1 MNIST, 5\n"
      "    Fashion-MNIST), LDP-FL and noise-free.\n"
      "Writes DIR/table1.{md,csv}, DIR/fig5{a,b}.{csv,gp,png,svg,pdf}, DIR/fig3{a,b}.*,\n"
      "DIR/privacy.md (what is proven for each eps and n) and DIR/runs.jsonl (one\n"
      "line per run, written as it ends; --resume reuses them).");
  app->add_option("--dataset", o.dataset, "mnist or fmnist")
      ->check(CLI::IsMember({"mnist", "fmnist"}))
      ->capture_default_str();
  app->add_option("--out", o.out, "Output folder")->required();
  app->add_option("--data-dir", o.data_dir, "Folder of the dataset (default: where setup put it)");
  app->add_flag("--quick", o.quick,
                "Smoke run: 6,000 training and 1,000 test images, n = 10, 3 rounds, 2 points "
                "per sweep");
  app->add_option("--local-epochs", o.local_epochs,
                  "Local epochs E (the paper does not say; docs/ldpfl.md discusses the choice)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app->add_option("--batch", o.batch, "Local mini-batch size B")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app->add_option("--rounds", o.rounds, "Communication rounds")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app->add_option("--repeats", o.repeats, "Runs per configuration (seeds seed, seed+1, ...)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app->add_flag("--raw-inputs", o.raw_inputs,
                "Feed [0, 1] pixels (default: standardised by the training set's mean and sd)");
  app->add_option_function<std::string>(
         "--perturb", [&o](const std::string& v) { o.perturb_updates = v == "updates"; },
         "What fixed-range runs perturb: weights (Algorithm 2 as written, default) or the "
         "update W - W_global; adaptive runs always perturb weights")
      ->check(CLI::IsMember({"weights", "updates"}));
  app->add_flag("--resume", o.resume, "Reuse the runs already in DIR/runs.jsonl");
  app->add_flag("--no-figures", o.no_figures, "Table 1 only");
  app->add_option("--threads", o.threads, "Torch threads (0: all cores)")->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app->add_option("--seed", o.seed, "First seed")->capture_default_str();
}

namespace {

struct Paper {
  std::size_t clients;         // Table 1 and Fig. 5
  double radius;               // fixed range (0, r)
  double fig3_epsilon;         // Fig. 3's budget
  std::vector<double> fig5;    // Fig. 5's budgets
  std::vector<std::size_t> n;  // Fig. 3's client counts (ours: the paper's axis is not given)
  double table1[2][2];         // [eps 5, eps 10][fixed, adaptive], %
};

Paper PaperFor(const std::string& dataset) {
  if (dataset == "mnist") {
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
  std::size_t runs = 0;
};

std::string Fixed(double v, int digits = 2) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// The line under each figure: what its error bars are.
std::string ErrorBars(int repeats) {
  return repeats > 1 ? "error bars: ± 1 sd over " + std::to_string(repeats) +
                           " runs (seeds) per point; dashed: one value, no bars"
                     : "one run per point (--repeats 1): no error bars";
}

class Runner {
 public:
  Runner(const ReproduceLdpFlOptions& o, const Dataset& train, const Dataset& test,
         std::ostream& out)
      : o_(o), train_(train), test_(test), out_(out), paper_(PaperFor(o.dataset)) {
    const std::string path = o.out + "/runs.jsonl";
    if (o.resume) {
      std::ifstream in(path);
      for (std::string line; std::getline(in, line);) {
        // A torn or foreign line (no key, no accuracy, or accuracies not
        // in percent, as earlier builds wrote them) is dropped and run again.
        const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object() || !j.contains("key") || !j["key"].is_string() ||
            !j.contains("accuracy") || !j["accuracy"].is_number() ||
            j.value("accuracy_unit", "") != kAccuracyUnit) {
          continue;
        }
        done_[j["key"].get<std::string>()] = j["accuracy"].get<double>() / 100;
        lines_.push_back(line);
      }
    }
    // The runs kept, in their order (a torn last line dropped), replace the
    // file whole: a run killed now loses none of them. New runs append.
    std::string kept;
    for (const auto& line : lines_) kept += line + "\n";
    ReplaceOut(path, kept);
    runs_.open(path, std::ios::app);
    if (!runs_) throw std::runtime_error("cannot write " + path);
    if (o.resume) out_ << "resuming: " << done_.size() << " runs found in " << path << "\n";
  }

  // Mean and standard deviation over the repeats of one setting.
  Stats Get(const Setting& s) {
    if (s.is_private) {  // all clients join every round
      privacy_[{s.epsilon, s.clients}] =
          AccountLdpFl(s.epsilon, parameters_, static_cast<std::size_t>(o_.rounds), s.clients);
    }
    std::vector<double> values;
    for (int r = 0; r < o_.repeats; ++r) values.push_back(One(s, o_.seed + r));
    Stats st;
    st.runs = values.size();
    for (double v : values) st.mean += v / static_cast<double>(values.size());
    for (double v : values) {
      st.sd += (v - st.mean) * (v - st.mean) / std::max<double>(1, values.size() - 1.0);
    }
    st.sd = std::sqrt(st.sd);
    return st;
  }

  // The planned number of runs, for the progress line.
  // The progress counter's total: the runs of `settings` (each repeated)
  // that are not already in runs.jsonl.
  void Plan(const std::vector<Setting>& settings) {
    std::set<std::string> keys;
    for (const Setting& s : settings) {
      for (int r = 0; r < o_.repeats; ++r) {
        const std::string key = KeyOf(s, o_.seed + r);
        if (!done_.contains(key)) keys.insert(key);
      }
    }
    planned_ = keys.size();
  }
  double seconds() const { return seconds_; }
  double round_seconds() const { return rounds_ ? seconds_ / rounds_ : 0; }
  double perturb_share() const { return seconds_ ? perturb_ / seconds_ : 0; }
  double shuffle_share() const { return seconds_ ? shuffle_ / seconds_ : 0; }
  std::size_t trained() const { return trained_; }
  // The privacy statement of every private setting asked for.
  const std::map<std::pair<double, std::size_t>, LdpFlPrivacy>& privacy() const { return privacy_; }

 private:
  // Only private fixed-range runs perturb updates: adaptive ranges are
  // defined on weights, and the noise-free model is the same either way.
  bool Updates(const Setting& s) const { return o_.perturb_updates && s.is_private && !s.adaptive; }

  static std::string Shown(const Setting& s, std::uint64_t seed) {
    return s.Key() + " seed=" + std::to_string(seed);
  }
  // Everything that changes the result is in the key: a resumed folder never
  // mixes runs of another dataset, E, B, round count, subsample, input
  // scaling or perturbed quantity.
  std::string KeyOf(const Setting& s, std::uint64_t seed) const {
    return o_.dataset + " E=" + std::to_string(o_.local_epochs) +
           " B=" + std::to_string(o_.batch) + " rounds=" + std::to_string(o_.rounds) +
           " rows=" + std::to_string(train_.size()) + (o_.raw_inputs ? " raw" : "") +
           (Updates(s) ? " updates" : "") + " " + Shown(s, seed);
  }

  double One(const Setting& s, std::uint64_t seed) {
    const std::string shown = Shown(s, seed), key = KeyOf(s, seed);
    if (auto it = done_.find(key); it != done_.end()) return it->second;
    ++index_;
    LdpFlConfig c;
    c.arch = "cnn";
    c.clients = s.clients;
    c.rounds = o_.rounds;
    c.local_epochs = o_.local_epochs;
    c.batch = o_.batch;
    c.learning_rate = 0.03;
    c.is_private = s.is_private;
    c.epsilon = s.is_private ? s.epsilon : 1.0;
    c.adaptive = s.adaptive;
    c.fixed_range = {0, paper_.radius};
    c.standardize_inputs = !o_.raw_inputs;
    c.perturb_updates = Updates(s);
    std::ostringstream label;
    label << "[" << index_ << "/" << planned_ << "] " << shown;
    ProgressBar bar(label.str());
    const auto start = std::chrono::steady_clock::now();
    auto run = TrainLdpFl(c, train_, test_, seed, [&](const LdpFlRound& r) {
      bar.Update(static_cast<std::size_t>(r.round), static_cast<std::size_t>(c.rounds));
    });
    if (!run.ok()) throw UsageError(shown + ": " + run.error());
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
    nlohmann::ordered_json j;
    j["key"] = key;
    StartRecord(j);
    j["dataset"] = o_.dataset;
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
    j["accuracy"] = Percent(accuracy);
    j["accuracy_per_round"] = std::move(per_round);
    j["majority"] = Percent(run->majority);
    j["seconds"] = wall;
    runs_ << j.dump() << "\n";
    runs_.flush();
    out_ << "  [" << index_ << "/" << planned_ << "] " << shown << ": " << Fixed(100 * accuracy)
         << " % (" << Fixed(wall, 1) << " s)\n";
    out_.flush();
    done_[key] = accuracy;
    return accuracy;
  }

  const ReproduceLdpFlOptions& o_;
  const Dataset& train_;
  const Dataset& test_;
  std::ostream& out_;
  Paper paper_;
  std::size_t parameters_ = NeuralNet::Create("cnn", 0).value().parameters();
  std::map<std::string, double> done_;
  std::map<std::pair<double, std::size_t>, LdpFlPrivacy> privacy_;
  std::vector<std::string> lines_;
  std::ofstream runs_;
  std::size_t index_ = 0, planned_ = 0, trained_ = 0, rounds_ = 0;
  double seconds_ = 0, perturb_ = 0, shuffle_ = 0;
};

std::string Cell(const Stats& s, int repeats) {
  return Fixed(100 * s.mean) + (repeats > 1 ? " ± " + Fixed(100 * s.sd) : "");
}

}  // namespace

int RunReproduceLdpFl(const ReproduceLdpFlOptions& o, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) throw UsageError("cannot create " + o.out + ": " + ec.message());
  auto split = LoadImageSplit(o.dataset, o.data_dir);
  if (!split.ok()) throw UsageError(split.error());
  Dataset train = std::move(split->train), test = std::move(split->test);
  Paper paper = PaperFor(o.dataset);
  int rounds = o.rounds;
  if (o.quick) {
    // The first rows: deterministic, and every class is present in both.
    auto first = [](const Dataset& d, std::size_t n) {
      std::vector<std::size_t> rows(std::min(n, d.size()));
      for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
      return d.Subset(rows);
    };
    train = first(train, 6000);
    test = first(test, 1000);
    paper.clients = 10;
    paper.fig5 = {paper.fig5.front(), paper.fig5.back()};
    paper.n = {5, 10};
    rounds = std::min(rounds, 3);
  }
  if (o.threads > 0) NeuralNet::SetThreads(o.threads);
  ReproduceLdpFlOptions effective = o;
  effective.rounds = rounds;
  Runner runner(effective, train, test, out);

  const std::vector<double> table_eps = {5, 10};
  // Every setting this call asks for, in the order it asks (for the counter).
  std::vector<Setting> plan = {{false, false, 0, paper.clients}};
  for (double e : table_eps) {
    for (bool adaptive : {false, true}) plan.push_back({true, adaptive, e, paper.clients});
  }
  if (!o.no_figures) {
    for (double e : paper.fig5) plan.push_back({true, false, e, paper.clients});
    for (std::size_t n : paper.n) {
      plan.push_back({true, false, paper.fig3_epsilon, n});
      plan.push_back({false, false, 0, n});
    }
  }
  runner.Plan(plan);
  out << "fedldp reproduce ldpfl: " << o.dataset << " (" << train.size() << " train, "
      << test.size() << " test), cnn, n = " << paper.clients << ", fraction 1, " << rounds
      << " rounds, E = " << o.local_epochs << ", B = " << o.batch << ", lr 0.03, "
      << (o.raw_inputs ? "raw [0, 1]" : "standardised") << " inputs, fixed (c, r) = (0, "
      << paper.radius << ")" << (o.perturb_updates ? " on the update W - W_global" : "") << ", "
      << o.repeats << " run(s) per setting from seed " << o.seed << " -> "
      << o.out << "\n";
  out.flush();

  const double majority = test.MajorityRate();
  const Stats noise_free = runner.Get({false, false, 0, paper.clients});
  Stats table[2][2];
  for (int e = 0; e < 2; ++e) {
    for (int a = 0; a < 2; ++a) {
      table[e][a] = runner.Get({true, a == 1, table_eps[e], paper.clients});
    }
  }
  const std::string name = o.dataset == "mnist" ? "MNIST" : "Fashion-MNIST";
  std::ostringstream md;
  md << "LDP-FL Table 1 on " << name << " (n = " << paper.clients << ", " << rounds
     << " rounds, E = " << o.local_epochs << ", B = " << o.batch << ", " << train.size()
     << " training images; mean" << (o.repeats > 1 ? " ± sd" : "") << " over " << o.repeats
     << " run(s)): test accuracy in %, the paper's in parentheses.\n\n"
     << "| eps | fixed (0, " << paper.radius << ")" << (o.perturb_updates ? ", updates" : "")
     << " | adaptive | noise-free FL | majority |\n"
     << "|---|---|---|---|---|\n";
  std::ostringstream csv;  // written whole below
  csv << "dataset,clients,epsilon,fixed,fixed_sd,adaptive,adaptive_sd,noise_free,majority,"
         "paper_fixed,paper_adaptive\n";
  for (int e = 0; e < 2; ++e) {
    md << "| " << table_eps[e] << " | " << Cell(table[e][0], o.repeats) << " ("
       << Fixed(paper.table1[e][0]) << ") | " << Cell(table[e][1], o.repeats) << " ("
       << Fixed(paper.table1[e][1]) << ") | " << Cell(noise_free, o.repeats) << " | "
       << Fixed(100 * majority) << " |\n";
    csv << o.dataset << "," << paper.clients << "," << table_eps[e] << ","
        << Percent(table[e][0].mean) << "," << Percent(table[e][0].sd) << ","
        << Percent(table[e][1].mean) << "," << Percent(table[e][1].sd) << ","
        << Percent(noise_free.mean) << "," << Percent(majority) << "," << paper.table1[e][0] << ","
        << paper.table1[e][1] << "\n";
  }
  // Settings whose mean accuracy is not above the majority class, once each.
  std::vector<std::string> nothing;
  auto flag = [&](const Setting& s, const Stats& st) {
    if (st.mean <= majority &&
        std::find(nothing.begin(), nothing.end(), s.Key()) == nothing.end()) {
      nothing.push_back(s.Key());
    }
  };
  flag({false, false, 0, paper.clients}, noise_free);
  for (int e = 0; e < 2; ++e) {
    for (int a = 0; a < 2; ++a) flag({true, a == 1, table_eps[e], paper.clients}, table[e][a]);
  }
  if (o.quick) {
    md << "\n(--quick: a smoke run on a subsample; not comparable with the paper.)\n";
  }
  ReplaceOut(o.out + "/table1.csv", csv.str());
  ReplaceOut(o.out + "/table1.md", md.str());
  out << "\n" << md.str();

  if (!o.no_figures) {
    const std::string fig5_id = o.dataset == "mnist" ? "fig5a" : "fig5b";
    Series ldp{o.perturb_updates ? "LDP-FL (fixed range; updates)" : "LDP-FL (fixed range)", {},
               false};
    for (double e : paper.fig5) {
      const Setting setting{true, false, e, paper.clients};
      const Stats s = runner.Get(setting);
      flag(setting, s);
      ldp.points.push_back({e, 100 * s.mean, 100 * s.sd});
    }
    auto flat = [&](const std::string& label, double y, const std::vector<double>& xs) {
      Series s{label, {}, true};
      for (double x : xs) s.points.push_back({x, 100 * y, 0});
      return s;
    };
    Figure fig5{
        fig5_id,
        "LDP-FL on " + name + ", n = " + std::to_string(paper.clients) + ": accuracy vs eps",
        "eps (per weight)",
        "test accuracy (%)",
        false,
        {ldp, flat("noise-free FL", noise_free.mean, paper.fig5),
         flat("majority class", majority, paper.fig5)},
        {}};
    fig5.error_bars = ErrorBars(o.repeats);
    WriteFigure(fig5, o.out, out);

    Series ldp_n{"LDP-FL at eps " + Fixed(paper.fig3_epsilon, 0) +
                     (o.perturb_updates ? " (updates)" : ""),
                 {}, false};
    Series free_n{"noise-free FL", {}, false};
    std::vector<double> xs;
    for (std::size_t n : paper.n) {
      const Setting private_n{true, false, paper.fig3_epsilon, n}, free{false, false, 0, n};
      const Stats p = runner.Get(private_n);
      const Stats f = runner.Get(free);
      flag(private_n, p);
      flag(free, f);
      ldp_n.points.push_back({static_cast<double>(n), 100 * p.mean, 100 * p.sd});
      free_n.points.push_back({static_cast<double>(n), 100 * f.mean, 100 * f.sd});
      xs.push_back(static_cast<double>(n));
    }
    Figure fig3{o.dataset == "mnist" ? "fig3a" : "fig3b",
                "LDP-FL on " + name + ": accuracy vs the number of clients n",
                "clients n",
                "test accuracy (%)",
                false,
                {ldp_n, free_n, flat("majority class", majority, xs)},
                {}};
    fig3.error_bars = ErrorBars(o.repeats);
    WriteFigure(fig3, o.out, out);
    out << "figures: " << o.out << "/" << fig5_id << ".{png,svg,pdf}, " << o.out << "/" << fig3.id
        << ".{png,svg,pdf} (data in .csv, scripts in .gp)\n";
  }
  if (!nothing.empty()) {
    out << "not better than the majority class (these models learned nothing):";
    for (const auto& n : nothing) out << " [" << n << "]";
    out << "\n";
  }
  if (!runner.privacy().empty()) {
    // What is proven for each private setting: one statement per (eps, n).
    std::ostringstream privacy;
    std::size_t applies = 0;
    for (const auto& [setting, p] : runner.privacy()) {
      privacy << "## eps = " << setting.first << ", n = " << setting.second << "\n\n```\n"
              << DescribeLdpFlPrivacy(p) << "```\n\n";
      applies += p.shuffle_applies && p.shuffled.epsilon < p.plain_composition ? 1 : 0;
    }
    ReplaceOut(o.out + "/privacy.md", privacy.str());
    const auto& any = runner.privacy().begin()->second;
    out << "privacy (" << o.out << "/privacy.md, per setting): eps per weight as the paper "
        << "states; plain composition " << any.weights << " x eps per round, x "
        << any.rounds_joined
        << " rounds per client; the shuffle model (numerical Feldman-McMillan-Talwar bound, "
        << "optimal composition) lowers it in " << applies << " of " << runner.privacy().size()
        << " settings\n";
  }
  if (runner.trained() > 0) {
    out << "time: " << Fixed(runner.seconds(), 1) << " s in private runs, "
        << Fixed(runner.round_seconds(), 2) << " s per round; perturbation "
        << Fixed(100 * runner.perturb_share()) << " %, shuffling "
        << Fixed(100 * runner.shuffle_share()) << " % of it\n";
  }
  (void)err;
  return 0;
}

}  // namespace fedldp::cli
