// Which vector randomizers a deployment serves, from their traits (one home
// for the rule both coordinators apply): the ledgers charge pure eps, so no
// randomizer that needs a delta; and no task announces a public seed, so no
// randomizer that shares one.
#ifndef FEDLDP_SRC_NET_SERVED_RANDOMIZER_H_
#define FEDLDP_SRC_NET_SERVED_RANDOMIZER_H_

#include <string>

#include "fedldp/base/status.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp::net_internal {

// OK, or why `what` (e.g. "variant gaussian") cannot be served.
inline Status CheckServedRandomizer(VectorMechanism m, const std::string& what) {
  if (m.traits().needs_delta) {
    return Error{what + ": the deployment's ledgers charge pure eps, and " + std::string(m.name()) +
                 "'s reports are (eps, delta)-DP"};
  }
  if (m.traits().shared_seed) {
    return Error{what + " needs a public seed that the task does not announce"};
  }
  return {};
}

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_SERVED_RANDOMIZER_H_
