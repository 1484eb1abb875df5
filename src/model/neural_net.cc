// NeuralNet without Torch: the checks of its arguments, and the plugin that
// does the work (torch_net.h), loaded when the first network is made.
#include "fedldp/model/neural_net.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "torch_net.h"

namespace fedldp {
namespace {

// The folder of the program or shared object this code is linked into (the
// fedldp binary, a test, the Python module), or "" if unknown.
std::filesystem::path OwnFolder() {
  Dl_info info{};
  std::error_code ec;
  if (dladdr(reinterpret_cast<void*>(&OwnFolder), &info) != 0 && info.dli_fname != nullptr &&
      std::string_view(info.dli_fname).find('/') != std::string_view::npos) {
    return std::filesystem::weakly_canonical(info.dli_fname, ec).parent_path();
  }
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);  // the main program
  return ec ? std::filesystem::path() : exe.parent_path();
}

// Where the plugin may be, in order: FEDLDP_TORCH_PLUGIN if set (then only
// there); beside this code's file (the Python package); where `cmake
// --install` puts it relative to the binary, and under the prefix this build
// was configured for (a program of one's own linking fedldp::nn); where this
// build made it.
std::vector<std::string> PluginPaths() {
  if (const char* set = std::getenv("FEDLDP_TORCH_PLUGIN"); set != nullptr && *set != '\0') {
    return {set};
  }
  std::vector<std::string> paths;
  if (const auto own = OwnFolder(); !own.empty()) {
    paths.push_back((own / torch_net::kFileName).string());
    paths.push_back((own / FEDLDP_TORCH_PLUGIN_FROM_BINDIR).lexically_normal().string());
  }
  paths.push_back(FEDLDP_TORCH_PLUGIN_INSTALLED);
  paths.push_back(FEDLDP_TORCH_PLUGIN_BUILT);
  return paths;
}

Result<const torch_net::Plugin*> LoadPlugin() {
  std::string missing, failed;  // paths; then "; " and why, for each that did not load
  for (const std::string& path : PluginPaths()) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      missing += (missing.empty() ? "" : ", ") + path;
      continue;
    }
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      failed += "; " + std::string(dlerror());  // names the path
      continue;
    }
    using Entry = const torch_net::Plugin* (*)();
    const auto entry = reinterpret_cast<Entry>(dlsym(module, torch_net::kEntry));
    const torch_net::Plugin* plugin = entry != nullptr ? entry() : nullptr;
    if (plugin != nullptr && plugin->abi == torch_net::kAbi) return plugin;  // kept loaded
    failed += "; " + path + " is not a plugin of this build of fedldp";
    dlclose(module);
  }
  const std::string why = missing.empty() ? failed.substr(2) : "not found in " + missing + failed;
  return Error{"neural networks run on Torch, which fedldp loads from its plugin " +
               std::string(torch_net::kFileName) + ": " + why +
               " (FEDLDP_TORCH_PLUGIN names its path)"};
}

// The plugin, loaded once; the thread count asked for before it was, or 0.
struct Loader {
  std::mutex mutex;
  std::optional<Result<const torch_net::Plugin*>> plugin;
  int threads = 0;
};
Loader& TheLoader() {
  static Loader loader;
  return loader;
}

Result<const torch_net::Plugin*> Plugin() {
  Loader& l = TheLoader();
  const std::lock_guard lock(l.mutex);
  if (!l.plugin) {
    l.plugin = LoadPlugin();
    if (l.plugin->ok() && l.threads > 0) l.plugin->value()->set_threads(l.threads);
  }
  return *l.plugin;
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer: GCC 12's LeakSanitizer misreads glibc 2.36's
// dynamic TLS blocks, which Torch's libraries get when the plugin is
// dlopen'ed, and crashes at exit ("Tracer caught signal 11" on a bogus
// "DTLS" range). Not intercepting __tls_get_addr keeps it to the static TLS
// blocks, which it reads right; no leak is then reported in Torch's runs.
// ASAN_OPTIONS still overrides it.
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0"; }
#endif

Result<NeuralNet> NeuralNet::Create(const std::string& arch, std::uint64_t seed) {
  if (!IsTorchScriptFile(arch) && FindArchitecture(arch) == nullptr) {
    return Error{"unknown architecture '" + arch + "' (" + ArchitectureNames() +
                 ", or a TorchScript file .pt)"};
  }
  FEDLDP_ASSIGN_OR_RETURN(const torch_net::Plugin* plugin, Plugin());
  FEDLDP_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, plugin->create(arch, seed));
  return NeuralNet(std::move(impl));
}

NeuralNet::NeuralNet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NeuralNet::~NeuralNet() = default;
NeuralNet::NeuralNet(NeuralNet&&) noexcept = default;
NeuralNet& NeuralNet::operator=(NeuralNet&&) noexcept = default;

const std::string& NeuralNet::arch() const { return impl_->arch; }
bool NeuralNet::trains_concurrently() const { return !impl_->script; }
bool NeuralNet::TrainsConcurrently(const std::string& arch) { return !IsTorchScriptFile(arch); }
std::size_t NeuralNet::input_dimension() const { return impl_->input; }
std::size_t NeuralNet::parameters() const { return impl_->total; }
const std::vector<std::size_t>& NeuralNet::layer_sizes() const { return impl_->sizes; }
const std::vector<std::string>& NeuralNet::layer_names() const { return impl_->names; }
bool NeuralNet::per_example_path() const { return impl_->per_example; }

std::vector<float> NeuralNet::GetWeights() const { return impl_->GetWeights(); }

void NeuralNet::SetWeights(std::span<const float> w) {
  if (w.size() != impl_->total) {
    throw std::invalid_argument("NeuralNet::SetWeights: " + std::to_string(w.size()) +
                                " weights for a model of " + std::to_string(impl_->total));
  }
  impl_->SetWeights(w);
}

void NeuralNet::SetFrozenLayers(const std::vector<bool>& frozen) {
  if (frozen.size() != impl_->sizes.size()) {
    throw std::invalid_argument("NeuralNet::SetFrozenLayers: " + std::to_string(frozen.size()) +
                                " flags for a model of " + std::to_string(impl_->sizes.size()) +
                                " layers");
  }
  impl_->frozen = frozen;
}

const std::vector<bool>& NeuralNet::frozen_layers() const { return impl_->frozen; }

void NeuralNet::SetInputStandardization(double mean, double sd) {
  if (!(sd > 0) || !std::isfinite(mean) || !std::isfinite(sd)) {
    throw std::invalid_argument("NeuralNet::SetInputStandardization: sd must be > 0");
  }
  impl_->SetInputStandardization(mean, sd);
}

double NeuralNet::Train(const Dataset& data, std::span<const std::size_t> rows, int epochs,
                        std::size_t batch, double lr, std::uint64_t seed) {
  return impl_->Train(data, rows, epochs, batch, lr, seed);
}

double NeuralNet::Accuracy(const Dataset& data) const { return impl_->Accuracy(data); }

Result<std::string> NeuralNet::TorchScript(const std::string& metadata) const {
  return impl_->TorchScript(metadata);
}

Status NeuralNet::CheckInput(const Dataset& data) const {
  if (data.size() == 0) return Error{"no rows to check the model's input against"};
  if (impl_->input == 0) return impl_->Probe(data);
  if (data.dimension == impl_->input) return {};
  return Error{"architecture " + impl_->arch + " expects " + std::to_string(impl_->input) +
               " features, the data has " + std::to_string(data.dimension)};
}

std::vector<float> NeuralNet::GroupGradients(const Dataset& data, std::span<const std::size_t> rows,
                                             std::span<const std::size_t> sizes,
                                             std::span<const std::uint64_t> seeds) {
  const bool covered = seeds.size() == sizes.size() &&
                       std::find(sizes.begin(), sizes.end(), 0) == sizes.end() &&
                       std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}) == rows.size();
  if (!covered) {
    throw std::invalid_argument(
        "NeuralNet::GroupGradients: groups of at least one row that cover the rows, "
        "one seed each");
  }
  return impl_->GroupGradients(data, rows, sizes, seeds);
}

Status NeuralNet::LoadTorch() {
  const auto plugin = Plugin();
  if (!plugin.ok()) return Error{plugin.error()};
  return Status::Ok();
}

void NeuralNet::SetThreads(int threads) {
  Loader& l = TheLoader();
  const std::lock_guard lock(l.mutex);
  l.threads = threads;  // applied when the plugin loads, if it has not yet
  if (l.plugin && l.plugin->ok()) l.plugin->value()->set_threads(threads);
}

}  // namespace fedldp
