// Pieces shared by `fedldp train` and `fedldp reproduce`.
#ifndef FEDLDP_APPS_FEDLDP_EXPERIMENT_H_
#define FEDLDP_APPS_FEDLDP_EXPERIMENT_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "fedldp/base/units.h"
#include "fedldp/sim/figure.h"
#include "fedldp/sim/records.h"

namespace fedldp::cli {

// `given`, else DefaultDataDir(): $FEDLDP_DATA_DIR, else the data/ the repository carries.
std::string DataDir(const std::string& given);

// --out, checked before any work (an hour of training must not end in
// "cannot write"); throws UsageError. Nothing for an empty path.
void CheckOut(const std::string& path);
// Appends one result line to --out, or throws (exit 1: disk full is a
// failure, never a silent success).
void AppendOut(const std::string& path, const std::string& line);
// Replaces `path` with `text` whole (WriteFileAtomically): a reader, or a
// run killed midway, sees the old file or the new one, never a part.
void ReplaceOut(const std::string& path, const std::string& text);

// A library run's failure as the CLI's exit: a file that cannot be written
// midway (ErrorCode::kIo) is a failure, exit 1; anything else (the data, the
// configuration) is the user's to fix, exit 2.
[[noreturn]] void ThrowFailure(ErrorCode code, const std::string& message);

// Writes `figure` into `dir` (sim/figure.h); throws if its data cannot be
// written, says on `log` why the images were not rendered.
void DrawFigure(const Figure& figure, const std::string& dir, std::ostream& log);

// " (give the folder with --data-dir or FEDLDP_DATA_DIR)" when `error` says a
// file could not be opened, else "".
std::string DataDirHint(const std::string& error);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_EXPERIMENT_H_
