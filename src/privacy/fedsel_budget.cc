#include "fedldp/privacy/fedsel_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fedldp/base/limits.h"

namespace fedldp {

Status CheckFedSelEpsilon(double epsilon, int epochs) {
  FEDLDP_RETURN_IF_ERROR(CheckPositive(epsilon, "epsilon"));
  FEDLDP_RETURN_IF_ERROR(CheckCount(kEpochs, epochs));
  return CheckEpsilon(epsilon / epochs, "epsilon per epoch");
}

Result<FedSelBudget> MakeFedSelBudget(double epsilon, int epochs, double mu, bool control) {
  FEDLDP_RETURN_IF_ERROR(CheckFedSelEpsilon(epsilon, epochs));
  if (!(mu >= 0 && mu < 1)) return Error{"mu must be in [0, 1), got " + std::to_string(mu)};
  FedSelBudget b;
  b.epsilon = epsilon;
  b.epochs = epochs;
  b.mu = mu;
  b.control = control;
  b.epoch_epsilon = epsilon / epochs;
  b.select_epsilon = mu * b.epoch_epsilon;
  b.value_epsilon = control ? b.epoch_epsilon : b.epoch_epsilon - b.select_epsilon;
  return b;
}

double HyperParameterFreeMu(double epoch_epsilon, std::size_t d, std::size_t batch, double theta) {
  const double dd = static_cast<double>(d);
  const double floor_value =
      std::sqrt(dd * std::log(std::max(dd, 2.0)) / static_cast<double>(batch));
  return std::clamp(1 - floor_value / epoch_epsilon, 0.0, theta);
}

std::string FedSelBudget::Statement() const {
  char text[256];
  std::snprintf(text, sizeof text,
                "eps per epoch %.6g (selection eps1 %.6g, value eps2 %.6g%s), %d epoch%s, "
                "total %.6g per client",
                select_epsilon + value_epsilon, select_epsilon, value_epsilon,
                control ? ", control: eps1 on top" : "", epochs, epochs == 1 ? "" : "s",
                TotalPerClient());
  return text;
}

}  // namespace fedldp
