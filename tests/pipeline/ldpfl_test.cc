#include "fedldp/pipeline/ldpfl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/random/counter_rng.h"

namespace fedldp {
namespace {

// Three layers of sizes that straddle word boundaries.
LdpFlRandomizer Make(double eps = 2) {
  return LdpFlRandomizer::Create(eps, {70, 5, 130}, {{0, 0.075}, {0.01, 0.02}, {-0.1, 0.3}})
      .value();
}

std::vector<float> Weights(std::size_t d, float scale = 0.1f) {
  std::vector<float> w(d);
  for (std::size_t i = 0; i < d; ++i) w[i] = scale * std::sin(0.7f * static_cast<float>(i));
  return w;
}

TEST(LdpFlRandomizer, RejectsBadShapesAndRanges) {
  EXPECT_FALSE(LdpFlRandomizer::Create(1, {}, {}).ok());
  EXPECT_FALSE(LdpFlRandomizer::Create(1, {3}, {}).ok());
  EXPECT_FALSE(LdpFlRandomizer::Create(1, {0}, {{0, 1}}).ok());
  EXPECT_FALSE(LdpFlRandomizer::Create(1, {3}, {{0, 0}}).ok());
  EXPECT_FALSE(LdpFlRandomizer::Create(0, {3}, {{0, 1}}).ok());
}

TEST(LdpFlRandomizer, EachBitIsTheLayersTwoPointDrawBitForBit) {
  const auto r = Make();
  const auto w = Weights(r.weights());
  CounterRng a(5, 1), b(5, 1);
  const auto report = r.Randomize(w, a);
  EXPECT_TRUE(r.Check(report).ok());
  // The same draws through the float path, layer by layer.
  std::size_t offset = 0;
  for (std::size_t l = 0; l < r.layer_sizes().size(); ++l) {
    const std::size_t n = r.layer_sizes()[l];
    std::vector<float> dense(n);
    r.mechanism(l).PerturbDense(std::span(w).subspan(offset, n), dense, b);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(static_cast<float>(r.Decode(l, report.Bit(offset + i))), dense[i])
          << "layer " << l << " weight " << i;
    }
    offset += n;
  }
}

TEST(LdpFlRandomizer, ReportIsOneBitPerWeightPlusTheRanges) {
  const auto r = Make();
  CounterRng rng(1);
  const auto report = r.Randomize(Weights(r.weights()), rng);
  EXPECT_EQ(report.bits.size(), (205u + 63) / 64);
  EXPECT_EQ(report.EncodedBytes(), 3u * 16 + (205 + 7) / 8);
  EXPECT_EQ(report.Float32Bytes(), 4u * 205);
}

TEST(LdpFlRandomizer, ChecksRejectWhatTheRoundDidNotAnnounce) {
  const auto r = Make();
  CounterRng rng(1);
  auto report = r.Randomize(Weights(r.weights()), rng);
  auto other = report;
  other.ranges[1].radius = 0.03;
  EXPECT_NE(r.Check(other).error().find("ranges"), std::string::npos);
  other = report;
  other.weights = 204;
  EXPECT_FALSE(r.Check(other).ok());
  other = report;
  other.bits.back() |= std::uint64_t{1} << 63;  // weight 255 does not exist
  EXPECT_NE(r.Check(other).error().find("beyond"), std::string::npos);
  other = report;
  other.bits.pop_back();
  EXPECT_FALSE(r.Check(other).ok());
}

TEST(LdpFlAggregator, MeanIsUnbiasedWithTheClosedFormVariance) {
  // n reports of the same model: each weight's mean is within 5 standard
  // errors (from the exact variance) of the exact mean of the clipped weight.
  const auto r = Make(1);
  const auto w = Weights(r.weights(), 0.2f);  // some weights outside the ranges
  LdpFlAggregator agg(r);
  constexpr int kReports = 4000;
  for (int c = 0; c < kReports; ++c) {
    CounterRng rng(11, static_cast<std::uint64_t>(c));
    ASSERT_TRUE(agg.Add(r.Randomize(w, rng)).ok());
  }
  const auto mean = agg.Mean();
  std::size_t i = 0;
  for (std::size_t l = 0; l < r.layer_sizes().size(); ++l) {
    const auto& m = r.mechanism(l);
    for (std::size_t end = i + r.layer_sizes()[l]; i < end; ++i) {
      const double se = std::sqrt(m.Variance(w[i]) / kReports);
      ASSERT_NEAR(mean[i], m.Mean(w[i]), 5 * se + 1e-6) << "weight " << i;
    }
  }
}

TEST(ParameterShuffler, ModelIsBitIdenticalWithOrWithoutShuffling) {
  const auto r = Make();
  for (const auto schedule : {ShuffleSchedule::kPermutation, ShuffleSchedule::kRandomDelay}) {
    LdpFlAggregator direct(r), shuffled(r);
    ParameterShuffler shuffler(r, schedule);
    for (std::uint64_t c = 0; c < 37; ++c) {
      CounterRng rng(3, c);
      const auto report = r.Randomize(Weights(r.weights(), 0.01f * c), rng);
      ASSERT_TRUE(direct.Add(report).ok());
      ASSERT_TRUE(shuffler.Submit(report).ok());
    }
    CounterRng shuffle_rng(99);
    const auto round = shuffler.Release(shuffle_rng);
    EXPECT_EQ(shuffler.reports(), 0u);  // nothing kept after release
    ASSERT_TRUE(shuffled.AddShuffled(round).ok());
    EXPECT_EQ(direct.Mean(), shuffled.Mean());
    EXPECT_EQ(shuffled.count(), 37u);
  }
}

TEST(ParameterShuffler, ReleaseOrderIsUniformAndIndependentOfArrival) {
  // Client 0 reports all ones, the others all zeros: the position of the one
  // in each parameter's column must be uniform on 0..n-1 (chi-square), for
  // both schedules.
  const auto r = LdpFlRandomizer::Create(1, {6000}, {{0, 1}}).value();
  constexpr std::size_t kClients = 8;
  for (const auto schedule : {ShuffleSchedule::kPermutation, ShuffleSchedule::kRandomDelay}) {
    ParameterShuffler shuffler(r, schedule);
    for (std::size_t c = 0; c < kClients; ++c) {
      LdpFlReport report;
      report.ranges = r.ranges();
      report.weights = r.weights();
      report.bits.assign((r.weights() + 63) / 64, 0);
      if (c == 0) {
        for (std::size_t i = 0; i < r.weights(); ++i) report.bits[i / 64] |= 1ull << (i % 64);
      }
      ASSERT_TRUE(shuffler.Submit(report).ok());
    }
    CounterRng rng(17);
    const auto round = shuffler.Release(rng);
    std::vector<std::uint64_t> position(kClients, 0);
    for (std::size_t j = 0; j < round.weights; ++j) {
      std::size_t ones = 0;
      for (std::size_t k = 0; k < kClients; ++k) {
        if (round.Bit(j, k)) ++position[k], ++ones;
      }
      ASSERT_EQ(ones, 1u);
    }
    const std::vector<double> p(kClients, 1.0 / kClients);
    const auto v = audit::CheckChiSquare(position, p);
    EXPECT_TRUE(v.pass) << v.reason;
  }
}

TEST(LdpFlAggregator, PiecesOfEveryReportGiveTheWholeReportsMeanBitForBit) {
  const auto r = Make();
  const auto chunks = ChunkModel(r.layer_sizes(), 32);
  // 70 = 32 + 32 + 6, 5, 130 = 32 * 4 + 2: no chunk crosses a layer.
  ASSERT_EQ(chunks.size(), 3u + 1u + 5u);
  EXPECT_EQ(chunks[3].layer, 1u);
  EXPECT_EQ(chunks[3].begin, 70u);
  EXPECT_EQ(chunks.back().end, r.weights());
  LdpFlAggregator whole(r), pieces(r);
  const auto w = Weights(r.weights());
  for (int c = 0; c < 25; ++c) {
    CounterRng rng(11, static_cast<std::uint64_t>(c));
    const auto report = r.Randomize(w, rng);
    ASSERT_TRUE(whole.Add(report).ok());
    for (const auto& chunk : chunks)
      ASSERT_TRUE(pieces.AddPiece(chunk, PieceOf(report, chunk)).ok());
  }
  const auto a = whole.Mean(), b = pieces.Mean();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
}

TEST(LdpFlAggregator, RefusesAPieceThatDoesNotFitItsChunk) {
  const auto r = Make();
  const auto chunks = ChunkModel(r.layer_sizes(), 64);
  CounterRng rng(3, 4);
  const auto report = r.Randomize(Weights(r.weights()), rng);
  LdpFlAggregator a(r);
  auto piece = PieceOf(report, chunks[0]);
  EXPECT_FALSE(a.AddPiece(chunks[1], piece).ok());  // 64 weights into a chunk of 6
  piece.ranges[0].radius *= 2;
  EXPECT_FALSE(a.AddPiece(chunks[0], piece).ok());  // another range
  auto tail = PieceOf(report, chunks[1]);           // 6 weights: padding must stay zero
  tail.bits[0] |= std::uint64_t{1} << 10;
  EXPECT_FALSE(a.AddPiece(chunks[1], tail).ok());
  EXPECT_FALSE(a.AddPiece({0, 60, 80}, PieceOf(report, {0, 60, 80})).ok());  // across layers
  EXPECT_EQ(a.rejected(), 4u);
  EXPECT_TRUE(a.Mean().empty());
  // One good piece: its weights get a mean, the others none (NaN).
  ASSERT_TRUE(a.AddPiece(chunks[1], PieceOf(report, chunks[1])).ok());
  const auto mean = a.Mean();
  EXPECT_TRUE(std::isnan(mean[0]));
  EXPECT_FALSE(std::isnan(mean[64]));
}

TEST(ParameterShuffler, RejectsReportsOfAnotherRound) {
  const auto r = Make();
  ParameterShuffler shuffler(r);
  CounterRng rng(1);
  auto report = r.Randomize(Weights(r.weights()), rng);
  report.ranges[0].center = 0.5;
  EXPECT_FALSE(shuffler.Submit(report).ok());
  EXPECT_EQ(shuffler.reports(), 0u);
  LdpFlAggregator agg(r);
  EXPECT_FALSE(agg.Add(report).ok());
  EXPECT_EQ(agg.rejected(), 1u);
  EXPECT_TRUE(agg.Mean().empty());
}

}  // namespace
}  // namespace fedldp
