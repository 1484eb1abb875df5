// Uses the installed headers and libraries: a mechanism, a vector
// randomizer and the accountant, seeded, printing what a test can check.
#include <cstdio>
#include <vector>

#include "fedldp/base/version.h"
#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/vector/vector_randomizer.h"

int main() {
  fedldp::CounterRng rng(1);
  auto pm = fedldp::MakeValueMechanism("pm", 1.0);
  if (!pm.ok()) return 1;
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) sum += (*pm)->Sample(0.5, rng);
  fedldp::VectorRandomizerConfig config;
  config.dimension = 8;
  auto privunitg = fedldp::MakeVectorRandomizer(config);
  if (!privunitg.ok()) return 1;
  const std::vector<double> report = (*privunitg)->Randomize(std::vector<double>(8, 0.1), rng);
  fedldp::RunPrivacyConfig run;
  run.local_epsilon = 2;
  run.rounds = 3;
  auto p = fedldp::AccountRun(run);
  if (!p.ok()) return 1;
  std::printf("fedldp %s: pm mean %.2f, report of %zu, total eps %g\n",
              std::string(fedldp::Version()).c_str(), sum / n, report.size(), p->total.epsilon);
  return 0;
}
