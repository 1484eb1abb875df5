#include <sodium.h>

#include <filesystem>

#include "fedldp/base/files.h"
#include "fedldp/net/ldpfl_deploy.h"
#include "grpc_util.h"
#include "ldpfl_method.h"
#include "ledger_answers.h"

namespace fedldp {

std::string PackPieces(std::span<const std::string> pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    const std::uint64_t n = p.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out += p;
  }
  return out;
}

Result<std::vector<std::string>> UnpackPieces(std::string_view bytes) {
  std::vector<std::string> pieces;
  while (!bytes.empty()) {
    if (bytes.size() < 8) return Error{"a truncated piece length"};
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    bytes.remove_prefix(8);
    if (n > bytes.size()) return Error{"a piece longer than what is left"};
    pieces.emplace_back(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  return pieces;
}

Result<LdpFlTaskSpec> MakeLdpFlTask(std::string id, const LdpFlConfig& config, std::uint64_t users,
                                    const Dataset& train, std::span<const std::size_t> rows,
                                    std::string public_key, std::uint64_t chunk) {
  for (const std::size_t r : rows) {
    if (r >= train.size()) return Error{"a training row beyond the data"};
  }
  auto net = NeuralNet::Create(config.arch, 0);
  if (!net.ok()) return Error{net.error()};
  if (Status fits = net->CheckInput(train); !fits.ok()) return Error{fits.error()};
  LdpFlTaskSpec spec;
  spec.id = std::move(id);
  spec.config = config;
  spec.config.clients = users;
  spec.users = users;
  const InputMoments m = InputMomentsOf(train, rows);
  spec.input_mean = m.mean;
  spec.input_sd = m.sd;
  spec.chunk = chunk;
  spec.public_key = std::move(public_key);
  spec.layer_sizes = net->layer_sizes();
  spec.classes = train.class_names;
  if (IsTorchScriptFile(config.arch)) {
    FEDLDP_ASSIGN_OR_RETURN(spec.model, net_internal::ReadFile(config.arch));
  }
  if (Status e = spec.Check(); !e.ok()) return Error{e.error()};
  return spec;
}

Result<std::string> ModelFileOf(std::string_view model) {
  unsigned char hash[16];
  crypto_generichash(hash, sizeof hash, reinterpret_cast<const unsigned char*>(model.data()),
                     model.size(), nullptr, 0);
  char hex[2 * sizeof hash + 1];
  sodium_bin2hex(hex, sizeof hex, hash, sizeof hash);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fedldp-model-" + std::string(hex) + ".pt"))
          .string();
  if (auto there = net_internal::ReadFile(path); there.ok() && *there == model) return path;
  FEDLDP_RETURN_IF_ERROR(WriteFileAtomically(path, model, 0600, /*overwrite=*/true));
  return path;
}

Result<LdpFlParticipant> LdpFlParticipant::Create(const LdpFlTaskSpec& task, const Dataset& data,
                                                  std::vector<std::vector<std::size_t>> shards,
                                                  PrivacyLedger& ledger) {
  if (Status e = task.Check(); !e.ok()) return Error{e.error()};
  if (Status e = CheckAnnouncedDeployment(task.deployment); !e.ok()) return Error{e.error()};
  auto made = NeuralNet::Create(task.config.arch, 0);  // the server's weights replace these
  if (!made.ok()) return Error{made.error()};
  NeuralNet net = std::move(made).value();
  if (net.layer_sizes() != task.layer_sizes) {
    return Error{"the announced model's layers do not match architecture " + task.config.arch};
  }
  FEDLDP_ASSIGN_OR_RETURN(TaskData labelled, TaskData::Of(data, task.classes));
  if (Status fits = net.CheckInput(labelled.get()); !fits.ok()) {
    return Error{"the local data does not fit the task's network: " + fits.error()};
  }
  for (const auto& shard : shards) {
    if (shard.empty()) return Error{"a user with no local rows"};
    for (const std::size_t row : shard) {
      if (row >= data.size()) return Error{"a local row beyond the data"};
    }
  }
  net.SetInputStandardization(task.input_mean, task.input_sd);
  FEDLDP_ASSIGN_OR_RETURN(auto method, net_internal::LdpFlMethod::Make(task));
  return LdpFlParticipant(task, std::move(labelled), std::move(shards), ledger, std::move(net),
                          std::move(method));
}

LdpFlParticipant::LdpFlParticipant(const LdpFlTaskSpec& task, TaskData data,
                                   std::vector<std::vector<std::size_t>> shards,
                                   PrivacyLedger& ledger, NeuralNet net,
                                   std::unique_ptr<net_internal::LdpFlMethod> method)
    : task_(task),
      data_(std::move(data)),
      shards_(std::move(shards)),
      ledger_(&ledger),
      net_(std::move(net)),
      method_(std::move(method)),
      ledger_task_(LedgerTaskKey(task.id, task.deployment)),
      rng_(std::make_unique<SecureRng>()) {}

LdpFlParticipant::LdpFlParticipant(LdpFlParticipant&&) noexcept = default;
LdpFlParticipant& LdpFlParticipant::operator=(LdpFlParticipant&&) noexcept = default;
LdpFlParticipant::~LdpFlParticipant() = default;

double LdpFlParticipant::report_epsilon() const { return method_->report_epsilon(); }
std::string LdpFlParticipant::Mechanism() const { return method_->Mechanism(); }
std::string LdpFlParticipant::cost_name() const { return method_->cost_name(); }

std::string LdpFlParticipant::Account(std::size_t local) const {
  // Named by the data, not by the server's user number.
  return "rows-" + std::to_string(shards_[local].front()) + "+" +
         std::to_string(shards_[local].size());
}

std::vector<std::uint64_t> LdpFlParticipant::Exhausted() const {
  std::vector<std::uint64_t> out;
  const double cost = report_epsilon();
  for (std::size_t local = 0; local < shards_.size(); ++local) {
    if (ledger_->remaining(Account(local)) < cost * (1 - 1e-12)) out.push_back(first_user_ + local);
  }
  return out;
}

LdpFlParticipant::Answer LdpFlParticipant::Respond(std::uint64_t round,
                                                   std::span<const double> weights,
                                                   std::span<const LayerRange> ranges,
                                                   std::span<const std::uint64_t> users) {
  Answer answer;
  const std::size_t d = task_.weights();
  if (weights.size() != d) {
    answer.refusals.push_back("the server sent " + std::to_string(weights.size()) +
                              " weights for a model of " + std::to_string(d));
    return answer;
  }
  // Any announced range keeps every weight eps-LDP; a malformed one is refused.
  if (Status opened = method_->Open(round, ranges); !opened.ok()) {
    answer.refusals.push_back("the server announced unusable ranges: " + opened.error());
    return answer;
  }
  const std::vector<float> global(weights.begin(), weights.end());
  // A user's report: the simulator's client, local training from the global
  // model, then the task's method (noise from SecureRng); sealed in pieces,
  // packed for the ledger.
  const auto draw = [&](std::size_t local) {
    net_.SetWeights(global);
    net_.Train(data_.get(), shards_[local], task_.config.local_epochs, task_.config.batch,
               task_.config.learning_rate, (*rng_)());
    std::vector<std::string> pieces = method_->Report(net_.GetWeights(), global, *rng_);
    for (std::string& piece : pieces) piece = Seal(piece, task_.public_key);
    return PackPieces(pieces);
  };
  const net_internal::LedgerRound ledger_round{
      *ledger_,    ledger_task_, round,          report_epsilon(),
      cost_name(), first_user_,  shards_.size(), [&](std::size_t local) { return Account(local); }};
  net_internal::AnswerFromLedger(ledger_round, users, UnpackPieces, draw, answer);
  return answer;
}

}  // namespace fedldp
