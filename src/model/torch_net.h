// What NeuralNet (fedldp/model/neural_net.h) asks of Torch, and the one
// entry point of the plugin that answers it.
//
// Torch is a plugin, not a link dependency: libtorch pulls some 280 shared
// libraries into a process, whose loading and operator registration cost a
// process 0.4 s of CPU at start-up (1 s under ASan) whether or not it ever
// builds a network. So src/model/torch_net.cc, the only file that includes
// Torch, is built as a module (libfedldp_torch.so) that NeuralNet::Create
// loads with dlopen the first time a network is made: FedSel's commands,
// servers and clients never load Torch, LDP-FL's load it once.
//
// The module and the program are built together from one tree (the same
// compiler, flags and headers), so C++ types cross between them; kAbi
// guards against a module left from another build.
#ifndef FEDLDP_SRC_MODEL_TORCH_NET_H_
#define FEDLDP_SRC_MODEL_TORCH_NET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"
#include "fedldp/model/neural_net.h"

namespace fedldp {

// One network, as the plugin holds it. The plain fields are set when it is
// made and never change; the methods are NeuralNet's (see there), with its
// argument checks done before they are called.
struct NeuralNet::Impl {
  virtual ~Impl() = default;

  std::string arch;
  std::size_t input = 0;     // 0: any (a TorchScript model; CheckInput probes it)
  bool script = false;       // a TorchScript model (not a built-in)
  bool per_example = false;  // GroupGradients takes one batched pass
  std::vector<std::size_t> sizes;
  std::vector<std::string> names;
  std::size_t total = 0;
  // Per layer: held at its weights (NeuralNet::SetFrozenLayers); empty: none.
  std::vector<bool> frozen;
  bool Frozen(std::size_t layer) const { return layer < frozen.size() && frozen[layer]; }

  virtual std::vector<float> GetWeights() const = 0;
  virtual void SetWeights(std::span<const float> weights) = 0;  // of size total
  virtual void SetInputStandardization(double mean, double sd) = 0;
  virtual double Train(const Dataset& data, std::span<const std::size_t> rows, int epochs,
                       std::size_t batch, double lr, std::uint64_t seed) = 0;
  virtual double Accuracy(const Dataset& data) const = 0;
  // One training step's work on the first row, without the step (a
  // TorchScript model's CheckInput).
  virtual Status Probe(const Dataset& data) = 0;
  // Groups that cover the rows, one seed each.
  virtual std::vector<float> GroupGradients(const Dataset& data, std::span<const std::size_t> rows,
                                            std::span<const std::size_t> sizes,
                                            std::span<const std::uint64_t> seeds) = 0;
  // The network as a TorchScript file's bytes (NeuralNet::TorchScript).
  virtual Result<std::string> TorchScript(const std::string& metadata) const = 0;
};

namespace torch_net {

// Raised whenever the interface above changes.
inline constexpr int kAbi = 3;

// The plugin's answer to fedldp_torch_net().
struct Plugin {
  int abi;
  // A registered architecture (its name checked by the caller) or a
  // TorchScript file's path.
  Result<std::unique_ptr<NeuralNet::Impl>> (*create)(const std::string& arch, std::uint64_t seed);
  void (*set_threads)(int threads);
};

// The module's file name, and the symbol it exports.
inline constexpr char kFileName[] = "libfedldp_torch.so";
inline constexpr char kEntry[] = "fedldp_torch_net";

}  // namespace torch_net
}  // namespace fedldp

#endif  // FEDLDP_SRC_MODEL_TORCH_NET_H_
