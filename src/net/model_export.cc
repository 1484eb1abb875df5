#include "fedldp/net/model_export.h"

#include <zlib.h>

#include <bit>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>
#include <vector>

#include "fedldp/base/files.h"
#include "fedldp/base/version.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/fl/ldpfl_options.h"
#include "fedldp/fl/server_optimizer.h"
#include "fedldp/model/linear.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/services.h"
#include "fedldp/sim/records.h"
#include "fedldp/store/server_state.h"
#include "ldpfl_method.h"

namespace fedldp {
namespace {

using Json = nlohmann::ordered_json;

Error Invalid(std::string message) { return {std::move(message), ErrorCode::kInvalidArgument}; }

// One array of an .npz: its name (without .npy), shape and contents.
struct NpyArray {
  std::string name;
  std::vector<std::size_t> shape;
  std::string descr;  // numpy's dtype string: "<f8", "<U12"
  std::string data;   // little-endian bytes
};

NpyArray DoubleArray(std::string name, std::vector<std::size_t> shape, std::span<const double> v) {
  static_assert(std::endian::native == std::endian::little, "npy data are written as they lie");
  return {std::move(name), std::move(shape), "<f8",
          std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double))};
}

// A 0-d string array (numpy's "<U"): UTF-32 code points of UTF-8 `text`.
NpyArray TextArray(std::string name, const std::string& text) {
  std::string data;
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++n) {
    const auto c = static_cast<unsigned char>(text[i]);
    const int extra = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    char32_t code = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra && i + k < text.size(); ++k) {
      code = (code << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    i += 1 + extra;
    for (int b = 0; b < 4; ++b) data.push_back(static_cast<char>((code >> (8 * b)) & 0xFF));
  }
  return {std::move(name),
          {},
          "<U" + std::to_string(std::max<std::size_t>(n, 1)),
          n == 0 ? std::string(4, '\0') : data};
}

// The .npy file of an array (format 1.0: header padded to 64 bytes).
std::string NpyBytes(const NpyArray& a) {
  std::string shape;
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    shape += (i == 0 ? "" : ", ") + std::to_string(a.shape[i]);
  }
  shape = "(" + shape + (a.shape.size() == 1 ? ",)" : ")");
  std::string header =
      "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + a.data;
}

void Put(std::string& out, std::uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
}

// An uncompressed ZIP archive of the arrays' .npy files: what np.load reads
// as an .npz. Members and the archive stay under 4 GiB (no ZIP64).
Result<std::string> NpzBytes(const std::vector<NpyArray>& arrays) {
  std::string out, directory;
  for (const NpyArray& a : arrays) {
    const std::string name = a.name + ".npy", body = NpyBytes(a);
    if (body.size() >= std::numeric_limits<std::uint32_t>::max() - out.size()) {
      return Invalid("the model is too large for an .npz without ZIP64 (4 GiB)");
    }
    const auto crc =
        crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
    const std::uint64_t offset = out.size();
    // Local header: stored (method 0), no time, sizes and CRC in place.
    Put(out, 0x04034b50, 4), Put(out, 20, 2), Put(out, 0, 2), Put(out, 0, 2), Put(out, 0, 2);
    Put(out, 0x21, 2), Put(out, crc, 4), Put(out, body.size(), 4), Put(out, body.size(), 4);
    Put(out, name.size(), 2), Put(out, 0, 2);
    out += name + body;
    Put(directory, 0x02014b50, 4), Put(directory, 20, 2), Put(directory, 20, 2);
    Put(directory, 0, 2), Put(directory, 0, 2), Put(directory, 0, 2), Put(directory, 0x21, 2);
    Put(directory, crc, 4), Put(directory, body.size(), 4), Put(directory, body.size(), 4);
    Put(directory, name.size(), 2), Put(directory, 0, 2), Put(directory, 0, 2);
    Put(directory, 0, 2), Put(directory, 0, 2), Put(directory, 0, 4), Put(directory, offset, 4);
    directory += name;
  }
  const std::uint64_t at = out.size();
  out += directory;
  Put(out, 0x06054b50, 4), Put(out, 0, 2), Put(out, 0, 2), Put(out, arrays.size(), 2);
  Put(out, arrays.size(), 2), Put(out, directory.size(), 4), Put(out, at, 4), Put(out, 0, 2);
  return out;
}

// One named array of the model's weights (a linear model's all, or one
// layer of a network), in the server's doubles.
struct Weights {
  std::string name;
  std::vector<std::size_t> shape;
  std::vector<double> values;
};

// The model as it is exported: its weights and its metadata's "model".
struct Exported {
  std::vector<Weights> weights;
  Json model;
  std::string summary;           // for people
  std::optional<NeuralNet> net;  // LDP-FL: the network at these weights
  std::optional<PrivacyRecord> privacy;
};

Result<Exported> FedSelModel(const FedSelTaskSpec& spec, const std::vector<double>& w) {
  FEDLDP_ASSIGN_OR_RETURN(const FedSelPlan plan,
                          PlanFedSel(spec.config, spec.users, spec.dimension));
  const std::size_t d = spec.dimension;
  if (w.empty() || w.size() % d != 0) return Invalid("the state's model does not fit its task");
  const std::size_t classes = w.size() == d ? 2 : w.size() / d;
  Exported e;
  std::vector<std::size_t> shape = w.size() == d ? std::vector{d} : std::vector{classes, d};
  e.weights.push_back({"weights", shape, w});
  e.model = {{"kind", "linear"},
             {"loss", LossName(spec.config.loss)},
             {"features", d},
             {"classes", classes},
             {"shape", shape},
             {"predict", classes == 2 ? "class 1 if weights . x > 0, else class 0 (no intercept)"
                                      : "argmax over classes of weights @ x (no intercept)"}};
  e.summary = "linear (" + LossName(spec.config.loss) + ", " + std::to_string(classes) +
              " classes, " + std::to_string(d) + " features)";
  e.privacy = FedSelPrivacyRecordOf(plan, spec.config, spec.central_delta);
  return e;
}

Result<Exported> LdpFlModel(const LdpFlTaskSpec& spec, const ServerState::Snapshot& snap) {
  ServerLearner learner(spec.config.server, spec.config.averaging, spec.config.rounds,
                        spec.weights());
  if (Status e = learner.Restore(snap.server); !e.ok()) return Error{"server state: " + e.error()};
  std::vector<double> w(spec.weights());
  learner.Release<double>(snap.weights, w);
  // The operator's own network is the one the task carries, wherever its
  // file was when the server started.
  std::string arch = spec.config.arch;
  if (!spec.model.empty()) {
    FEDLDP_ASSIGN_OR_RETURN(arch, ModelFileOf(spec.model));
  }
  FEDLDP_ASSIGN_OR_RETURN(NeuralNet net, NeuralNet::Create(arch, 0));
  if (net.parameters() != w.size()) return Invalid("the state's model does not fit its network");
  net.SetWeights(std::vector<float>(w.begin(), w.end()));
  net.SetInputStandardization(spec.input_mean, spec.input_sd);
  Exported e;
  Json layers = Json::array();
  std::size_t at = 0;
  for (std::size_t i = 0; i < net.layer_sizes().size(); ++i) {
    const std::size_t n = net.layer_sizes()[i];
    e.weights.push_back({net.layer_names()[i], {n}, {w.begin() + at, w.begin() + at + n}});
    layers.push_back({{"name", net.layer_names()[i]}, {"size", n}});
    at += n;
  }
  e.model = {{"kind", "network"},
             {"architecture", spec.config.arch},
             {"weights", w.size()},
             {"layers", layers},
             {"input_mean", spec.input_mean},
             {"input_sd", spec.input_sd},
             {"predict",
              "argmax of forward((x - input_mean) / input_sd); the TorchScript export "
              "standardises inside forward"}};
  e.summary = spec.config.arch + " (" + std::to_string(w.size()) + " weights)";
  FEDLDP_ASSIGN_OR_RETURN(auto announced,
                          net_internal::LdpFlMethod::Make(spec).value()->Announce());
  e.privacy = announced.record;
  e.net = std::move(net);
  return e;
}

// The state's task and model, read; nothing is written to the state.
Result<std::pair<std::string, ServerState::Snapshot>> ReadState(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    return Error{"no state file " + path + " (the server's --state)", ErrorCode::kInvalidArgument};
  }
  auto state = ServerState::Open(path);
  if (!state.ok()) {
    if (state.code() == ErrorCode::kAlreadyExists) {
      return Error{path +
                       " is in use by a running server: export once it stops (a stopped "
                       "server resumes where it was)",
                   ErrorCode::kAlreadyExists};
    }
    return Error{state.error(), state.code()};
  }
  FEDLDP_ASSIGN_OR_RETURN(const auto task, state->Task());
  FEDLDP_ASSIGN_OR_RETURN(const auto snap, state->Load());
  if (!task || !snap) {
    return Error{path + ": no round has closed yet, so there is no trained model to export",
                 ErrorCode::kFailedPrecondition};
  }
  return std::pair{*task, *snap};
}

Result<std::string> FileBytes(ExportFormat format, const Exported& e, const Json& meta) {
  switch (format) {
    case ExportFormat::kNpz: {
      std::vector<NpyArray> arrays;
      for (const Weights& a : e.weights) arrays.push_back(DoubleArray(a.name, a.shape, a.values));
      arrays.push_back(TextArray("metadata", meta.dump()));
      return NpzBytes(arrays);
    }
    case ExportFormat::kJson: {
      Json j = meta;
      Json weights = Json::object();
      for (const Weights& a : e.weights) weights[a.name] = a.values;
      j["weights"] = std::move(weights);
      return j.dump() + "\n";
    }
    case ExportFormat::kTorchScript:
      if (!e.net) {
        return Invalid("a linear model has no TorchScript export: use npz or json");
      }
      return e.net->TorchScript(meta.dump());
  }
  return Invalid("unknown format");
}

}  // namespace

Result<ExportFormat> ParseExportFormat(const std::string& name, const std::string& out) {
  const std::string n = !name.empty()                                   ? name
                        : out.ends_with(".npz")                         ? "npz"
                        : out.ends_with(".json")                        ? "json"
                        : out.ends_with(".pt") || out.ends_with(".pth") ? "torchscript"
                                                                        : "";
  if (n == "npz") return ExportFormat::kNpz;
  if (n == "json") return ExportFormat::kJson;
  if (n == "torchscript") return ExportFormat::kTorchScript;
  if (name.empty()) {
    return Invalid("cannot tell the format from " + out +
                   "'s name: end it in .npz, .json or .pt, or give --format npz|json|torchscript");
  }
  return Invalid("no export format '" + name + "' (npz, json, torchscript)");
}

std::string ExportFormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kNpz:
      return "npz";
    case ExportFormat::kJson:
      return "json";
    case ExportFormat::kTorchScript:
      return "torchscript";
  }
  return "";
}

Result<ExportSummary> ExportModel(const ExportConfig& config) {
  ExportSummary out;
  FEDLDP_ASSIGN_OR_RETURN(out.format, ParseExportFormat(config.format, config.out));
  FEDLDP_RETURN_IF_ERROR(CheckOutputFile(config.out));
  FEDLDP_ASSIGN_OR_RETURN(const auto read, ReadState(config.state));
  const auto& [task, snap] = read;
  out.protocol = TaskProtocol(task);
  Result<Exported> e = Invalid(config.state + " holds a task this build cannot read");
  Json meta;
  meta["format"] = "fedldp-model";
  meta["version"] = std::string(Version());
  meta["protocol"] = out.protocol;
  if (out.protocol == "fedsel") {
    FEDLDP_ASSIGN_OR_RETURN(const FedSelTaskSpec spec, DecodeTask(task));
    out.task = spec.id;
    e = FedSelModel(spec, snap.weights);
    meta["deployment"] = spec.deployment;
  } else if (out.protocol == "ldpfl") {
    FEDLDP_ASSIGN_OR_RETURN(const LdpFlTaskSpec spec, DecodeLdpFlTask(task));
    out.task = spec.id;
    e = LdpFlModel(spec, snap);
    meta["deployment"] = spec.deployment;
  }
  if (!e.ok()) return Error{e.error(), e.code()};
  out.model = e->summary;
  out.rounds_closed = snap.round;
  out.finished = snap.finished;
  out.privacy = e->privacy;
  meta["task"] = out.task;
  meta["rounds_closed"] = snap.round;
  meta["finished"] = snap.finished;
  meta["reports_counted"] = snap.counted;
  meta["model"] = e->model;
  meta["privacy"] = PrivacyJson(e->privacy);
  FEDLDP_ASSIGN_OR_RETURN(const std::string bytes, FileBytes(out.format, *e, meta));
  FEDLDP_RETURN_IF_ERROR(WriteFileAtomically(config.out, bytes, 0644, /*overwrite=*/true));
  return out;
}

}  // namespace fedldp
