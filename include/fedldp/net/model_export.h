// `fedldp export`: a deployment's model out of the server's state file, in
// formats people load without fedldp, carrying the task, the round and the
// privacy statement.
//
//   npz          numpy's np.load: "weights" (float64; a linear model's
//                (classes, features) or (features,) for two classes; a
//                network's layers flat, one array per layer named as the
//                layer) and "metadata" (a 0-d string: the JSON below).
//   json         the metadata with "weights" (as npz) in one JSON object.
//   torchscript  a network (LDP-FL) for torch.jit.load: forward takes rows
//                as fedldp's loaders give them and returns the built-ins'
//                log-probabilities (NeuralNet::TorchScript); the metadata is
//                its extra file "fedldp.json".
//
// The model is the one the server evaluates and releases: FedSel's last
// iterate, LDP-FL's released model (its iterate average, if any). The
// metadata says what it is ("model": kind, loss or architecture, shape,
// how to predict), where the task stood ("rounds_closed", "finished",
// "reports_counted") and what it spent per user ("privacy": the record
// `fedldp serve` writes, docs/records.md).
#ifndef FEDLDP_NET_MODEL_EXPORT_H_
#define FEDLDP_NET_MODEL_EXPORT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "fedldp/base/status.h"
#include "fedldp/privacy/privacy_record.h"

namespace fedldp {

enum class ExportFormat { kNpz, kJson, kTorchScript };
// "npz", "json", "torchscript"; "" takes it from the file's name (.npz,
// .json, .pt or .pth). An error names the choices.
Result<ExportFormat> ParseExportFormat(const std::string& name, const std::string& out);
std::string ExportFormatName(ExportFormat format);

struct ExportConfig {
  std::string state;   // the server's state file
  std::string out;     // the file to write (replaced atomically if it exists)
  std::string format;  // as ParseExportFormat takes it
};

struct ExportSummary {
  std::string protocol;  // "fedsel" or "ldpfl"
  std::string task;
  ExportFormat format = ExportFormat::kNpz;
  std::string model;  // "linear (logistic, 2 classes, 123 features)", "cnn (21840 weights)"
  std::uint64_t rounds_closed = 0;
  bool finished = false;
  std::optional<PrivacyRecord> privacy;
};

// Errors: no such state, or one held by a running server (kAlreadyExists:
// export once it stops), no task or no closed round in it yet
// (kFailedPrecondition), a format the model cannot take (kInvalidArgument),
// a file that could not be written (kIo).
Result<ExportSummary> ExportModel(const ExportConfig& config);

}  // namespace fedldp

#endif  // FEDLDP_NET_MODEL_EXPORT_H_
