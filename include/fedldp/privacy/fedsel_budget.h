// FedSel's privacy budget (Algorithm 1, lines 2-3, and Sect. 5.3):
//   eps' = eps / E per epoch; eps1 = mu eps' for selection and
//   eps2 = eps' - eps1 for the value. A client takes part once per epoch, so by
//   sequential composition it spends E (eps1 + eps2) = eps in all.
//   The "-C" control variants spend eps1 on selection on top of eps' for the
//   value: eps' + eps1 per epoch and E (eps' + eps1) = (1 + mu) eps in all.
//
// Hyper-parameter-free mu (Sect. 5.3, Fig. 3(c)): the paper first gives the
// value stage at least eps2 = Omega(sqrt(d log d / m)) and spends the rest on
// selection, never more than a safe share theta = 0.2. It gives no constant;
// we take the constant 1:
//   eps2_min = sqrt(d ln d / m),
//   mu = clamp(1 - eps2_min / eps', 0, theta).
// So a large batch (many participants) or a large budget buys selection up to
// theta eps', and a small one keeps everything for the value.
#ifndef FEDLDP_PRIVACY_FEDSEL_BUDGET_H_
#define FEDLDP_PRIVACY_FEDSEL_BUDGET_H_

#include <string>

#include "fedldp/base/status.h"

namespace fedldp {

struct FedSelBudget {
  double epsilon = 0;  // the total the user asked for (per client)
  int epochs = 1;
  double mu = 0;
  bool control = false;       // "-C": eps1 spent on top of eps'
  double epoch_epsilon = 0;   // eps'
  double select_epsilon = 0;  // eps1
  double value_epsilon = 0;   // eps2
  // What each client spends over the whole run.
  double TotalPerClient() const { return epochs * (select_epsilon + value_epsilon); }
  // One line for logs and result files.
  std::string Statement() const;
};

// The total is any finite positive number (a shuffled run of 512 epochs may
// spend 512 x 3.4 locally, its central statement 3); each epoch's share is
// what the mechanisms see, and CheckEpsilon bounds it. Epochs as CheckCount.
Status CheckFedSelEpsilon(double epsilon, int epochs);
Result<FedSelBudget> MakeFedSelBudget(double epsilon, int epochs, double mu, bool control);
double HyperParameterFreeMu(double epoch_epsilon, std::size_t d, std::size_t batch,
                            double theta = 0.2);

}  // namespace fedldp

#endif  // FEDLDP_PRIVACY_FEDSEL_BUDGET_H_
