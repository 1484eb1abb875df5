// fedldp reproduce ldpfl: parses the options into an LdpFlReproductionConfig
// and calls ReproduceLdpFl (sim/ldpfl_reproduction.h), which runs LDP-FL's
// Table 1, Fig. 5 and Fig. 3 and writes the folder; this file prints.
#include <iomanip>
#include <optional>
#include <sstream>

#include "cli.h"
#include "commands.h"
#include "deploy_util.h"
#include "experiment.h"
#include "fedldp/base/format.h"
#include "fedldp/sim/ldpfl_reproduction.h"
#include "progress.h"

namespace fedldp::cli {

void SetupReproduceLdpFl(CLI::App& reproduce, LdpFlReproductionConfig& o) {
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
      "line per run, written as it ends; --resume reuses them). Ctrl-C stops after the\n"
      "current round, keeps the finished runs and exits 1: --resume continues.");
  app->add_option_function<std::string>(
         "--dataset", [&o](const std::string& v) { o.dataset = ParseImageDataset(v).value(); },
         "mnist or fmnist")
      ->check(CLI::IsMember({"mnist", "fmnist"}))
      ->default_str("mnist");
  app->add_option("--out", o.out, "Output folder")->required();
  app->add_option("--data-dir", o.data_dir, "Folder of the dataset (default: where setup put it)");
  app->add_flag("--quick", o.quick,
                "Smoke run: 6,000 training and 1,000 test images, n = 10, 3 rounds, 2 points "
                "per sweep");
  app->add_option("--local-epochs", o.local_epochs,
                  "Local epochs E (the paper does not say; docs/ldpfl.md discusses the choice)")
      ->check(Within(kLocalEpochs))
      ->capture_default_str();
  app->add_option("--batch", o.batch, "Local mini-batch size B")
      ->check(Within(kBatch))
      ->capture_default_str();
  app->add_option("--rounds", o.rounds, "Communication rounds")
      ->check(Within(kRounds))
      ->capture_default_str();
  app->add_option("--repeats", o.repeats, "Runs per configuration (seeds seed, seed+1, ...)")
      ->check(Within(kRepeats))
      ->capture_default_str();
  app->add_flag("--raw-inputs", o.raw_inputs,
                "Feed [0, 1] pixels (default: standardised by the training set's mean and sd)");
  app->add_option_function<std::string>(
         "--perturb", [&o](const std::string& v) { o.perturb_updates = v == "updates"; },
         "What fixed-range runs perturb: weights (Algorithm 2 as written, default) or the "
         "update W - W_global; adaptive runs always perturb weights")
      ->check(CLI::IsMember({"weights", "updates"}));
  app->add_flag("--resume", o.resume, "Reuse the runs already in DIR/runs.jsonl");
  app->add_flag_callback(
      "--no-figures", [&o] { o.figures = false; }, "Table 1 only");
  app->add_option("--threads", o.threads, "Clients trained at once (0: one per core)")
      ->capture_default_str()
      ->check(Within(kWorkerThreads));
  app->add_option("--seed", o.seed, "First seed")->capture_default_str();
}

int RunReproduceLdpFl(const LdpFlReproductionConfig& config, std::ostream& out, std::ostream& err) {
  if (Status s = config.Validate(); !s.ok()) throw UsageError(s.error());

  JournaledProgress progress(out);
  const auto observer = progress.Observer("fedldp reproduce ldpfl", config.out, config.resume);
  // Ctrl-C (or SIGTERM) stops after the current round; the finished runs
  // stay in runs.jsonl for --resume.
  StopOnSignal stop;
  auto result = ReproduceLdpFl(config, observer, stop.token());
  progress.Clear();
  if (!result.ok()) ThrowFailure(result.code(), result.error());
  const LdpFlReproduction& r = *result;
  if (r.stopped) return JournaledProgress::Stopped(err, r.trained, config.out);
  out << "\n" << r.table1;
  for (const std::string& note : r.figure_notes) out << "  " << note << "\n";
  if (!r.figures.empty()) {
    out << "figures:";
    for (const Figure& f : r.figures) out << " " << config.out << "/" << f.id << ".{png,svg,pdf}";
    out << " (data in .csv, scripts in .gp)\n";
  }
  if (!r.learned_nothing.empty()) {
    out << "not better than the majority class (these models learned nothing):";
    for (const auto& n : r.learned_nothing) out << " [" << n << "]";
    out << "\n";
  }
  if (!r.privacy.empty()) {
    std::size_t applies = 0;
    for (const auto& [setting, p] : r.privacy) {
      applies += p.shuffle_applies && p.shuffled.epsilon < p.plain_composition ? 1 : 0;
    }
    const auto& any = r.privacy.begin()->second;
    out << "privacy (" << config.out << "/privacy.md, per setting): eps per weight as the paper "
        << "states; plain composition " << any.weights << " x eps per round, x "
        << any.rounds_joined
        << " rounds per client; the shuffle model (numerical Feldman-McMillan-Talwar bound, "
        << "optimal composition) lowers it in " << applies << " of " << r.privacy.size()
        << " settings\n";
  }
  if (r.trained > 0) {
    out << "time: " << Fixed(r.private_seconds, 1) << " s in private runs, "
        << Fixed(r.round_seconds, 2) << " s per round; perturbation "
        << Fixed(100 * r.perturb_share) << " %, shuffling " << Fixed(100 * r.shuffle_share)
        << " % of it\n";
  }
  return 0;
}

}  // namespace fedldp::cli
