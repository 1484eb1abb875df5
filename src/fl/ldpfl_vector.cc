// LDP-FL's vector randomizer and its client step, apart from the Torch-bound
// training (ldpfl.cc): the deployment's coordinator and client need them, and
// the service fuzzer builds that coordinator without Torch.
#include "fedldp/fl/ldpfl.h"

namespace fedldp {

std::string LdpFlRandomizerName(const LdpFlConfig& config) {
  return config.vector ? std::string(VectorMechanismName(*config.vector)) : "twopoint";
}

Result<std::optional<VectorMechanism>> ParseLdpFlRandomizer(std::string_view name) {
  if (name == "twopoint") return std::optional<VectorMechanism>();
  auto mechanism = ParseVectorMechanism(name);
  if (!mechanism.ok()) {
    std::string names = "twopoint";
    for (const auto& n : VectorMechanismNames()) names += ", " + n;
    return Error{"unknown randomizer '" + std::string(name) + "': one of " + names,
                 ErrorCode::kInvalidArgument};
  }
  return std::optional<VectorMechanism>(*mechanism);
}

Result<std::unique_ptr<VectorRandomizer>> LdpFlVectorRandomizer(const LdpFlConfig& config,
                                                                std::size_t d,
                                                                std::uint64_t public_seed) {
  if (!config.vector) return std::unique_ptr<VectorRandomizer>();
  VectorRandomizerConfig vc;
  vc.mechanism = *config.vector;
  vc.dimension = d;
  vc.epsilon = config.epsilon;
  vc.clip = config.clip;
  const bool gaussian = vc.mechanism == VectorMechanism::kGaussian ||
                        vc.mechanism == VectorMechanism::kGaussianClassic;
  vc.delta = gaussian ? config.vector_delta : 0.0;
  vc.public_seed = public_seed;
  return MakeVectorRandomizer(vc);
}

RunPrivacyConfig LdpFlVectorRunPrivacy(const VectorRandomizer& randomizer,
                                       std::size_t reports_per_client, std::size_t per_round,
                                       bool shuffle, double delta) {
  RunPrivacyConfig account;
  account.local_epsilon = randomizer.epsilon();
  account.local_delta = randomizer.delta();
  account.rounds = reports_per_client;
  account.shuffle = shuffle && randomizer.delta() == 0;
  account.reports_per_round = account.shuffle ? per_round : 0;
  account.delta = delta;
  account.report_deviation = randomizer.deviation();
  return account;
}

std::vector<double> PrivatizeUpdate(const VectorRandomizer& randomizer,
                                    std::span<const float> local, std::span<const float> global,
                                    Rng& rng) {
  std::vector<double> update(local.size());
  for (std::size_t j = 0; j < local.size(); ++j) update[j] = local[j] - global[j];
  std::vector<double> report(update.size());
  randomizer.Randomize(update, report, rng);
  return report;
}

}  // namespace fedldp
