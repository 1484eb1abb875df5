// Progress on stderr: a one-line bar redrawn in place when stderr is a
// terminal; otherwise (a log file, nohup) a plain line at most once a
// minute, so that a long job's log shows it is alive and how far it got,
// and a short one's log stays clean.
#ifndef FEDLDP_APPS_FEDLDP_PROGRESS_H_
#define FEDLDP_APPS_FEDLDP_PROGRESS_H_

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>

#include "fedldp/base/format.h"
#include "fedldp/sim/run_journal.h"

namespace fedldp::cli {

class ProgressBar {
 public:
  // unit: what is counted ("rounds"), shown after the total when given.
  explicit ProgressBar(std::string label, std::string unit = "")
      : label_(std::move(label)),
        unit_(unit.empty() ? "" : " " + std::move(unit)),
        enabled_(isatty(STDERR_FILENO) == 1),
        start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (enabled_ && drawn_) std::fprintf(stderr, "\r\033[K");
  }
  // note: the latest result worth seeing while the job runs (a round's
  // accuracy), after the times.
  void Update(std::size_t done, std::size_t total, const std::string& note = "") {
    const std::string tail = note.empty() ? "" : "; " + note;
    if (total == 0) return;
    const auto now = std::chrono::steady_clock::now();
    const double f = static_cast<double>(done) / static_cast<double>(total);
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double left = f > 0 ? elapsed * (1 - f) / f : 0.0;
    if (!enabled_) {
      if (now - (drawn_ ? last_ : start_) < kLogEvery) return;
      last_ = now;
      drawn_ = true;
      std::fprintf(stderr, "%s: %zu of %zu%s (%.0f%%), %.0fs elapsed, ~%.0fs left%s\n",
                   label_.c_str(), done, total, unit_.c_str(), 100 * f, elapsed, left,
                   tail.c_str());
      std::fflush(stderr);
      return;
    }
    if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    const int width = 30, filled = static_cast<int>(f * width);
    std::fprintf(stderr, "\r%s [%.*s%*s] %3.0f%%  %.0fs elapsed, ~%.0fs left%s\033[K",
                 label_.c_str(), filled, "##############################", width - filled, "",
                 100 * f, elapsed, left, tail.c_str());
  }

 private:
  static constexpr std::chrono::seconds kLogEvery{60};
  std::string label_, unit_;
  bool enabled_, drawn_ = false;  // enabled_: stderr is a terminal
  std::chrono::steady_clock::time_point start_, last_{};
};

// A journaled job's progress (sim/run_journal.h): a bar for the run in
// progress (on a terminal), and a line on `out` as each run ends,
// "  [3/10] label: 91.20 % (12.3 s)".
class JournaledProgress {
 public:
  explicit JournaledProgress(std::ostream& out) : out_(out) {}
  void Round(const JournaledRun& run, int round, int rounds) {
    if (!bar_ || of_ != run.index) {
      bar_.reset();
      bar_.emplace("[" + std::to_string(run.index) + "/" + std::to_string(run.planned) + "] " +
                   run.label);
      of_ = run.index;
    }
    bar_->Update(static_cast<std::size_t>(round), static_cast<std::size_t>(rounds));
  }
  void Finished(const JournaledRun& run) {
    bar_.reset();
    out_ << "  [" << run.index << "/" << run.planned << "] " << run.label << ": "
         << PercentText(run.accuracy) << " % (" << Fixed(run.seconds, 1) << " s)\n";
    out_.flush();
  }
  // Clears the bar (the job ended or failed).
  void Clear() { bar_.reset(); }

  // An observer that prints "`command`: summary" (and what --resume found
  // in `dir`) as the job starts, then this progress.
  JournaledObserver Observer(const std::string& command, const std::string& dir, bool resume) {
    JournaledObserver observer;
    observer.started = [this, command, dir, resume](const std::string& summary,
                                                    std::size_t resumed) {
      out_ << command << ": " << summary << "\n";
      if (resume) out_ << "resuming: " << resumed << " runs found in " << dir << "/runs.jsonl\n";
      out_.flush();
    };
    observer.round = [this](const JournaledRun& run, int round, int rounds) {
      Round(run, round, rounds);
    };
    observer.finished = [this](const JournaledRun& run) { Finished(run); };
    return observer;
  }

  // What a stopped job says (on `err`), and its exit code.
  static int Stopped(std::ostream& err, std::size_t trained, const std::string& dir) {
    err << "stopped: " << trained << " run(s) trained now, every finished run is in " << dir
        << "/runs.jsonl; run the same command with --resume to continue\n";
    return 1;
  }

 private:
  std::ostream& out_;
  std::optional<ProgressBar> bar_;
  std::size_t of_ = 0;
};

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_PROGRESS_H_
