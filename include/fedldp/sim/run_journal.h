// A long job's finished runs, one JSON object per line in a file (e.g.
// DIR/runs.jsonl), each under a key that names everything that changes its
// result. A job appends each run as soon as it ends; run again with resume,
// it finds the runs already done and trains only the others, so a job that
// is stopped or killed loses at most the run in progress.
//
//   FEDLDP_ASSIGN_OR_RETURN(RunJournal journal, RunJournal::Open(dir + "/runs.jsonl", resume));
//   if (const nlohmann::json* done = journal.Find(key)) return (*done)["accuracy"];
//   ... train ...
//   FEDLDP_RETURN_IF_ERROR(journal.Append(record));  // record["key"] == key
#ifndef FEDLDP_SIM_RUN_JOURNAL_H_
#define FEDLDP_SIM_RUN_JOURNAL_H_

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "fedldp/base/status.h"

namespace fedldp {

// A run a journaled job trains now (not one found in its journal), as its
// observer hears of it.
struct JournaledRun {
  std::size_t index = 0, planned = 0;  // "[index/planned]": the runs this call trains
  std::string label;                   // what the run is, e.g. "fixed n=100 eps=5 seed=1"
  double accuracy = 0;                 // a fraction, once it ended
  double seconds = 0;
};

// What a journaled job tells its caller as it runs (each may be empty).
struct JournaledObserver {
  // Before the first run: what runs, and how many runs were found to resume.
  std::function<void(const std::string& summary, std::size_t resumed)> started;
  // After each round of the run in progress.
  std::function<void(const JournaledRun& run, int round, int rounds)> round;
  // After each run, once its line is in the journal.
  std::function<void(const JournaledRun& run)> finished;
};

class RunJournal {
 public:
  // Without resume, `path` is emptied. With resume, its runs are kept, in
  // their order, and the file is replaced by them: a torn or foreign line
  // (not an object with a string "key" and a number "accuracy" in percent,
  // base/units.h) is dropped, so that run is trained again. Errors: the
  // file cannot be written (ErrorCode::kIo).
  static Result<RunJournal> Open(std::string path, bool resume);

  // The run recorded under `key`, or nullptr.
  const nlohmann::json* Find(const std::string& key) const;
  // Appends `record` (an object whose "key" is a string) as one line, and
  // keeps it for Find.
  Status Append(const nlohmann::ordered_json& record);
  // The runs kept or appended.
  std::size_t size() const { return runs_.size(); }

 private:
  std::string path_;
  std::map<std::string, nlohmann::json> runs_;
};

}  // namespace fedldp

#endif  // FEDLDP_SIM_RUN_JOURNAL_H_
