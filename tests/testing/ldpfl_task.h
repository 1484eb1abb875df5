// A small LDP-FL task for the deployment's tests: the CNN on MNIST-shaped
// rows, 2 rounds of one local epoch, eps 1 per weight over the fixed range
// (0, 0.075), updates perturbed, pieces of at most 4,096 weights sealed to
// `keys`.
#ifndef FEDLDP_TESTS_TESTING_LDPFL_TASK_H_
#define FEDLDP_TESTS_TESTING_LDPFL_TASK_H_

#include <string>

#include "fedldp/net/ldpfl_deploy.h"

namespace fedldp::testing {

inline LdpFlTaskSpec SmallCnnTask(std::string id, std::uint64_t users, const ServerKeys& keys,
                                  const NeuralNet& net) {
  LdpFlTaskSpec spec;
  spec.id = std::move(id);
  spec.config.arch = "cnn";
  spec.config.rounds = 2;
  spec.config.local_epochs = 1;
  spec.config.batch = 10;
  spec.config.epsilon = 1;
  spec.config.fixed_range = {0, 0.075};
  spec.config.perturb_updates = true;
  spec.users = users;
  spec.input_mean = 0.13;
  spec.input_sd = 0.3;
  spec.chunk = 4096;
  spec.public_key = keys.public_key;
  spec.layer_sizes = net.layer_sizes();
  return spec;
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_LDPFL_TASK_H_
