#include "fedldp/wire/report_codec.h"

#include <cmath>
#include <numeric>

#include "fedldp/v1/reports.pb.h"

namespace fedldp {
namespace {

bool HasUnknownFields(const google::protobuf::Message& m) {
  return !m.GetReflection()->GetUnknownFields(m).empty();
}

std::string Serialize(const v1::Report& message) {
  std::string bytes;
  message.SerializeToString(&bytes);
  return bytes;
}

// Wire size of a varint-length-delimited field of n bytes, generously: tag,
// up to 10 length bytes, payload.
constexpr std::size_t Field(std::size_t n) { return 11 + n; }

// A vector report's body as fedldp's type: its values, or its sent bytes
// decoded by the round's randomizer (null in a round of pieces).
Result<VectorReport> DecodeVector(const v1::VectorReport& body, const VectorRandomizer* vector) {
  const auto& values = body.values();
  if (body.sent().empty()) return VectorReport{{values.begin(), values.end()}, {}};
  if (!values.empty()) return Error{"both values and sent bytes"};
  if (vector == nullptr) return Error{"sent bytes for a piece, which carries values"};
  VectorReport report{std::vector<double>(vector->dimension()), {}};
  if (const Status s = vector->DecodeSent(body.sent(), report.values); !s.ok()) {
    return Error{vector->name() + ": " + s.error()};
  }
  return report;
}

// An LDP-FL report's body as fedldp's type, or why it is malformed.
Result<LdpFlReport> DecodeLdpFl(const v1::LdpFlReport& body) {
  for (const v1::LayerRange& r : body.ranges()) {
    if (HasUnknownFields(r)) return Error{"unknown fields"};
  }
  const std::uint64_t weights = body.weights();
  if (weights > (std::uint64_t{1} << 40) || body.bits().size() != (weights + 7) / 8) {
    return Error{"bit field of " + std::to_string(body.bits().size()) + " bytes for " +
                 std::to_string(weights) + " weights"};
  }
  if (weights % 8 != 0 && (static_cast<std::uint8_t>(body.bits().back()) >> (weights % 8)) != 0) {
    return Error{"padding bits after the last weight are set"};
  }
  LdpFlReport report;
  report.weights = weights;
  for (const v1::LayerRange& r : body.ranges()) report.ranges.push_back({r.center(), r.radius()});
  report.bits.assign((weights + 63) / 64, 0);
  const std::string& bits = body.bits();
  for (std::size_t byte = 0; byte < bits.size(); ++byte) {
    report.bits[byte / 8] |= std::uint64_t{static_cast<std::uint8_t>(bits[byte])}
                             << (8 * (byte % 8));
  }
  return report;
}

}  // namespace

std::string EncodeReport(std::uint64_t round, const FedSelReport& report) {
  v1::Report message;
  message.set_round(round);
  message.mutable_fedsel()->set_index(report.index);
  message.mutable_fedsel()->set_value(report.value);
  return Serialize(message);
}

std::string EncodeReport(std::uint64_t round, const LdpFlReport& report) {
  v1::Report message;
  message.set_round(round);
  v1::LdpFlReport& body = *message.mutable_ldpfl();
  for (const LayerRange& range : report.ranges) {
    v1::LayerRange& r = *body.add_ranges();
    r.set_center(range.center);
    r.set_radius(range.radius);
  }
  body.set_weights(report.weights);
  std::string& bits = *body.mutable_bits();
  bits.assign((report.weights + 7) / 8, '\0');
  for (std::size_t byte = 0; byte < bits.size(); ++byte) {
    bits[byte] =
        static_cast<char>(static_cast<std::uint8_t>(report.bits[byte / 8] >> (8 * (byte % 8))));
  }
  return Serialize(message);
}

std::string EncodeReport(std::uint64_t round, const VectorReport& report) {
  v1::Report message;
  message.set_round(round);
  auto& values = *message.mutable_vector()->mutable_values();
  values.Add(report.values.begin(), report.values.end());
  if (!report.sent.empty()) message.mutable_vector()->set_sent(report.sent);
  return Serialize(message);
}

VectorReport DrawVectorReport(const VectorRandomizer& r, std::span<const double> x, Rng& rng) {
  VectorReport report;
  if (auto sent = r.EncodeSent(x, rng)) {
    report.sent = std::move(*sent);
  } else {
    report.values.resize(r.dimension());
    r.Randomize(x, report.values, rng);
  }
  return report;
}

const char* ReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kMalformed:
      return "malformed";
    case RejectReason::kOversized:
      return "oversized";
    case RejectReason::kWrongProtocol:
      return "wrong protocol";
    case RejectReason::kWrongRound:
      return "wrong round";
    case RejectReason::kDuplicate:
      return "duplicate";
    case RejectReason::kNonFinite:
      return "non-finite";
    case RejectReason::kOutOfDomain:
      return "out of domain";
  }
  return "unknown";
}

ReportGate::ReportGate(std::uint64_t round, const FedSelRandomizer& fedsel)
    : round_(round), fedsel_(&fedsel), max_bytes_(64) {}

ReportGate::ReportGate(std::uint64_t round, const LdpFlRandomizer& ldpfl)
    : round_(round), ldpfl_(&ldpfl) {
  // round, then the body: per layer a range of two doubles, the count, the bits.
  max_bytes_ =
      11 + Field(ldpfl.ranges().size() * Field(2 * 9) + 11 + Field((ldpfl.weights() + 7) / 8));
}

ReportGate::ReportGate(std::uint64_t round, const VectorRandomizer& vector)
    : round_(round), vector_(&vector) {
  // round, then the body: a packed field of d doubles inside the message, or
  // the randomizer's compact bytes.
  max_bytes_ = 11 + Field(Field(std::max(8 * vector.dimension(), vector.MaxSentBytes())));
}

ReportGate::ReportGate(std::uint64_t round, VectorPiece piece)
    : round_(round), piece_values_(piece.values) {
  max_bytes_ = 11 + Field(Field(8 * piece.values));
}

std::size_t ReportGate::rejected_total() const {
  return std::accumulate(rejected_.begin(), rejected_.end(), std::size_t{0});
}

GateVerdict ReportGate::Reject(RejectReason reason, std::string detail) {
  ++rejected_[static_cast<std::size_t>(reason)];
  GateVerdict verdict;
  verdict.reason = reason;
  verdict.detail = std::move(detail);
  return verdict;
}

GateVerdict ReportGate::Check(const FedSelReport& report) const {
  GateVerdict verdict;
  if (!std::isfinite(report.value)) {
    verdict.reason = RejectReason::kNonFinite;
    verdict.detail = "value is not finite";
  } else if (!fedsel_->Validate(report)) {
    verdict.reason = RejectReason::kOutOfDomain;
    verdict.detail = "index " + std::to_string(report.index) + " with value " +
                     std::to_string(report.value) +
                     " cannot come from the announced selector and mechanism";
  } else {
    verdict.report = report;
  }
  return verdict;
}

GateVerdict ReportGate::Check(const LdpFlReport& report) const {
  GateVerdict verdict;
  for (const LayerRange& r : report.ranges) {
    if (!std::isfinite(r.center) || !std::isfinite(r.radius)) {
      verdict.reason = RejectReason::kNonFinite;
      verdict.detail = "a layer's range is not finite";
      return verdict;
    }
  }
  if (report.ranges.size() != ldpfl_->ranges().size() || report.weights != ldpfl_->weights()) {
    verdict.reason = RejectReason::kMalformed;
    verdict.detail = "report has " + std::to_string(report.ranges.size()) + " layers and " +
                     std::to_string(report.weights) + " weights, the model " +
                     std::to_string(ldpfl_->ranges().size()) + " and " +
                     std::to_string(ldpfl_->weights());
    return verdict;
  }
  if (Status checked = ldpfl_->Check(report); !checked.ok()) {
    // Right shape (checked above and in decoding), so what is left is a range
    // other than the announced one: values the mechanism cannot output.
    verdict.reason = RejectReason::kOutOfDomain;
    verdict.detail = checked.error();
    return verdict;
  }
  verdict.report = report;
  return verdict;
}

GateVerdict ReportGate::Check(VectorReport report) const {
  GateVerdict verdict;
  const std::size_t expected = vector_ ? vector_->dimension() : piece_values_;
  if (report.values.size() != expected) {
    verdict.reason = RejectReason::kMalformed;
    verdict.detail = std::to_string(report.values.size()) +
                     (vector_ ? " values for a model of " : " values for a piece of ") +
                     std::to_string(expected);
    return verdict;
  }
  for (const double v : report.values) {
    if (!std::isfinite(v)) {
      verdict.reason = RejectReason::kNonFinite;
      verdict.detail = "a value is not finite";
      return verdict;
    }
  }
  if (!vector_) {
    verdict.report = std::move(report);
    return verdict;
  }
  if (const Status s = vector_->ValidateReport(report.values); !s.ok()) {
    verdict.reason = RejectReason::kOutOfDomain;
    verdict.detail = vector_->name() + ": " + s.error();
    return verdict;
  }
  verdict.report = std::move(report);
  return verdict;
}

GateVerdict ReportGate::Admit(std::string_view client, std::span<const std::uint8_t> bytes) {
  if (bytes.size() > max_bytes_) {
    return Reject(RejectReason::kOversized, std::to_string(bytes.size()) + " bytes, at most " +
                                                std::to_string(max_bytes_) + " expected");
  }
  v1::Report message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Reject(RejectReason::kMalformed, "not a fedldp.v1.Report");
  }
  if (HasUnknownFields(message) || (message.has_fedsel() && HasUnknownFields(message.fedsel())) ||
      (message.has_ldpfl() && HasUnknownFields(message.ldpfl())) ||
      (message.has_vector() && HasUnknownFields(message.vector()))) {
    return Reject(RejectReason::kMalformed, "unknown fields");
  }
  if (message.body_case() == v1::Report::BODY_NOT_SET) {
    return Reject(RejectReason::kMalformed, "no report body");
  }
  const auto body = message.body_case();
  const bool is_fedsel = body == v1::Report::kFedsel, is_vector = body == v1::Report::kVector;
  const bool vector_round = vector_ != nullptr || piece_values_ > 0;
  if (is_fedsel != (fedsel_ != nullptr) || is_vector != vector_round) {
    const auto kind = [](bool fedsel, bool vector) {
      return fedsel ? "a FedSel" : (vector ? "a vector" : "an LDP-FL");
    };
    return Reject(RejectReason::kWrongProtocol,
                  std::string(kind(is_fedsel, is_vector)) + " report in " +
                      kind(fedsel_ != nullptr, vector_round) + " round");
  }
  if (message.round() != round_) {
    return Reject(RejectReason::kWrongRound, "for round " + std::to_string(message.round()) +
                                                 ", this is round " + std::to_string(round_));
  }
  if (seen_.contains(std::string(client))) {
    return Reject(RejectReason::kDuplicate, "a second report from the same client this round");
  }

  GateVerdict verdict;
  if (is_fedsel) {
    verdict = Check(FedSelReport{message.fedsel().index(), message.fedsel().value()});
  } else if (is_vector) {
    auto decoded = DecodeVector(message.vector(), vector_);
    if (!decoded.ok()) return Reject(RejectReason::kMalformed, decoded.error());
    verdict = Check(std::move(decoded).value());
  } else {
    auto decoded = DecodeLdpFl(message.ldpfl());
    if (!decoded.ok()) return Reject(RejectReason::kMalformed, decoded.error());
    verdict = Check(*decoded);
  }
  if (!verdict.accepted()) return Reject(verdict.reason, std::move(verdict.detail));
  seen_.emplace(client);
  ++accepted_;
  return verdict;
}

}  // namespace fedldp
