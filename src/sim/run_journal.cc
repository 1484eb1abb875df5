#include "fedldp/sim/run_journal.h"

#include <fstream>
#include <utility>

#include "fedldp/base/files.h"
#include "fedldp/base/units.h"

namespace fedldp {

namespace {

bool IsRun(const nlohmann::json& j) {
  return j.is_object() && j.contains("key") && j["key"].is_string() && j.contains("accuracy") &&
         j["accuracy"].is_number() && j.value("accuracy_unit", "") == kAccuracyUnit;
}

}  // namespace

Result<RunJournal> RunJournal::Open(std::string path, bool resume) {
  RunJournal journal;
  journal.path_ = std::move(path);
  std::string kept;
  if (resume) {
    std::ifstream in(journal.path_);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!IsRun(j)) continue;
      const std::string key = j["key"].get<std::string>();
      journal.runs_[key] = std::move(j);
      kept += line + "\n";
    }
  }
  if (Status s = WriteFileAtomically(journal.path_, kept, 0644, /*overwrite=*/true); !s.ok()) {
    return Error{s.error(), s.code()};
  }
  return journal;
}

const nlohmann::json* RunJournal::Find(const std::string& key) const {
  const auto it = runs_.find(key);
  return it == runs_.end() ? nullptr : &it->second;
}

Status RunJournal::Append(const nlohmann::ordered_json& record) {
  if (!record.is_object() || !record.contains("key") || !record["key"].is_string()) {
    return Error{"a journal record needs a string key"};
  }
  FEDLDP_RETURN_IF_ERROR(AppendToFile(path_, record.dump() + "\n"));
  runs_[record["key"].get<std::string>()] = nlohmann::json::parse(record.dump());
  return Status::Ok();
}

}  // namespace fedldp
