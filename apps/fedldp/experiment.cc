#include "experiment.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "fedldp/base/files.h"
#include "fedldp/base/version.h"
#include "fedldp/data/loaders.h"

namespace fedldp::cli {

std::string DataDir(const std::string& given) { return given.empty() ? DefaultDataDir() : given; }

void CheckOut(const std::string& path) {
  if (path.empty()) return;
  if (Status s = CheckOutputFile(path); !s.ok()) throw UsageError("--out: " + s.error());
}

void AppendOut(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  if (Status s = AppendToFile(path, line); !s.ok()) throw std::runtime_error(s.error());
}

void ReplaceOut(const std::string& path, const std::string& text) {
  if (Status s = WriteFileAtomically(path, text, 0644, /*overwrite=*/true); !s.ok()) {
    throw std::runtime_error(s.error());
  }
}

void ThrowFailure(ErrorCode code, const std::string& message) {
  if (code == ErrorCode::kIo) throw std::runtime_error(message);
  throw UsageError(message);
}

void DrawFigure(const Figure& figure, const std::string& dir, std::ostream& log) {
  auto drawn = WriteFigure(figure, dir);
  if (!drawn.ok()) throw std::runtime_error(drawn.error());
  if (!drawn->empty()) log << "  " << *drawn << "\n";
}

std::string DataDirHint(const std::string& error) {
  return error.find("cannot open") != std::string::npos
             ? " (give the dataset folder with --data-dir or FEDLDP_DATA_DIR)"
             : "";
}

}  // namespace fedldp::cli
