// Small synthetic tasks: the binary one the FedSel tests train on (d = 20),
// and MNIST-shaped stripes for the LDP-FL tests.
#ifndef FEDLDP_TESTS_TESTING_SYNTHETIC_H_
#define FEDLDP_TESTS_TESTING_SYNTHETIC_H_

#include "fedldp/data/synthetic.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp::testing {

inline Dataset SmallSynthetic(std::size_t rows) {
  SyntheticOptions o;
  o.rows = rows;
  o.dimension = 20;
  o.c1 = 0.1;
  o.c2 = 0.6;
  return MakeSynthetic(o).value();
}

// Tiny MNIST-shaped data: 10 classes, the class drawn as a bright row.
inline Dataset Stripes(std::size_t rows, std::uint64_t seed) {
  Dataset d;
  d.dimension = 784;
  d.classes = 10;
  CounterRng rng(seed);
  std::vector<float> x(784);
  for (std::size_t i = 0; i < rows; ++i) {
    const int y = static_cast<int>(i % 10);
    for (std::size_t j = 0; j < 784; ++j) {
      x[j] = 0.2f * static_cast<float>(Uniform01(rng)) +
             (j / 28 == static_cast<std::size_t>(2 * y + 4) ? 0.8f : 0.0f);
    }
    d.Append(x, y);
  }
  return d;
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_SYNTHETIC_H_
