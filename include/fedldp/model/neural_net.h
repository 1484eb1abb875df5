// Neural networks for LDP-FL, on LibTorch, behind a Torch-free interface: only
// src/model/torch_net.cc includes Torch (a Torch header costs ~22 s and
// ~1.3 GB to compile), built as a plugin (libfedldp_torch.so) that the first
// Create loads, so that a process that makes no network never loads Torch
// (src/model/torch_net.h; FEDLDP_TORCH_PLUGIN names another path to it).
// Every caller sees weights as one flat float vector in layer order. A "layer" is one parameter
// tensor (conv1.weight, conv1.bias, ...): LDP-FL's per-layer ranges apply to each tensor.
//
// Architectures:
//   cnn  the two-layer CNN for MNIST / Fashion-MNIST (1 x 28 x 28 inputs), as in
//        the PyTorch FL examples LDP-FL builds on: conv 1->10 (5x5), max-pool 2,
//        ReLU; conv 10->20 (5x5), dropout, max-pool 2, ReLU; fc 320->50, ReLU,
//        dropout; fc 50->10; log-softmax. 21,840 parameters in 8 tensors.
//   vgg  a small VGG for CIFAR-10 (3 x 32 x 32): [conv 3x3 32, 32, pool]
//        [conv 64, 64, pool] [conv 128, pool], fc 2048->256, fc 256->10, ReLU
//        after each conv and the first fc. 666,538 parameters in 14 tensors.
//   a TorchScript file (a path: ends in .pt or .pth, or has a '/'): your own
//        model, as torch.jit.save wrote it (torch.jit.script or trace). It
//        takes a (batch, features) float tensor of flat rows (reshape inside
//        forward) and returns (batch, classes) logits or log-probabilities;
//        training minimises cross-entropy. Its float32 parameters, in
//        named_parameters() order, are the layers; its own initial weights
//        are kept (the seed drives dropout only).
#ifndef FEDLDP_MODEL_NEURAL_NET_H_
#define FEDLDP_MODEL_NEURAL_NET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/data/dataset.h"

namespace fedldp {

// The networks fedldp builds, registered once (their layers are above; the
// builders sit beside them in src/model/neural_net.cc, checked against this
// table at compile time): the name --model and Python's arch take, what it
// is for, and the flat input it expects. Torch-free, so the option tables
// and the CLI's help read it without loading Torch.
struct Architecture {
  std::string_view name, about;
  std::size_t input;
};
inline constexpr Architecture kArchitectures[] = {
    {"cnn", "the LDP-FL paper's CNN, 1 x 28 x 28 images (mnist, fmnist)", 28 * 28},
    {"vgg", "a small VGG, 3 x 32 x 32 images (cifar10)", 3 * 32 * 32},
};
// The registered architecture `name`, or null.
inline const Architecture* FindArchitecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (a.name == name) return &a;
  }
  return nullptr;
}
// The registered names, listed ("cnn, vgg"), for help and errors.
inline std::string ArchitectureNames() {
  std::string out;
  for (const Architecture& a : kArchitectures)
    out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

// The architecture names a TorchScript file (a path: ends in .pt or .pth,
// or has a '/'), not a network fedldp builds.
inline bool IsTorchScriptFile(std::string_view arch) {
  return arch.ends_with(".pt") || arch.ends_with(".pth") || arch.find('/') != std::string::npos;
}

class NeuralNet {
 public:
  // arch: a registered architecture (kArchitectures; initial weights from
  // Torch's default initialisation, seeded with `seed`) or a TorchScript
  // file's path (its weights).
  static Result<NeuralNet> Create(const std::string& arch, std::uint64_t seed);
  ~NeuralNet();
  NeuralNet(NeuralNet&&) noexcept;
  NeuralNet& operator=(NeuralNet&&) noexcept;

  const std::string& arch() const;
  // True if nets of this architecture may train at once on several threads
  // and each get the result it gets alone: the built-ins draw dropout from
  // their own generator; a TorchScript model's dropout would draw from
  // Torch's global one.
  bool trains_concurrently() const;
  // The same, for an architecture by name (a registered one: yes; a model
  // file: no).
  static bool TrainsConcurrently(const std::string& arch);
  // The input the architecture expects (kArchitectures' input); 0 for a
  // TorchScript model (CheckInput probes it).
  std::size_t input_dimension() const;
  // OK iff the model takes data's rows and returns a score per class: the
  // dimension for the built-ins; one row through a TorchScript model.
  Status CheckInput(const Dataset& data) const;
  std::size_t parameters() const;
  const std::vector<std::size_t>& layer_sizes() const;
  const std::vector<std::string>& layer_names() const;

  // All weights, flat, in layer order.
  std::vector<float> GetWeights() const;
  // Throws std::invalid_argument unless weights.size() == parameters().
  void SetWeights(std::span<const float> weights);

  // Layers held at their current weights: Train does not step them and
  // GroupGradients gives them a zero gradient (backpropagation still passes
  // through them). frozen[i] for layer i; throws std::invalid_argument
  // unless there is one flag per layer.
  void SetFrozenLayers(const std::vector<bool>& frozen);
  const std::vector<bool>& frozen_layers() const;

  // Inputs enter the network as (x - mean) / sd; (0, 1), the default, leaves
  // them as the loader gave them. LDP-FL's runs use the training pixels' mean
  // and standard deviation, as the PyTorch MNIST example does with its
  // published (0.1307, 0.3081).
  void SetInputStandardization(double mean, double sd);

  // `epochs` passes of mini-batch SGD (learning rate lr, negative
  // log-likelihood) over data's `rows`, shuffled each epoch with `seed`,
  // which also seeds dropout. Returns the mean training loss of the last
  // epoch.
  double Train(const Dataset& data, std::span<const std::size_t> rows, int epochs,
               std::size_t batch, double lr, std::uint64_t seed);
  // The gradient, at the current weights, of each group's mean loss: the
  // step Train(data, group, 1, batch >= its rows, lr, seed) takes is -lr
  // times it (the same order of the rows and dropout masks for the seed).
  // The groups are consecutive runs of `rows`, of `sizes` rows (each >= 1),
  // one seed each: a round's clients, each one local step. The built-ins
  // compute every group in one batched pass, from per-example gradients of
  // each Conv2d and Linear (its input and output gradient, as Opacus's grad
  // samplers do) summed per group; a TorchScript model has no per-example
  // path (per_example_path() false) and takes one pass per group. Returns
  // sizes.size() x parameters() floats, a group's after another. Throws
  // std::invalid_argument for groups that do not cover the rows.
  std::vector<float> GroupGradients(const Dataset& data, std::span<const std::size_t> rows,
                                    std::span<const std::size_t> sizes,
                                    std::span<const std::uint64_t> seeds);
  bool per_example_path() const;

  // The network at its current weights as a TorchScript file's bytes
  // (torch.jit.save's format), for torch.jit.load without fedldp: forward
  // takes (batch, features) float rows as fedldp's loaders give them,
  // applies the input standardisation, and returns what this network's
  // forward returns in evaluation mode (the built-ins: log-probabilities).
  // Parameters keep their names (conv1.weight, ...); `metadata` is stored as
  // the extra file "fedldp.json" (torch.jit.load(f, _extra_files=...)).
  Result<std::string> TorchScript(const std::string& metadata) const;

  // Fraction of data's rows classified correctly (evaluation mode).
  double Accuracy(const Dataset& data) const;

  // Torch's intra-op threads for this process (applied when Torch loads, if
  // it has not yet).
  static void SetThreads(int threads);
  // Loads Torch (its plugin) now rather than with the first network, or
  // says why it cannot: seconds on a busy machine, which a deployed client
  // spends before it joins, not once a round waits for it.
  static Status LoadTorch();

  struct Impl;  // opaque: the Torch plugin's network (src/model/torch_net.h)

 private:
  explicit NeuralNet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fedldp

#endif  // FEDLDP_MODEL_NEURAL_NET_H_
