// The small synthetic binary task the FedSel tests train on (d = 20).
#ifndef FEDLDP_TESTS_TESTING_SYNTHETIC_H_
#define FEDLDP_TESTS_TESTING_SYNTHETIC_H_

#include "fedldp/data/synthetic.h"

namespace fedldp::testing {

inline Dataset SmallSynthetic(std::size_t rows) {
  SyntheticOptions o;
  o.rows = rows;
  o.dimension = 20;
  o.c1 = 0.1;
  o.c2 = 0.6;
  return MakeSynthetic(o).value();
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_SYNTHETIC_H_
