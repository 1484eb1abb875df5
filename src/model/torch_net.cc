// NeuralNet's work on LibTorch: the only translation unit that includes
// Torch, built as the plugin libfedldp_torch.so (torch_net.h says why).
#include "torch_net.h"

#include <ATen/CPUGeneratorImpl.h>
#include <dlfcn.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "fedldp/random/counter_rng.h"

namespace fedldp {
namespace {

// What a batched pass over groups of rows (GroupGradients) supplies and
// records: the groups' sizes (consecutive rows of the batch) and each
// group's dropout generator; each Conv2d's and Linear's input and output.
struct Tape {
  std::vector<std::int64_t> sizes;
  std::vector<at::Generator> generators;
  struct Layer {
    std::shared_ptr<torch::nn::Module> module;
    torch::Tensor input, output;
  };
  std::vector<Layer> layers;
};

// layer->forward(x), recorded on the tape if there is one.
template <typename Layer>
torch::Tensor Taped(Layer& layer, const torch::Tensor& x, Tape* tape) {
  torch::Tensor y = layer->forward(x);
  if (tape != nullptr) tape->layers.push_back({layer.ptr(), x.detach(), y});
  return y;
}

// Dropout that draws from `generator`, not Torch's global one, so that nets
// trained at once on several threads each draw the same masks as alone.
// channels: whole channels of an (N, C, H, W) input are dropped (Dropout2d).
// On a tape each group draws its rows' masks from its own generator, as the
// group alone draws them in Train.
torch::Tensor Dropout(const torch::Tensor& x, double p, bool channels, at::Generator& generator,
                      Tape* tape) {
  auto shape = channels ? std::vector<std::int64_t>{x.size(0), x.size(1), 1, 1} : x.sizes().vec();
  torch::Tensor keep;
  if (tape == nullptr) {
    keep = torch::empty(shape, x.options()).bernoulli_(1 - p, generator);
  } else {
    std::vector<torch::Tensor> parts;
    for (std::size_t g = 0; g < tape->sizes.size(); ++g) {
      shape[0] = tape->sizes[g];
      parts.push_back(torch::empty(shape, x.options()).bernoulli_(1 - p, tape->generators[g]));
    }
    keep = torch::cat(parts);
  }
  return x * keep / (1 - p);
}

// max_pool2d(x, 2) on a float (N, C, H, W) tensor: each 2 x 2 window's
// maximum (floor mode: an odd last row or column is dropped), by a plain
// loop over the planes. The same values as Torch's, and the same gradient:
// each window's goes to the element Torch's CPU kernel picks (a row-major
// scan keeping the first maximum, or the last NaN), so a seeded run trains
// the same model bit for bit. Torch 1.13's kernel took a third of a
// batched pass of 64 one-step clients (its forward of 64 x 10 x 24 x 24:
// 2.9 ms).
struct MaxPool2x2 : torch::autograd::Function<MaxPool2x2> {
  // One row of windows: rows `top` and top + w of a plane, whose first
  // element is `first` in the plane. Branch-free (the comparisons' outcomes
  // are data), so the compiler vectorises it: a later corner replaces the
  // maximum if it is larger or NaN, the scan's rule.
  static void PoolRow(const float* __restrict top, std::int64_t w, std::int64_t ow,
                      std::int32_t first, float* __restrict out, std::int32_t* __restrict at) {
    const float* __restrict bottom = top + w;
    const auto below = static_cast<std::int32_t>(w);
    for (std::int64_t j = 0; j < ow; ++j) {
      const float corners[4] = {top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]};
      const std::int32_t offsets[4] = {0, 1, below, below + 1};
      float m = corners[0];
      std::int32_t best = 0;
      for (int k = 1; k < 4; ++k) {
        const float v = corners[k];
        const bool replace = (v > m) | (v != v);
        m = replace ? v : m;
        best = replace ? offsets[k] : best;
      }
      out[j] = m;
      at[j] = first + static_cast<std::int32_t>(2 * j) + best;
    }
  }
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input) {
    const auto x = input.contiguous();
    const std::int64_t planes = x.size(0) * x.size(1), h = x.size(2), w = x.size(3);
    const std::int64_t oh = h / 2, ow = w / 2;
    auto out = torch::empty({x.size(0), x.size(1), oh, ow}, x.options());
    auto where = torch::empty({x.size(0), x.size(1), oh, ow}, x.options().dtype(torch::kInt32));
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    std::int32_t* at = where.data_ptr<std::int32_t>();
    for (std::int64_t p = 0; p < planes; ++p, in += h * w) {
      for (std::int64_t i = 0; i < oh; ++i, o += ow, at += ow) {
        PoolRow(in + 2 * i * w, w, ow, static_cast<std::int32_t>(2 * i * w), o, at);
      }
    }
    ctx->save_for_backward({where});
    ctx->saved_data["shape"] = x.sizes().vec();
    return out;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto where = ctx->get_saved_variables()[0];
    const auto shape = ctx->saved_data["shape"].toIntVector();
    auto dx = torch::zeros(shape, grads[0].options());
    const auto g = grads[0].contiguous();
    const std::int64_t window = where.size(2) * where.size(3), plane = shape[2] * shape[3];
    const float* gi = g.data_ptr<float>();
    const std::int32_t* at = where.data_ptr<std::int32_t>();
    float* d = dx.data_ptr<float>();
    for (std::int64_t p = 0; p < shape[0] * shape[1]; ++p, d += plane) {
      for (std::int64_t k = 0; k < window; ++k) d[*at++] = *gi++;
    }
    return {dx};
  }
};
torch::Tensor MaxPool(const torch::Tensor& x) { return MaxPool2x2::apply(x); }

struct CnnImpl : torch::nn::Module {
  CnnImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 10, 5)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(10, 20, 5)))),
        fc1(register_module("fc1", torch::nn::Linear(320, 50))),
        fc2(register_module("fc2", torch::nn::Linear(50, 10))) {}
  torch::Tensor forward(torch::Tensor x, Tape* tape = nullptr) {
    x = x.view({-1, 1, 28, 28});
    x = torch::relu(MaxPool(Taped(conv1, x, tape)));
    x = Taped(conv2, x, tape);
    if (is_training()) x = Dropout(x, 0.5, true, generator, tape);
    x = torch::relu(MaxPool(x));
    x = torch::relu(Taped(fc1, x.view({-1, 320}), tape));
    if (is_training()) x = Dropout(x, 0.5, false, generator, tape);
    return torch::log_softmax(Taped(fc2, x, tape), 1);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
  at::Generator generator = at::detail::createCPUGenerator();  // dropout's, seeded by Train
};

struct VggImpl : torch::nn::Module {
  VggImpl() {
    const int channels[][2] = {{3, 32}, {32, 32}, {32, 64}, {64, 64}, {64, 128}};
    for (int i = 0; i < 5; ++i) {
      convs.push_back(register_module(
          "conv" + std::to_string(i + 1),
          torch::nn::Conv2d(
              torch::nn::Conv2dOptions(channels[i][0], channels[i][1], 3).padding(1))));
    }
    fc1 = register_module("fc1", torch::nn::Linear(128 * 4 * 4, 256));
    fc2 = register_module("fc2", torch::nn::Linear(256, 10));
  }
  torch::Tensor forward(torch::Tensor x, Tape* tape = nullptr) {
    x = x.view({-1, 3, 32, 32});
    x = torch::relu(Taped(convs[0], x, tape));
    x = MaxPool(torch::relu(Taped(convs[1], x, tape)));
    x = torch::relu(Taped(convs[2], x, tape));
    x = MaxPool(torch::relu(Taped(convs[3], x, tape)));
    x = MaxPool(torch::relu(Taped(convs[4], x, tape)));
    x = torch::relu(Taped(fc1, x.view({-1, 128 * 4 * 4}), tape));
    return torch::log_softmax(Taped(fc2, x, tape), 1);
  }
  std::vector<torch::nn::Conv2d> convs;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

torch::Tensor Rows(const Dataset& data, std::span<const std::size_t> rows) {
  auto x = torch::empty({static_cast<long>(rows.size()), static_cast<long>(data.dimension)});
  float* dst = x.data_ptr<float>();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto row = data.row(rows[i]);
    std::copy(row.begin(), row.end(), dst + i * data.dimension);
  }
  return x;
}

// An epoch's order: Fisher-Yates on `rng` (CounterRng(seed, 1) in Train).
void ShuffleRows(std::vector<std::size_t>& order, CounterRng& rng) {
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[UniformIndex(rng, i)]);
  }
}

torch::Tensor Labels(const Dataset& data, std::span<const std::size_t> rows) {
  auto y = torch::empty({static_cast<long>(rows.size())}, torch::kLong);
  auto* dst = y.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < rows.size(); ++i) dst[i] = data.labels[rows[i]];
  return y;
}

// An exception from libtorch or the TorchScript interpreter as one line:
// c10::Error's message without its C++ stack trace, the interpreter's
// last line (after its Python-like traceback).
std::string OneLine(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    std::string what = c10->what_without_backtrace();
    return what.substr(0, what.find('\n'));
  }
  std::string what = e.what();
  what.erase(what.find_last_not_of("\n ") + 1);
  if (const auto last = what.find_last_of('\n'); last != std::string::npos) {
    what = what.substr(last + 1);
  }
  return what;
}

// A network on Torch: a built-in module or a TorchScript one.
struct TorchImpl final : NeuralNet::Impl {
  // A built-in module, or a loaded TorchScript one.
  std::shared_ptr<torch::nn::Module> module;
  // The built-in's dropout generator (nullptr: none, or a TorchScript
  // model's dropout, which draws from Torch's global generator).
  at::Generator* generator = nullptr;
  std::shared_ptr<torch::jit::script::Module> loaded;
  std::function<torch::Tensor(torch::Tensor)> forward;
  // The built-ins' forward on a tape (GroupGradients' batched pass); null
  // for a TorchScript model.
  std::function<torch::Tensor(torch::Tensor, Tape&)> taped;
  std::vector<torch::Tensor> params;
  double input_mean = 0, input_sd = 1;

  torch::Tensor Input(const Dataset& data, std::span<const std::size_t> rows) const {
    auto x = Rows(data, rows);
    if (input_mean != 0 || input_sd != 1) x.sub_(input_mean).div_(input_sd);
    return x;
  }
  void SetTraining(bool on) const {  // the modules, behind pointers
    if (loaded) {
      loaded->train(on);
    } else {
      module->train(on);
    }
  }
  // The built-ins end in log-softmax (negative log-likelihood); a user's
  // model may return logits or log-probabilities, and cross-entropy, which
  // applies log-softmax (idempotent on log-probabilities), fits both.
  torch::Tensor Loss(const torch::Tensor& out, const torch::Tensor& labels) const {
    return loaded ? torch::nn::functional::cross_entropy(out, labels)
                  : torch::nll_loss(out, labels);
  }
  // Each row's loss (no reduction).
  torch::Tensor Losses(const torch::Tensor& out, const torch::Tensor& labels) const {
    namespace F = torch::nn::functional;
    return loaded
               ? F::cross_entropy(out, labels, F::CrossEntropyFuncOptions().reduction(torch::kNone))
               : F::nll_loss(out, labels, F::NLLLossFuncOptions().reduction(torch::kNone));
  }
  // The parameters' names and sizes, from params.
  void AddParameter(const std::string& name, const torch::Tensor& p) {
    params.push_back(p);
    names.push_back(name);
    sizes.push_back(static_cast<std::size_t>(p.numel()));
    total += sizes.back();
  }

  std::vector<float> GetWeights() const override;
  void SetWeights(std::span<const float> weights) override;
  void SetInputStandardization(double mean, double sd) override;
  double Train(const Dataset& data, std::span<const std::size_t> rows, int epochs,
               std::size_t batch, double lr, std::uint64_t seed) override;
  double Accuracy(const Dataset& data) const override;
  Status Probe(const Dataset& data) override;
  std::vector<float> GroupGradients(const Dataset& data, std::span<const std::size_t> rows,
                                    std::span<const std::size_t> sizes,
                                    std::span<const std::uint64_t> seeds) override;
  Result<std::string> TorchScript(const std::string& metadata) const override;

 private:
  torch::jit::Module Scripted() const;
  double TrainSteps(const Dataset& data, std::span<const std::size_t> rows, int epochs,
                    std::size_t batch, double lr, std::uint64_t seed);
  double CountCorrect(const Dataset& data) const;
};

// A TorchScript model from `path`, as torch.jit.save wrote it: its floating
// parameters, in named_parameters() order, are the layers.
Result<std::unique_ptr<TorchImpl>> LoadScript(const std::string& path) {
  auto impl = std::make_unique<TorchImpl>();
  impl->arch = path;
  impl->script = true;
  try {
    auto m = std::make_shared<torch::jit::script::Module>(torch::jit::load(path));
    impl->loaded = m;
    impl->forward = [m](torch::Tensor x) {
      return m->forward(std::vector<torch::jit::IValue>{std::move(x)}).toTensor();
    };
    for (const auto& p : m->named_parameters(/*recurse=*/true)) {
      if (!p.value.is_floating_point() || p.value.scalar_type() != torch::kFloat) {
        return Error{path + ": parameter " + p.name +
                     " is not float32 (convert the model with "
                     ".float() before saving)"};
      }
      if (!torch::isfinite(p.value).all().item<bool>()) {
        return Error{path + ": parameter " + p.name +
                     " holds a value that is not finite (NaN or inf): re-train or re-export "
                     "the model"};
      }
      impl->AddParameter(p.name, p.value);
      impl->params.back().requires_grad_(true);  // a model saved under no_grad trains too
    }
  } catch (const c10::Error& e) {
    return Error{path + ": not a TorchScript model torch.jit.load can read (" +
                 std::string(e.what_without_backtrace()) + ")"};
  } catch (const std::exception& e) {
    return Error{path + ": not a TorchScript model torch.jit.load can read (" + e.what() + ")"};
  }
  if (impl->params.empty()) return Error{path + ": the model has no parameters to train"};
  return impl;
}

// Each registered architecture's builder, in kArchitectures' order, and its
// forward in evaluation mode as TorchScript over the same parameters (what
// TorchScript() exports; tests/model/neural_net_test checks the two agree).
struct Builder {
  std::string_view name;
  void (*build)(TorchImpl&);
  std::string_view script;
};
constexpr Builder kBuilders[] = {
    {"cnn",
     [](TorchImpl& impl) {
       auto m = std::make_shared<CnnImpl>();
       impl.module = m;
       impl.generator = &m->generator;
       impl.forward = [m](torch::Tensor x) { return m->forward(x); };
       impl.taped = [m](torch::Tensor x, Tape& tape) { return m->forward(x, &tape); };
     },
     R"(
def forward(self, x):
    x = ((x - self.input_mean) / self.input_sd).view([-1, 1, 28, 28])
    x = torch.relu(torch.max_pool2d(torch.conv2d(x, self.conv1.weight, self.conv1.bias), [2, 2]))
    x = torch.relu(torch.max_pool2d(torch.conv2d(x, self.conv2.weight, self.conv2.bias), [2, 2]))
    x = torch.relu(torch.linear(x.view([-1, 320]), self.fc1.weight, self.fc1.bias))
    return torch.log_softmax(torch.linear(x, self.fc2.weight, self.fc2.bias), 1)
)"},
    {"vgg",
     [](TorchImpl& impl) {
       auto m = std::make_shared<VggImpl>();
       impl.module = m;
       impl.forward = [m](torch::Tensor x) { return m->forward(x); };
       impl.taped = [m](torch::Tensor x, Tape& tape) { return m->forward(x, &tape); };
     },
     R"(
def conv(self, x, w, b):
    return torch.relu(torch.conv2d(x, w, b, [1, 1], [1, 1]))

def forward(self, x):
    x = ((x - self.input_mean) / self.input_sd).view([-1, 3, 32, 32])
    x = self.conv(x, self.conv1.weight, self.conv1.bias)
    x = torch.max_pool2d(self.conv(x, self.conv2.weight, self.conv2.bias), [2, 2])
    x = self.conv(x, self.conv3.weight, self.conv3.bias)
    x = torch.max_pool2d(self.conv(x, self.conv4.weight, self.conv4.bias), [2, 2])
    x = torch.max_pool2d(self.conv(x, self.conv5.weight, self.conv5.bias), [2, 2])
    x = torch.relu(torch.linear(x.view([-1, 2048]), self.fc1.weight, self.fc1.bias))
    return torch.log_softmax(torch.linear(x, self.fc2.weight, self.fc2.bias), 1)
)"},
};
constexpr bool BuildersMatchTheRegistry() {
  if (std::size(kBuilders) != std::size(kArchitectures)) return false;
  for (std::size_t i = 0; i < std::size(kBuilders); ++i) {
    if (kBuilders[i].name != kArchitectures[i].name) return false;
  }
  return true;
}
static_assert(BuildersMatchTheRegistry(), "every registered architecture has its builder");

// A network of a registered architecture (its name checked by NeuralNet)
// or from a TorchScript file.
Result<std::unique_ptr<NeuralNet::Impl>> Create(const std::string& arch, std::uint64_t seed) {
  // The initial weights come from Torch's global generator: nets made on
  // several threads at once (the clients' nets, or simulated processes in
  // one) each get the draws of their own seed, not an interleaving.
  static std::mutex creating;
  std::lock_guard lock(creating);
  torch::manual_seed(seed);
  if (IsTorchScriptFile(arch)) {
    auto loaded = LoadScript(arch);
    if (!loaded.ok()) return Error{loaded.error()};
    return std::unique_ptr<NeuralNet::Impl>(std::move(loaded).value());
  }
  const Architecture* registered = FindArchitecture(arch);
  if (registered == nullptr) return Error{"no architecture '" + arch + "' in this plugin"};
  auto impl = std::make_unique<TorchImpl>();
  impl->arch = arch;
  impl->input = registered->input;
  impl->per_example = true;
  kBuilders[registered - kArchitectures].build(*impl);
  for (const auto& p : impl->module->named_parameters()) impl->AddParameter(p.key(), p.value());
  return std::unique_ptr<NeuralNet::Impl>(std::move(impl));
}

}  // namespace

std::vector<float> TorchImpl::GetWeights() const {
  std::vector<float> w(total);
  std::size_t offset = 0;
  for (const auto& p : params) {
    const auto c = p.detach().contiguous();
    std::copy_n(c.data_ptr<float>(), c.numel(), w.data() + offset);
    offset += static_cast<std::size_t>(c.numel());
  }
  return w;
}

void TorchImpl::SetWeights(std::span<const float> w) {
  torch::NoGradGuard no_grad;
  std::size_t offset = 0;
  for (auto& p : params) {
    auto src = torch::from_blob(const_cast<float*>(w.data() + offset), p.sizes(), torch::kFloat);
    p.copy_(src);
    offset += static_cast<std::size_t>(p.numel());
  }
}

void TorchImpl::SetInputStandardization(double mean, double sd) {
  input_mean = mean;
  input_sd = sd;
}

double TorchImpl::Train(const Dataset& data, std::span<const std::size_t> rows, int epochs,
                        std::size_t batch, double lr, std::uint64_t seed) {
  try {
    return TrainSteps(data, rows, epochs, batch, lr, seed);
  } catch (const std::exception& e) {  // c10::Error, or the interpreter's JITException
    throw std::runtime_error(arch + ": training failed: " + OneLine(e));
  }
}

double TorchImpl::TrainSteps(const Dataset& data, std::span<const std::size_t> rows, int epochs,
                             std::size_t batch, double lr, std::uint64_t seed) {
  if (generator != nullptr) {
    std::lock_guard lock(generator->mutex());
    generator->set_current_seed(seed);  // dropout
  } else if (loaded) {
    torch::manual_seed(seed);  // a TorchScript model's dropout, if any
  }
  SetTraining(true);
  std::vector<torch::Tensor> stepped;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!Frozen(i)) stepped.push_back(params[i]);
  }
  if (stepped.empty()) return 0;
  torch::optim::SGD sgd(stepped, torch::optim::SGDOptions(lr));
  std::vector<std::size_t> order(rows.begin(), rows.end());
  CounterRng rng(seed, 1);
  double last = 0;
  for (int e = 0; e < epochs; ++e) {
    ShuffleRows(order, rng);
    double sum = 0;
    std::size_t batches = 0;
    for (std::size_t start = 0; start < order.size(); start += batch) {
      const std::span<const std::size_t> b(order.data() + start,
                                           std::min(batch, order.size() - start));
      sgd.zero_grad();
      auto loss = Loss(forward(Input(data, b)), Labels(data, b));
      loss.backward();
      sgd.step();
      sum += loss.item<double>();
      ++batches;
    }
    last = batches ? sum / static_cast<double>(batches) : 0;
  }
  return last;
}

double TorchImpl::Accuracy(const Dataset& data) const {
  try {
    return CountCorrect(data);
  } catch (const std::exception& e) {
    throw std::runtime_error(arch + ": evaluation failed: " + OneLine(e));
  }
}

double TorchImpl::CountCorrect(const Dataset& data) const {
  torch::NoGradGuard no_grad;
  SetTraining(false);
  std::size_t correct = 0;
  constexpr std::size_t kChunk = 1000;
  std::vector<std::size_t> rows;
  for (std::size_t start = 0; start < data.size(); start += kChunk) {
    rows.resize(std::min(kChunk, data.size() - start));
    std::iota(rows.begin(), rows.end(), start);
    const auto predicted = forward(Input(data, rows)).argmax(1);
    correct +=
        static_cast<std::size_t>(predicted.eq(Labels(data, rows)).sum().item<std::int64_t>());
  }
  return data.size() ? static_cast<double>(correct) / static_cast<double>(data.size()) : 0;
}

namespace {

// A Conv2d's per-example weight gradients, (n, weight size), from its input
// (n, C, H, W) and output gradient (n, O, Ho, Wo). Example i's gradient
// for output channel o and input channel c is the correlation of its padded
// input plane c with its gradient plane o (stride and dilation swapped),
// cut to the kernel: all of them are one convolution with n C groups, whose
// filters are the gradient planes. Torch's im2col (unfold) then a batched
// product took 4 to 5 ms of a pass of 64 images through each of the CNN's
// convs, the grouped convolution about 1. Its filters take n C O Ho Wo
// floats, so a wide layer (VGG's) keeps the unfold and product.
torch::Tensor ConvWeightsPerExample(const torch::Tensor& input, const torch::Tensor& grad,
                                    const torch::nn::detail::ConvNdOptions<2>& o,
                                    const torch::ExpandingArray<2>& padding) {
  namespace F = torch::nn::functional;
  const std::int64_t n = input.size(0), c = input.size(1), out = grad.size(1);
  constexpr std::int64_t kMostFilterFloats = std::int64_t{1} << 22;
  if (n * c * grad[0].numel() > kMostFilterFloats) {
    const auto columns = F::unfold(input, F::UnfoldFuncOptions(o.kernel_size())
                                              .padding(padding)
                                              .stride(o.stride())
                                              .dilation(o.dilation()));
    return torch::bmm(grad.reshape({n, out, -1}), columns.transpose(1, 2)).reshape({n, -1});
  }
  const auto padded = F::pad(
      input, F::PadFuncOptions({padding->at(1), padding->at(1), padding->at(0), padding->at(0)}));
  const std::int64_t ho = grad.size(2), wo = grad.size(3);
  const auto filters = grad.unsqueeze(2)
                           .expand({n, out, c, ho, wo})
                           .permute({0, 2, 1, 3, 4})
                           .reshape({n * c * out, 1, ho, wo});
  const auto k = o.kernel_size();
  const auto w =
      F::conv2d(padded.reshape({1, n * c, padded.size(2), padded.size(3)}), filters,
                F::Conv2dFuncOptions().groups(n * c).stride(o.dilation()).dilation(o.stride()))
          .narrow(2, 0, k->at(0))
          .narrow(3, 0, k->at(1));
  return w.reshape({n, c, out, k->at(0) * k->at(1)}).permute({0, 2, 1, 3}).reshape({n, -1});
}

// The per-example gradients of a taped Conv2d or Linear, from its input and
// its output's gradient, as Opacus's grad samplers compute them: the
// weight's (n, weight size) and the bias's (n, bias size; undefined if none).
// A Linear's is the outer product of output gradient and input; a
// Conv2d's as ConvWeightsPerExample computes it.
std::pair<torch::Tensor, torch::Tensor> PerExample(const Tape::Layer& layer,
                                                   const torch::Tensor& grad) {
  namespace F = torch::nn::functional;
  const std::int64_t n = grad.size(0);
  if (const auto* linear = dynamic_cast<const torch::nn::LinearImpl*>(layer.module.get())) {
    const auto w = torch::bmm(grad.unsqueeze(2), layer.input.unsqueeze(1));
    return {w.reshape({n, -1}), linear->options.bias() ? grad : torch::Tensor()};
  }
  const auto& o = dynamic_cast<const torch::nn::Conv2dImpl&>(*layer.module).options;
  const auto* padding = c10::get_if<torch::ExpandingArray<2>>(&o.padding());
  if (padding == nullptr || o.groups() != 1 ||
      !c10::holds_alternative<torch::enumtype::kZeros>(o.padding_mode())) {
    throw std::logic_error("no per-example path for a Conv2d with named padding or groups");
  }
  const auto g = grad.reshape({n, grad.size(1), -1});
  return {ConvWeightsPerExample(layer.input, grad, o, *padding),
          o.bias() ? g.sum(2) : torch::Tensor()};
}

// The index of `p` among the net's parameters.
std::size_t ParameterIndex(const TorchImpl& impl, const torch::Tensor& p) {
  for (std::size_t i = 0; i < impl.params.size(); ++i) {
    if (impl.params[i].is_same(p)) return i;
  }
  throw std::logic_error("a taped layer's parameter is not the net's");
}

// Adds each example's gradient of `p` (rows of per_example) to its group's
// row of `sums`, at p's place in the flat weights (copies them when every
// group is one example).
void AddToGroups(const TorchImpl& impl, const torch::Tensor& p, const torch::Tensor& groups,
                 const torch::Tensor& per_example, torch::Tensor& sums) {
  const std::size_t index = ParameterIndex(impl, p);
  if (impl.Frozen(index)) return;  // its gradient stays zero
  const auto offset = static_cast<std::int64_t>(
      std::accumulate(impl.sizes.begin(), impl.sizes.begin() + index, std::size_t{0}));
  auto place = sums.narrow(1, offset, per_example.size(1));
  if (per_example.size(0) == sums.size(0)) {
    place.copy_(per_example);
  } else {
    place.index_add_(0, groups, per_example);
  }
}

// GroupGradients' rows: each group's in the order Train takes them (its
// seed's epoch order), every row's group and weight (1 / the group's rows:
// a group's loss is its mean), and the tape with each group's dropout.
struct GroupedRows {
  std::vector<std::size_t> rows;
  std::vector<std::int64_t> group;
  std::vector<float> weight;
  Tape tape;
};
GroupedRows GroupRows(std::span<const std::size_t> rows, std::span<const std::size_t> sizes,
                      std::span<const std::uint64_t> seeds) {
  GroupedRows out;
  std::size_t at = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    std::vector<std::size_t> part(rows.begin() + at, rows.begin() + at + sizes[g]);
    at += sizes[g];
    CounterRng rng(seeds[g], 1);
    ShuffleRows(part, rng);
    out.rows.insert(out.rows.end(), part.begin(), part.end());
    out.group.insert(out.group.end(), sizes[g], static_cast<std::int64_t>(g));
    out.weight.insert(out.weight.end(), sizes[g], 1.0f / static_cast<float>(sizes[g]));
    out.tape.sizes.push_back(static_cast<std::int64_t>(sizes[g]));
    out.tape.generators.push_back(at::detail::createCPUGenerator(seeds[g]));
  }
  return out;
}

// All groups' gradients in one batched pass (a built-in net), into `sums`
// (groups x parameters, zero).
void BatchedGradients(TorchImpl& impl, const Dataset& data, std::span<const std::size_t> rows,
                      std::span<const std::size_t> sizes, std::span<const std::uint64_t> seeds,
                      torch::Tensor& sums) {
  GroupedRows batch = GroupRows(rows, sizes, seeds);
  impl.SetTraining(true);
  const auto out = impl.taped(impl.Input(data, batch.rows), batch.tape);
  const auto loss =
      (impl.Losses(out, Labels(data, batch.rows)) * torch::tensor(batch.weight)).sum();
  std::vector<torch::Tensor> outputs;
  for (const auto& layer : batch.tape.layers) outputs.push_back(layer.output);
  const auto grads = torch::autograd::grad({loss}, outputs);
  const auto groups = torch::tensor(batch.group);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const auto own = batch.tape.layers[i].module->named_parameters(/*recurse=*/false);
    const bool trained = std::any_of(own.begin(), own.end(), [&](const auto& p) {
      return !impl.Frozen(ParameterIndex(impl, p.value()));
    });
    if (!trained) continue;  // a frozen layer's per-example gradients are not needed
    const auto [w, b] = PerExample(batch.tape.layers[i], grads[i]);
    AddToGroups(impl, own["weight"], groups, w, sums);
    if (b.defined()) AddToGroups(impl, own["bias"], groups, b, sums);
  }
}

// One pass per group (a TorchScript model: no per-example path), each as
// Train's step takes it, into `sums`.
void LoopGradients(TorchImpl& impl, const Dataset& data, std::span<const std::size_t> rows,
                   std::span<const std::size_t> sizes, std::span<const std::uint64_t> seeds,
                   torch::Tensor& sums) {
  const GroupedRows batch = GroupRows(rows, sizes, seeds);
  impl.SetTraining(true);
  std::size_t at = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    const std::span<const std::size_t> part(batch.rows.data() + at, sizes[g]);
    at += sizes[g];
    torch::manual_seed(seeds[g]);  // its dropout, as in Train
    const auto loss = impl.Loss(impl.forward(impl.Input(data, part)), Labels(data, part));
    const auto grads = torch::autograd::grad({loss}, impl.params, {}, false, false,
                                             /*allow_unused=*/true);
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const auto n = static_cast<std::int64_t>(impl.sizes[i]);
      if (grads[i].defined() && !impl.Frozen(i))
        sums[g].narrow(0, offset, n).copy_(grads[i].reshape({-1}));
      offset += n;
    }
  }
}

// One training step's work on `rows`, without the step: what a TorchScript
// model must survive before a run starts, or a run would fail (or train
// NaN) after its header, with libtorch's stack trace.
Status ProbeStep(TorchImpl& impl, const Dataset& data, std::span<const std::size_t> rows) {
  impl.SetTraining(false);
  const auto out = impl.forward(impl.Input(data, rows));
  const std::string returned = impl.arch + ": for a batch of one row of " +
                               std::to_string(data.dimension) + " features the model ";
  if (out.dim() != 2 || out.size(0) != 1 || out.size(1) < data.classes) {
    return Error{returned + "must return 1 x (at least " + std::to_string(data.classes) +
                 " classes) scores, it returned " + c10::str(out.sizes())};
  }
  if (!out.is_floating_point()) {
    return Error{returned + "returned scores of type " +
                 std::string(c10::toString(out.scalar_type())) +
                 "; return floating-point logits or log-probabilities"};
  }
  if (!torch::isfinite(out).all().item<bool>()) {
    return Error{returned + "returned a score that is not finite (NaN or inf)"};
  }
  const auto loss = impl.Loss(out, Labels(data, rows));
  if (!loss.requires_grad()) {
    return Error{returned +
                 "returned scores that do not depend on its parameters (detached?): "
                 "it cannot train"};
  }
  loss.backward();
  for (auto& p : impl.params) p.mutable_grad() = torch::Tensor();
  return {};
}

}  // namespace

Status TorchImpl::Probe(const Dataset& data) {
  const std::size_t rows[] = {0};
  try {
    return ProbeStep(*this, data, rows);
  } catch (const std::exception& e) {  // c10::Error, or the interpreter's JITException
    return Error{arch + ": the model fails on a batch of " + std::to_string(data.dimension) +
                 "-feature rows (" + OneLine(e) + ")"};
  }
}

std::vector<float> TorchImpl::GroupGradients(const Dataset& data, std::span<const std::size_t> rows,
                                             std::span<const std::size_t> sizes,
                                             std::span<const std::uint64_t> seeds) {
  std::vector<float> out(sizes.size() * total, 0.0f);
  try {
    auto sums = torch::from_blob(
        out.data(), {static_cast<std::int64_t>(sizes.size()), static_cast<std::int64_t>(total)},
        torch::kFloat);
    if (taped) {
      BatchedGradients(*this, data, rows, sizes, seeds, sums);
    } else {
      LoopGradients(*this, data, rows, sizes, seeds, sums);
    }
    return out;
  } catch (const std::exception& e) {  // c10::Error, or the interpreter's JITException
    throw std::runtime_error(arch + ": gradients failed: " + OneLine(e));
  }
}

// The exported module: the input standardisation as attributes; a
// built-in's parameters in submodules named as its own (conv1.weight is
// parameter weight of submodule conv1) under its script, or a copy of the
// user's TorchScript model called on the standardised input.
torch::jit::Module TorchImpl::Scripted() const {
  torch::jit::Module out("__torch__.fedldp.Exported");
  out.register_attribute("input_mean", c10::FloatType::get(), input_mean);
  out.register_attribute("input_sd", c10::FloatType::get(), input_sd);
  if (loaded) {
    out.register_module("net", loaded->clone());
    out.define(
        "def forward(self, x):\n    return self.net.forward((x - self.input_mean) / "
        "self.input_sd)\n");
    return out;
  }
  std::map<std::string, torch::jit::Module> subs;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string& name = names[i];
    const auto dot = name.find('.');
    const std::string sub = name.substr(0, dot), field = name.substr(dot + 1);
    auto [at, added] = subs.try_emplace(sub, "__torch__.fedldp." + arch + "." + sub);
    at->second.register_parameter(field, params[i].detach().clone(), /*is_buffer=*/false);
  }
  for (auto& [name, sub] : subs) out.register_module(name, sub);
  const Builder* b = std::find_if(std::begin(kBuilders), std::end(kBuilders),
                                  [&](const Builder& x) { return x.name == arch; });
  out.define(std::string(b->script));
  return out;
}

Result<std::string> TorchImpl::TorchScript(const std::string& metadata) const {
  try {
    torch::jit::Module out = Scripted();
    out.eval();
    std::ostringstream bytes;
    out.save(bytes, {{"fedldp.json", metadata}});
    return bytes.str();
  } catch (const std::exception& e) {  // c10::Error, or the compiler's
    return Error{arch + ": cannot be written as TorchScript (" + OneLine(e) + ")"};
  }
}

namespace {

// Torch's thread count does not reach the BLAS it calls: Debian's Torch links
// OpenBLAS (pthreads), which keeps a pool of its own, one thread a core,
// spinning in sched_yield beside a round's client threads (40 % of a batched
// pass's samples on 2 cores; a round of 1,024 one-step clients on 2 threads
// took 1.5x as long). The BLAS gets the same count, when it is OpenBLAS.
void SetBlasThreads(int threads) {
  void* blas = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (blas == nullptr) return;  // another BLAS, or none loaded
  using SetCount = void (*)(int);
  if (auto* set = reinterpret_cast<SetCount>(dlsym(blas, "openblas_set_num_threads"))) {
    set(threads);
  }
  dlclose(blas);  // drops only the reference RTLD_NOLOAD took
}

void SetThreads(int threads) {
  torch::set_num_threads(threads);
  SetBlasThreads(threads);
}

}  // namespace

}  // namespace fedldp

// The plugin's one entry point (torch_net.h).
extern "C" __attribute__((visibility("default"))) const fedldp::torch_net::Plugin*
fedldp_torch_net() {
  static const fedldp::torch_net::Plugin plugin{fedldp::torch_net::kAbi, &fedldp::Create,
                                                &fedldp::SetThreads};
  return &plugin;
}
