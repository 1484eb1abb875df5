#include "fedldp/wire/report_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fedldp/random/counter_rng.h"
#include "fedldp/vector/seeded_privunit.h"

namespace fedldp {
namespace {

std::span<const std::uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// (Built with append: GCC 12 warns falsely on "c" + std::to_string(i).)
std::string Client(int i) {
  std::string id = "client-";
  id.append(std::to_string(i));
  return id;
}

class ReportGateTest : public ::testing::Test {
 protected:
  FedSelRandomizer fedsel_ =
      FedSelRandomizer::Create(SelectorKind::kPe, 0.5, 20, 2, ValueMechanismKind::kPiecewise, 1.5)
          .value();
  LdpFlRandomizer ldpfl_ =
      LdpFlRandomizer::Create(1.0, {5, 70, 3}, {{0, 0.1}, {0.2, 0.05}, {-1, 2}}).value();
  CounterRng rng_{3, 4};

  LdpFlReport LdpFlReportOf(float value) {
    return ldpfl_.Randomize(std::vector<float>(78, value), rng_);
  }
};

TEST_F(ReportGateTest, AcceptsWhatTheRandomizerProducedAndDecodesItExactly) {
  ReportGate gate(3, ldpfl_);
  for (int client = 0; client < 20; ++client) {
    const LdpFlReport sent = LdpFlReportOf(0.01f * static_cast<float>(client));
    const GateVerdict v = gate.Admit(Client(client), Bytes(EncodeReport(3, sent)));
    ASSERT_TRUE(v.accepted()) << v.detail;
    const auto& got = std::get<LdpFlReport>(*v.report);
    EXPECT_EQ(got.bits, sent.bits);
    EXPECT_EQ(got.ranges, sent.ranges);
    EXPECT_EQ(got.weights, sent.weights);
  }
  EXPECT_EQ(gate.accepted(), 20u);
  EXPECT_EQ(gate.rejected_total(), 0u);

  ReportGate fedsel_gate(3, fedsel_);
  std::vector<double> r(20), prev(20, 0.0);
  for (int client = 0; client < 200; ++client) {
    for (auto& x : r) x = Uniform01(rng_) * 2 - 1;
    const FedSelReport sent = fedsel_.Randomize(r, prev, 0.5, rng_);
    const GateVerdict v = fedsel_gate.Admit(Client(client), Bytes(EncodeReport(3, sent)));
    ASSERT_TRUE(v.accepted()) << v.detail;
    EXPECT_EQ(std::get<FedSelReport>(*v.report).index, sent.index);
    EXPECT_EQ(std::get<FedSelReport>(*v.report).value, sent.value);  // bit for bit
  }
}

TEST_F(ReportGateTest, LdpFlReportIsOneBitPerWeightPlusRangesAndSmallOverhead) {
  const std::string bytes = EncodeReport(1, LdpFlReportOf(0));
  // 78 weights -> 10 bytes of bits, 3 ranges of 2 doubles: the payload is
  // 58 bytes; the protobuf framing adds a few bytes per field.
  EXPECT_LE(bytes.size(), 58u + 3 * 4 + 12);
  ReportGate gate(1, ldpfl_);
  EXPECT_GE(gate.max_bytes(), bytes.size());
}

TEST_F(ReportGateTest, RejectsEachKindOfBadReportWithItsReason) {
  ReportGate gate(5, ldpfl_);
  auto expect = [&](const std::string& bytes, RejectReason reason, const std::string& client) {
    const GateVerdict v = gate.Admit(client, Bytes(bytes));
    EXPECT_FALSE(v.accepted());
    EXPECT_EQ(v.reason, reason) << ReasonName(v.reason) << ": " << v.detail;
    EXPECT_FALSE(v.detail.empty());
  };
  const LdpFlReport good = LdpFlReportOf(0);

  expect("\xff\xff\xff", RejectReason::kMalformed, "a");
  expect("", RejectReason::kMalformed, "a");  // no body
  expect(std::string(gate.max_bytes() + 1, '\0'), RejectReason::kOversized, "a");
  expect(EncodeReport(5, FedSelReport{1, 0.5}), RejectReason::kWrongProtocol, "a");
  expect(EncodeReport(4, good), RejectReason::kWrongRound, "a");

  LdpFlReport short_report = good;
  short_report.weights = 77;
  expect(EncodeReport(5, short_report), RejectReason::kMalformed, "a");
  LdpFlReport padded = good;
  padded.bits.back() |= std::uint64_t{1} << 78 % 64;  // bit 78 does not exist
  expect(EncodeReport(5, padded), RejectReason::kMalformed, "a");

  LdpFlReport nan_range = good;
  nan_range.ranges[1].radius = std::numeric_limits<double>::quiet_NaN();
  expect(EncodeReport(5, nan_range), RejectReason::kNonFinite, "a");
  LdpFlReport other_range = good;
  other_range.ranges[0].radius = 0.2;  // outputs +-0.2 B, not the announced +-0.1 B
  expect(EncodeReport(5, other_range), RejectReason::kOutOfDomain, "a");

  // Unknown fields (here field 15, a varint) are refused, not ignored.
  expect(EncodeReport(5, good) + std::string("\x78\x01", 2), RejectReason::kMalformed, "a");

  EXPECT_TRUE(gate.Admit("a", Bytes(EncodeReport(5, good))).accepted());
  expect(EncodeReport(5, LdpFlReportOf(0.05f)), RejectReason::kDuplicate, "a");
  EXPECT_TRUE(gate.Admit("b", Bytes(EncodeReport(5, good))).accepted());

  EXPECT_EQ(gate.accepted(), 2u);
  EXPECT_EQ(gate.rejected(RejectReason::kMalformed), 5u);
  EXPECT_EQ(gate.rejected(RejectReason::kOversized), 1u);
  EXPECT_EQ(gate.rejected(RejectReason::kWrongProtocol), 1u);
  EXPECT_EQ(gate.rejected(RejectReason::kWrongRound), 1u);
  EXPECT_EQ(gate.rejected(RejectReason::kNonFinite), 1u);
  EXPECT_EQ(gate.rejected(RejectReason::kOutOfDomain), 1u);
  EXPECT_EQ(gate.rejected(RejectReason::kDuplicate), 1u);
  EXPECT_EQ(gate.rejected_total(), 11u);
}

TEST_F(ReportGateTest, FedSelValuesOutsideThePiecewiseOutputsAreRejected) {
  ReportGate gate(2, fedsel_);
  const double c = fedsel_.mechanism()->output_domain().hi;  // PM's C at eps2 = 1.5
  auto admit = [&](const std::string& client, FedSelReport r) {
    return gate.Admit(client, Bytes(EncodeReport(2, r)));
  };
  EXPECT_TRUE(admit("a", {3, c}).accepted());
  EXPECT_TRUE(admit("b", {-1, 0}).accepted());  // PE's empty outcome
  EXPECT_EQ(admit("c", {-1, 0.5}).reason, RejectReason::kOutOfDomain);
  EXPECT_EQ(admit("c", {3, std::nextafter(c, 100.0)}).reason, RejectReason::kOutOfDomain);
  EXPECT_EQ(admit("c", {20, 0}).reason, RejectReason::kOutOfDomain);  // d = 20
  EXPECT_EQ(admit("c", {-2, 0}).reason, RejectReason::kOutOfDomain);
  EXPECT_EQ(admit("c", {3, std::numeric_limits<double>::infinity()}).reason,
            RejectReason::kNonFinite);
  EXPECT_EQ(admit("c", {3, std::nan("")}).reason, RejectReason::kNonFinite);
  EXPECT_TRUE(admit("c", {19, -c}).accepted());
  // Issue 39: inside [-C, C] but off PM's public grid, a value no sampler
  // draws (the old floating-point PM's outputs were such values).
  const OutputGrid grid = *fedsel_.mechanism()->Grid();
  EXPECT_TRUE(admit("d", {4, grid.Value(123)}).accepted());
  EXPECT_EQ(admit("e", {4, std::nextafter(grid.Value(123), 100.0)}).reason,
            RejectReason::kOutOfDomain);
  EXPECT_EQ(admit("e", {4, 0.5 * (grid.Value(7) + grid.Value(8))}).reason,
            RejectReason::kOutOfDomain);
}

// Randomizers with a compact report send it (privunitg-seed 16 bytes,
// fastprojunit-seed 24, fastprojunit its seed and k values); the gate
// decodes it to the very values the randomizer's own decode gives, and
// refuses bytes of another length, a projected value off PrivUnitG's grid,
// bytes in a round of randomizers that send values, and both forms at once.
TEST_F(ReportGateTest, CompactVectorReportsAreDecodedByTheRoundsRandomizer) {
  VectorRandomizerConfig config;
  config.dimension = 300;
  config.epsilon = 3;
  config.clip = 1;
  config.k = 20;
  std::vector<double> x(300);
  for (auto& v : x) v = (Uniform01(rng_) - 0.5) / 10;
  for (const char* name : {"privunitg-seed", "fastprojunit-seed", "fastprojunit"}) {
    config.mechanism = ParseVectorMechanism(name).value();
    config.k = config.mechanism.traits().takes_k ? 20 : 0;
    const auto r = MakeVectorRandomizer(config).value();
    ReportGate gate(5, *r);
    CounterRng a(11), b(11);
    const VectorReport sent = DrawVectorReport(*r, x, a);
    EXPECT_TRUE(sent.values.empty()) << name;
    EXPECT_EQ(sent.sent.size(), r->MaxSentBytes()) << name;
    const std::string bytes = EncodeReport(5, sent);
    EXPECT_LE(bytes.size(), gate.max_bytes());
    const GateVerdict v = gate.Admit("c", Bytes(bytes));
    ASSERT_TRUE(v.accepted()) << name << ": " << v.detail;
    EXPECT_EQ(std::get<VectorReport>(*v.report).values, r->Randomize(x, b)) << name;

    auto reason = [&](const VectorReport& report) {
      return gate.Admit("bad", Bytes(EncodeReport(5, report))).reason;
    };
    VectorReport cut = sent;
    cut.sent.pop_back();
    EXPECT_EQ(reason(cut), RejectReason::kMalformed) << name;
    VectorReport both = sent;
    both.values.assign(1, 0.0);
    EXPECT_EQ(reason(both), RejectReason::kMalformed) << name;
  }
  EXPECT_EQ(std::string(kSeedReportBytes, 'a').size(), 16u);
  // fastprojunit's z must lie on PrivUnitG's grid: a value off it is refused.
  config.mechanism = VectorMechanism::kFastProjUnit;
  const auto projected = MakeVectorRandomizer(config).value();
  ReportGate gate(5, *projected);
  CounterRng rng(12);
  VectorReport off = DrawVectorReport(*projected, x, rng);
  off.sent[8 + 3] ^= 1;  // the lowest bits of the first value
  EXPECT_EQ(gate.Admit("c", Bytes(EncodeReport(5, off))).reason, RejectReason::kMalformed);
  // Bytes where the round's randomizer sends values.
  config.mechanism = VectorMechanism::kPrivUnitG;
  config.k = 0;
  const auto plain = MakeVectorRandomizer(config).value();
  ReportGate plain_gate(5, *plain);
  VectorReport bytes_only;
  bytes_only.sent = std::string(16, 'x');
  const GateVerdict refused = plain_gate.Admit("c", Bytes(EncodeReport(5, bytes_only)));
  EXPECT_EQ(refused.reason, RejectReason::kMalformed);
  EXPECT_NE(refused.detail.find("sends its d values"), std::string::npos) << refused.detail;
}

TEST_F(ReportGateTest, VectorReportsPassExactlyAndBadOnesAreRejectedWithTheirReason) {
  VectorRandomizerConfig config;
  config.dimension = 30;
  config.epsilon = 4;
  config.clip = 2;
  const auto privunitg = MakeVectorRandomizer(config).value();
  config.mechanism = VectorMechanism::kDuchi;
  const auto duchi = MakeVectorRandomizer(config).value();
  std::vector<double> x(30);
  for (auto& v : x) v = Uniform01(rng_) - 0.5;
  for (const VectorRandomizer* r : {privunitg.get(), duchi.get()}) {
    ReportGate gate(7, *r);
    for (int client = 0; client < 20; ++client) {
      const VectorReport sent{r->Randomize(x, rng_)};
      const std::string bytes = EncodeReport(7, sent);
      EXPECT_LE(bytes.size(), gate.max_bytes());
      const GateVerdict v = gate.Admit(Client(client), Bytes(bytes));
      ASSERT_TRUE(v.accepted()) << r->name() << ": " << v.detail;
      EXPECT_EQ(std::get<VectorReport>(*v.report).values, sent.values);  // bit for bit
    }
    auto reason = [&](const VectorReport& report) {
      const GateVerdict v = gate.Admit("bad", Bytes(EncodeReport(7, report)));
      EXPECT_FALSE(v.accepted());
      EXPECT_FALSE(v.detail.empty());
      return v.reason;
    };
    VectorReport report{r->Randomize(x, rng_)};
    report.values.pop_back();
    EXPECT_EQ(reason(report), RejectReason::kMalformed) << r->name();
    report.values.push_back(std::nan(""));
    EXPECT_EQ(reason(report), RejectReason::kNonFinite) << r->name();
    report.values.back() = 0;
    report.values.resize(31, 0.0);
    EXPECT_EQ(reason(report), RejectReason::kMalformed) << r->name();
    report.values.resize(10000, 0.0);
    EXPECT_EQ(reason(report), RejectReason::kOversized) << r->name();
    EXPECT_EQ(gate.Admit("bad", Bytes(EncodeReport(7, FedSelReport{1, 0.5}))).reason,
              RejectReason::kWrongProtocol);
    EXPECT_EQ(gate.Admit("bad", Bytes(EncodeReport(6, VectorReport{r->Randomize(x, rng_)}))).reason,
              RejectReason::kWrongRound);
  }
  // Duchi's outputs are +-B on every coordinate: anything else cannot be one.
  ReportGate gate(7, *duchi);
  std::vector<double> off = duchi->Randomize(x, rng_);
  off[4] = std::nextafter(off[4], 0.0);
  EXPECT_EQ(gate.Admit("c", Bytes(EncodeReport(7, VectorReport{off}))).reason,
            RejectReason::kOutOfDomain);
  // A (short) vector report in a FedSel round, and in an LDP-FL one.
  const VectorReport short_report{{0.5, -0.5}};
  ReportGate fedsel_gate(7, fedsel_);
  EXPECT_EQ(fedsel_gate.Admit("c", Bytes(EncodeReport(7, short_report))).reason,
            RejectReason::kWrongProtocol);
  ReportGate ldpfl_gate(7, ldpfl_);
  EXPECT_EQ(ldpfl_gate.Admit("c", Bytes(EncodeReport(7, short_report))).reason,
            RejectReason::kWrongProtocol);
}

}  // namespace
}  // namespace fedldp
