// libFuzzer target: arbitrary bytes through the server's report gate, for a
// FedSel round, an LDP-FL round, vector rounds (PrivUnitG and the
// per-coordinate two-point, d = 6) and a round of 6-value vector pieces (the
// LDP-FL deployment's). Beyond "no crash, no sanitizer report", every
// accepted report must be one the round's aggregator takes (vector: d finite
// values the randomizer validates; a piece: 6 finite values), and must
// survive re-encoding unchanged.
//
// FEDLDP_FUZZ_WRITE_SEEDS=DIR writes valid reports of both kinds into DIR as
// a starting corpus, then exits.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>

#include "fedldp/random/counter_rng.h"
#include "fedldp/wire/report_codec.h"
#include "fuzz_util.h"

namespace {

using namespace fedldp;

constexpr std::uint64_t kRound = 7;

const FedSelRandomizer& FedSel() {
  static const FedSelRandomizer r =
      FedSelRandomizer::Create(SelectorKind::kPe, 0.5, 20, 2, ValueMechanismKind::kPiecewise, 1.5)
          .value();
  return r;
}

const LdpFlRandomizer& LdpFl() {
  static const LdpFlRandomizer r =
      LdpFlRandomizer::Create(1.0, {5, 70, 3}, {{0, 0.1}, {0.2, 0.05}, {-1, 2}}).value();
  return r;
}

const VectorRandomizer& Vector(VectorMechanism mechanism) {
  static const auto make = [](VectorMechanism m) {
    VectorRandomizerConfig c;
    c.mechanism = m;
    c.dimension = 6;
    c.epsilon = 2;
    return MakeVectorRandomizer(c).value();
  };
  static const auto privunitg = make(VectorMechanism::kPrivUnitG);
  static const auto duchi = make(VectorMechanism::kDuchi);
  return mechanism == VectorMechanism::kDuchi ? *duchi : *privunitg;
}

using fuzz::Require;

void WriteSeeds(const std::string& dir) {
  CounterRng rng(1, 1);
  std::vector<double> r(20), prev(20, 0.0);
  std::vector<float> w(78);
  for (int i = 0; i < 8; ++i) {
    for (auto& v : r) v = Uniform01(rng) * 2 - 1;
    for (auto& v : w) v = static_cast<float>(Uniform01(rng) * 2 - 1);
    const std::string a = EncodeReport(kRound, FedSel().Randomize(r, prev, 0.5, rng));
    const std::string b = EncodeReport(kRound, LdpFl().Randomize(w, rng));
    std::ofstream(dir + "/fedsel-" + std::to_string(i), std::ios::binary) << a;
    std::ofstream(dir + "/ldpfl-" + std::to_string(i), std::ios::binary) << b;
    const std::vector<double> x(r.begin(), r.begin() + 6);
    for (auto m : {VectorMechanism::kPrivUnitG, VectorMechanism::kDuchi}) {
      const std::string c = EncodeReport(kRound, VectorReport{Vector(m).Randomize(x, rng)});
      std::ofstream(
          dir + "/vector-" + std::string(VectorMechanismName(m)) + "-" + std::to_string(i),
          std::ios::binary)
          << c;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::WriteSeedsIfAsked(WriteSeeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  ReportGate fedsel_gate(kRound, FedSel());
  ReportGate ldpfl_gate(kRound, LdpFl());
  ReportGate privunitg_gate(kRound, Vector(VectorMechanism::kPrivUnitG));
  ReportGate duchi_gate(kRound, Vector(VectorMechanism::kDuchi));
  ReportGate piece_gate(kRound, ReportGate::VectorPiece{6});
  for (ReportGate* gate : {&fedsel_gate, &ldpfl_gate, &privunitg_gate, &duchi_gate, &piece_gate}) {
    GateVerdict verdict = gate->Admit("client", bytes);
    Require(verdict.accepted() != verdict.detail.size() > 0, "a verdict has a reason iff rejected");
    Require(gate->accepted() + gate->rejected_total() == 1, "every report is counted once");
    if (!verdict.accepted()) continue;
    Require(gate->Admit("client", bytes).reason == RejectReason::kDuplicate, "duplicates refused");
    std::string again;
    if (const auto* f = std::get_if<FedSelReport>(&*verdict.report)) {
      FedSelAggregator aggregator(FedSel(), 20);
      Require(aggregator.Add(*f), "the FedSel aggregator takes what the gate accepted");
      again = EncodeReport(kRound, *f);
    } else if (const auto* v = std::get_if<VectorReport>(&*verdict.report)) {
      const VectorRandomizer& r =
          Vector(gate == &duchi_gate ? VectorMechanism::kDuchi : VectorMechanism::kPrivUnitG);
      Require(v->values.size() == 6, "an accepted vector report or piece has its 6 values");
      Require(gate == &piece_gate || r.ValidateReport(v->values).ok(),
              "an accepted vector report is one its randomizer validates");
      for (double x : v->values) Require(std::isfinite(x), "accepted values are finite");
      again = EncodeReport(kRound, *v);
    } else {
      const auto& l = std::get<LdpFlReport>(*verdict.report);
      LdpFlAggregator aggregator(LdpFl());
      Require(aggregator.Add(l).ok(), "the LDP-FL aggregator takes what the gate accepted");
      again = EncodeReport(kRound, l);
    }
    ReportGate fresh = gate == &fedsel_gate  ? ReportGate(kRound, FedSel())
                       : gate == &ldpfl_gate ? ReportGate(kRound, LdpFl())
                       : gate == &duchi_gate ? ReportGate(kRound, Vector(VectorMechanism::kDuchi))
                       : gate == &piece_gate
                           ? ReportGate(kRound, ReportGate::VectorPiece{6})
                           : ReportGate(kRound, Vector(VectorMechanism::kPrivUnitG));
    const auto* p = reinterpret_cast<const std::uint8_t*>(again.data());
    Require(fresh.Admit("other", {p, again.size()}).accepted(), "re-encoding is accepted");
  }
  return 0;
}
