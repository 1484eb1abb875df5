// Reports on the wire (proto/fedldp/v1/reports.proto): encoding a client's
// report for one round, and the server's gate that decodes, validates and
// counts every report it receives.
//
// The gate accepts a report only if it could have been produced, for this
// round, by the randomizer the server announced: the same FedSelRandomizer,
// VectorRandomizer or LdpFlRandomizer the simulator runs decides
// (FedSelRandomizer::Validate, VectorRandomizer::ValidateReport,
// LdpFlRandomizer::Check). Everything else is rejected with one of the
// reasons below, counted, and described in one line for the log. A rejected
// report changes nothing but the counters.
//
// Protobuf types stay inside src/wire: callers see fedldp's own report types.
#ifndef FEDLDP_WIRE_REPORT_CODEC_H_
#define FEDLDP_WIRE_REPORT_CODEC_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

#include "fedldp/pipeline/fedsel.h"
#include "fedldp/pipeline/ldpfl.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

// A vector randomizer's report: its d output values, or the compact bytes
// it sends instead (VectorRandomizer::EncodeSent; values then empty). The
// gate decodes sent bytes, so an admitted report always carries values.
struct VectorReport {
  std::vector<double> values;
  std::string sent{};
};
// The report a client sends for x: the compact bytes where the randomizer
// has them, else its d values.
VectorReport DrawVectorReport(const VectorRandomizer& r, std::span<const double> x, Rng& rng);

std::string EncodeReport(std::uint64_t round, const FedSelReport& report);
std::string EncodeReport(std::uint64_t round, const LdpFlReport& report);
std::string EncodeReport(std::uint64_t round, const VectorReport& report);

enum class RejectReason {
  kMalformed,      // not a parsable report, unknown fields, wrong shape
  kOversized,      // more bytes than the announced report can take
  kWrongProtocol,  // a report of another kind than the round's (FedSel, vector, LDP-FL)
  kWrongRound,     // for another round than the current one
  kDuplicate,      // a second report from the same client in this round
  kNonFinite,      // NaN or infinity anywhere
  kOutOfDomain,    // a value the announced mechanism cannot output
};
inline constexpr std::size_t kRejectReasons = 7;
const char* ReasonName(RejectReason reason);  // "malformed", "oversized", ...

using DecodedReport = std::variant<FedSelReport, LdpFlReport, VectorReport>;

struct GateVerdict {
  std::optional<DecodedReport> report;  // set iff accepted
  RejectReason reason = RejectReason::kMalformed;
  std::string detail;  // why, in one line, when rejected
  bool accepted() const { return report.has_value(); }
};

// The server's gate for one round. Holds references to the round's
// randomizer, which must outlive it.
class ReportGate {
 public:
  ReportGate(std::uint64_t round, const FedSelRandomizer& fedsel);
  ReportGate(std::uint64_t round, const LdpFlRandomizer& ldpfl);
  ReportGate(std::uint64_t round, const VectorRandomizer& vector);
  // One piece of a vector report cut into chunks (the LDP-FL deployment's
  // sealed pieces): `values` finite values. Nothing more can be checked of a
  // piece alone: the randomizer's own check needs the whole report.
  struct VectorPiece {
    std::size_t values = 0;
  };
  ReportGate(std::uint64_t round, VectorPiece piece);

  // client: who sent the bytes, as the transport authenticated them (a token,
  // or an opaque per-connection id behind a shuffler); used only to refuse a
  // second report from the same sender in this round.
  GateVerdict Admit(std::string_view client, std::span<const std::uint8_t> bytes);

  std::uint64_t round() const { return round_; }
  std::size_t accepted() const { return accepted_; }
  std::size_t rejected(RejectReason reason) const {
    return rejected_[static_cast<std::size_t>(reason)];
  }
  std::size_t rejected_total() const;
  // The largest report this round accepts, in bytes.
  std::size_t max_bytes() const { return max_bytes_; }

 private:
  GateVerdict Reject(RejectReason reason, std::string detail);
  GateVerdict Check(const FedSelReport& report) const;
  GateVerdict Check(const LdpFlReport& report) const;
  GateVerdict Check(VectorReport report) const;

  std::uint64_t round_;
  const FedSelRandomizer* fedsel_ = nullptr;
  const LdpFlRandomizer* ldpfl_ = nullptr;
  const VectorRandomizer* vector_ = nullptr;
  std::size_t piece_values_ = 0;  // > 0: a gate of vector pieces
  std::size_t max_bytes_ = 0;
  std::unordered_set<std::string> seen_;
  std::size_t accepted_ = 0;
  std::array<std::size_t, kRejectReasons> rejected_{};
};

}  // namespace fedldp

#endif  // FEDLDP_WIRE_REPORT_CODEC_H_
