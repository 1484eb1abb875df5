// Seeded FedSel runs, recorded: every variant's model, bit for bit, as it
// was before issue 40's redesign (one randomizer/aggregator pair, registries
// instead of name lists). A refactor must leave every line of the table as
// it is; a change of law or draw order shows here first and must be argued
// (and the table re-recorded) in its own commit.
//
// Each row hashes a run's weights (FNV-1a over their bytes) with its counts
// (testing/golden.h; FEDLDP_GOLDEN_PRINT=1 prints the table for the code as
// it is).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fedldp/fl/fedsel.h"
#include "testing/golden.h"
#include "testing/synthetic.h"

namespace fedldp {
namespace {

using testing::Fnv1a;

struct Golden {
  const char* run;  // a variant, "sampled " or "shuffled " before it
  std::uint64_t weights;
  std::size_t updates;
};

// Recorded at d22dc6a (release and ASan builds alike); re-recorded when
// FedSel's tail average became IterateAverage's running mean (the last
// bits of every row; the proof is in that commit).
constexpr Golden kTable[] = {
#include "fedsel_golden_table.inc"
};

FedSelRun Train(const std::string& run) {
  FedSelConfig config;
  std::string name = run;
  config.sample_clients = name.starts_with("sampled ");
  if (config.sample_clients) name = name.substr(8);
  config.shuffle = config.sample_clients || name.starts_with("shuffled ");
  if (name.starts_with("shuffled ")) name = name.substr(9);
  config.variant = ParseFedSelVariant(name).value();
  config.epochs = 2;
  config.epsilon = 4;
  config.tail_average = 0.25;
  return TrainFedSel(config, testing::SmallSynthetic(1200), {}, 7).value();
}

TEST(FedSelGolden, EveryVariantTrainsTheRecordedModel) {
  const bool print = testing::PrintingGolden();
  for (const Golden& g : kTable) {
    const FedSelRun r = Train(g.run);
    if (print) {
      std::printf("    {\"%s\", 0x%016llxULL, %zu},\n", g.run,
                  static_cast<unsigned long long>(Fnv1a(r.weights)), r.updates);
      continue;
    }
    EXPECT_EQ(Fnv1a(r.weights), g.weights) << g.run;
    EXPECT_EQ(r.updates, g.updates) << g.run;
  }
}

// The hash sees the last bit of one weight: a check that cannot miss a
// changed model.
TEST(FedSelGolden, TheHashSeesOneBit) {
  std::vector<double> w = {0.5, -1.25, 3.0};
  const std::uint64_t h = Fnv1a(w);
  w[1] = std::nextafter(w[1], 0.0);
  EXPECT_NE(Fnv1a(w), h);
}

}  // namespace
}  // namespace fedldp
