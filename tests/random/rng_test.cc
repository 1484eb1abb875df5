#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "fedldp/audit/stat_checks.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/secure_rng.h"

namespace fedldp {
namespace {

// 64 buckets of the top 6 bits must be uniform.
audit::Verdict TopBitsUniform(Rng& rng, std::size_t n) {
  std::vector<std::uint64_t> counts(64, 0);
  for (std::size_t i = 0; i < n; ++i) ++counts[rng() >> 58];
  std::vector<double> p(64, 1.0 / 64);
  return audit::CheckChiSquare(counts, p);
}

TEST(CounterRng, SameSeedAndStreamSameWords) {
  CounterRng a(123, 4), b(123, 4);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a(), b());
}

TEST(CounterRng, FillEqualsRepeatedDraws) {
  CounterRng a(9, 1), b(9, 1);
  std::vector<std::uint64_t> block(1000);
  a();
  a.Fill(block);
  b();
  for (auto w : block) ASSERT_EQ(w, b());
  EXPECT_EQ(a.position(), b.position());
}

TEST(CounterRng, SeekJumpsAnywhere) {
  CounterRng a(5), b(5);
  for (int i = 0; i < 777; ++i) a();
  b.Seek(777);
  EXPECT_EQ(a(), b());
}

TEST(CounterRng, StreamsAndSeedsDiffer) {
  // Neighbouring seeds and streams must not give shifted copies of one
  // sequence: no word of one stream's first 4096 appears in another's.
  std::vector<std::vector<std::uint64_t>> streams;
  for (std::uint64_t seed : {0, 1}) {
    for (std::uint64_t stream : {0, 1, 2}) {
      CounterRng r(seed, stream);
      std::vector<std::uint64_t> w(4096);
      r.Fill(w);
      std::sort(w.begin(), w.end());
      streams.push_back(w);
    }
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    for (std::size_t j = i + 1; j < streams.size(); ++j) {
      std::vector<std::uint64_t> common;
      std::set_intersection(streams[i].begin(), streams[i].end(), streams[j].begin(),
                            streams[j].end(), std::back_inserter(common));
      EXPECT_TRUE(common.empty()) << i << " " << j;
    }
  }
}

TEST(CounterRng, UniformAndUncorrelatedAcrossStreams) {
  CounterRng a(1, 0);
  const auto v = TopBitsUniform(a, 1 << 20);
  EXPECT_TRUE(v.pass) << v.reason;
  // Correlation of uniforms from streams 0 and 1 at the same positions.
  CounterRng s0(1, 0), s1(1, 1);
  const int n = 1 << 20;
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += (Uniform01(s0) - 0.5) * (Uniform01(s1) - 0.5);
  // Each product has variance 1/144: 5 standard errors.
  EXPECT_LT(std::fabs(sum / n), 5 * std::sqrt(1.0 / 144 / n));
}

TEST(CounterRng, PerClientStreamsDoNotDependOnThreads) {
  // Each client's words depend on (seed, client) only, whichever thread draws them.
  const int clients = 64;
  std::vector<std::uint64_t> sequential(clients), parallel(clients);
  for (int c = 0; c < clients; ++c) {
    CounterRng r(77, c);
    for (int i = 0; i < 100; ++i) sequential[c] ^= r();
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int c = t; c < clients; c += 3) {
        CounterRng r(77, c);
        for (int i = 0; i < 100; ++i) parallel[c] ^= r();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(sequential, parallel);
}

TEST(SecureRng, UniformAndNeverRepeats) {
  SecureRng a, b;
  const auto v = TopBitsUniform(a, 1 << 18);
  EXPECT_TRUE(v.pass) << v.reason;
  std::vector<std::uint64_t> x(1000), y(1000);
  a.Fill(x);
  b.Fill(y);
  EXPECT_NE(x, y);
  std::vector<std::uint64_t> big(5000);  // the direct-keystream path
  a.Fill(big);
  std::sort(big.begin(), big.end());
  EXPECT_EQ(std::adjacent_find(big.begin(), big.end()), big.end());
  // Small fills, one word and blocks of 64 and 100, across the buffer's
  // refills: no word given twice (none left behind to be given again),
  // none zero (a wiped word given out), and their top bits uniform.
  std::vector<std::uint64_t> words;
  for (int round = 0; round < 40; ++round) {
    for (const std::size_t size : {std::size_t{1}, std::size_t{64}, std::size_t{100}}) {
      std::vector<std::uint64_t> part(size);
      a.Fill(part);
      words.insert(words.end(), part.begin(), part.end());
    }
  }
  EXPECT_EQ(std::count(words.begin(), words.end(), 0u), 0);
  std::sort(words.begin(), words.end());
  EXPECT_EQ(std::adjacent_find(words.begin(), words.end()), words.end());
  class Fills final : public Rng {  // a's words through Fill(64), one at a time
   public:
    explicit Fills(SecureRng& r) : r_(r) {}
    result_type operator()() override {
      if (next_ == block_.size()) r_.Fill(block_), next_ = 0;
      return block_[next_++];
    }

   private:
    SecureRng& r_;
    std::array<std::uint64_t, 64> block_{};
    std::size_t next_ = 64;
  };
  Fills fills(a);
  const auto f = TopBitsUniform(fills, 1 << 18);
  EXPECT_TRUE(f.pass) << f.reason;
}

TEST(Distributions, UniformIndexIsExactlyUniform) {
  CounterRng r(3);
  std::vector<std::uint64_t> counts(7, 0);
  for (int i = 0; i < 700000; ++i) ++counts[UniformIndex(r, 7)];
  std::vector<double> p(7, 1.0 / 7);
  const auto v = audit::CheckChiSquare(counts, p);
  EXPECT_TRUE(v.pass) << v.reason;
}

TEST(Distributions, StandardNormalMoments) {
  CounterRng r(5);
  const int n = 400000;
  std::vector<double> v(n);
  for (auto& x : v) x = StandardNormal(r);
  const auto m = audit::SampleMoments(v);
  EXPECT_TRUE(audit::CheckMean(m, 0, 1).pass);
  EXPECT_TRUE(audit::CheckVariance(m, 1, 3).pass);  // N(0, 1): mu4 = 3
}

}  // namespace
}  // namespace fedldp
