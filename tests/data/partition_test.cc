// Partitions of rows among clients: IID shards, a Dirichlet label skew and
// label shards, as the simulators and the Python module draw them.
#include "fedldp/data/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "testing/golden.h"

namespace fedldp {
namespace {

// 600 rows of 4 classes, labels in blocks.
Dataset Labelled(std::size_t n = 600, int classes = 4) {
  Dataset d;
  d.dimension = 1;
  d.classes = classes;
  for (std::size_t i = 0; i < n; ++i) {
    d.features.push_back(static_cast<float>(i));
    d.labels.push_back(static_cast<int>(i * static_cast<std::size_t>(classes) / n));
  }
  return d;
}

std::uint64_t HashOf(const std::vector<std::vector<std::size_t>>& shards) {
  std::string text;
  for (const auto& s : shards) {
    for (const std::size_t r : s) text += std::to_string(r) + ",";
    text += ";";
  }
  return testing::Fnv1a(text);
}

// The draws, recorded: a refactor that changes a client's rows for a seed
// fails here.
TEST(PartitionRows, SeededDrawsAreRecorded) {
  const Dataset d = Labelled();
  testing::ExpectRecorded("iid", HashOf(PartitionRows(d, {}, 7, {}, 3).value()),
                          0x4cad269c3559e305ULL);
  testing::ExpectRecorded("dirichlet",
                          HashOf(PartitionRows(d, {}, 7, {.dirichlet_alpha = 0.3}, 3).value()),
                          0xf6bcf12a79ab7c82ULL);
}

// Label shards: k shards of the label-sorted rows each, disjoint, equal,
// each client with few labels (IID clients hold all 4); a wrong shard size
// or an unsorted order fails here.
TEST(PartitionRows, LabelShardsGiveEachClientFewLabels) {
  const Dataset d = Labelled();
  const auto shards = PartitionRows(d, {}, 10, {.label_shards = 2}, 5).value();
  std::set<std::size_t> seen;
  double labels = 0;
  for (const auto& s : shards) {
    EXPECT_EQ(s.size(), 2u * (600 / 20));
    seen.insert(s.begin(), s.end());
    std::set<int> of;
    for (const std::size_t r : s) of.insert(d.labels[r]);
    EXPECT_LE(of.size(), 3u);  // two shards, one of them may straddle two labels
    labels += static_cast<double>(of.size());
  }
  EXPECT_EQ(seen.size(), 600u);  // disjoint, and 600 = 20 x 30: none left out
  EXPECT_LT(labels / 10, 2.5);
  EXPECT_EQ(shards, PartitionRows(d, {}, 10, {.label_shards = 2}, 5).value());
  EXPECT_NE(shards, PartitionRows(d, {}, 10, {.label_shards = 2}, 6).value());
  const auto iid = PartitionRows(d, {}, 10, {}, 5).value();
  std::set<int> first;
  for (const std::size_t r : iid[0]) first.insert(d.labels[r]);
  EXPECT_EQ(first.size(), 4u);
  EXPECT_FALSE(PartitionRows(d, {}, 400, {.label_shards = 2}, 5).ok());  // 800 shards > 600 rows
  EXPECT_FALSE(PartitionRows(d, {}, 10, {.dirichlet_alpha = 0.5, .label_shards = 2}, 5).ok());
  EXPECT_EQ(Partition{.label_shards = 2}.Describe(), "2 label shards each");
  EXPECT_EQ(Partition{.dirichlet_alpha = 0.5}.Describe(), "Dirichlet(0.5) label skew");
  EXPECT_EQ(Partition{}.Describe(), "equal IID shards");
}

// Validation rows: a seeded uniform subset, the rest to fit on, each in the
// data's order; First keeps a prefix.
TEST(HoldOut, ValidationRowsAreAUniformSubsetAndTheRestFits) {
  const Dataset d = Labelled();  // feature = row number
  const HeldOut h = HoldOut(d, 100, 7).value();
  ASSERT_EQ(h.validation.size(), 100u);
  ASSERT_EQ(h.fit.size(), 500u);
  std::set<float> rows(h.fit.features.begin(), h.fit.features.end());
  rows.insert(h.validation.features.begin(), h.validation.features.end());
  EXPECT_EQ(rows.size(), 600u);  // disjoint, none lost
  EXPECT_TRUE(std::is_sorted(h.fit.features.begin(), h.fit.features.end()));
  EXPECT_TRUE(std::is_sorted(h.validation.features.begin(), h.validation.features.end()));
  for (std::size_t i = 0; i < h.fit.size(); ++i) {  // each row keeps its label
    EXPECT_EQ(h.fit.labels[i], d.labels[static_cast<std::size_t>(h.fit.features[i])]);
  }
  EXPECT_EQ(HoldOut(d, 100, 7).value().validation.features, h.validation.features);
  EXPECT_NE(HoldOut(d, 100, 8).value().validation.features, h.validation.features);
  // Uniform: the held rows' mean row number over 200 seeds is 299.5 with sd
  // 173.2 / sqrt(100 * 200) * sqrt(500 / 599) = 1.12; a prefix (49.5) or a
  // biased draw is far outside 5 sd.
  double mean = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const HeldOut drawn = HoldOut(d, 100, seed).value();
    for (const float r : drawn.validation.features) mean += r;
  }
  EXPECT_NEAR(mean / (100 * 200), 299.5, 5 * 1.12);
  EXPECT_EQ(HoldOut(d, 600, 7).error(),
            "validation rows (600) must be at least 1 and fewer than the training rows (600)");
  EXPECT_FALSE(HoldOut(d, 0, 7).ok());
  EXPECT_EQ(d.First(3).features, (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(d.First(0).size(), 600u);
  EXPECT_EQ(d.First(601).size(), 600u);
  Dataset moved = d;
  EXPECT_EQ(std::move(moved).First(2).features, (std::vector<float>{0, 1}));
  EXPECT_EQ(moved.size(), 600u);  // a prefix leaves the rows where they were
  EXPECT_EQ(std::move(moved).First(0).size(), 600u);
}

}  // namespace
}  // namespace fedldp
