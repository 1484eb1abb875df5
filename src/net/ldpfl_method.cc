#include "ldpfl_method.h"

#include <cmath>
#include <optional>
#include <sstream>
#include <utility>

#include "fedldp/fl/ldpfl.h"
#include "fedldp/pipeline/ldpfl.h"
#include "fedldp/privacy/ldpfl_accounting.h"
#include "fedldp/privacy/run_accounting.h"
#include "fedldp/vector/vector_randomizer.h"
#include "served_randomizer.h"

namespace fedldp::net_internal {
namespace {

// LDP-FL's two-point mechanism on every weight: the round's randomizer over
// the announced ranges, one per chunk for the server's gates.
class TwoPointMethod final : public LdpFlMethod {
 public:
  explicit TwoPointMethod(const LdpFlTaskSpec& task)
      : task_(task), chunks_(ChunkModel(task.layer_sizes, task.chunk)) {}
  double report_epsilon() const override {
    return task_.config.epsilon * static_cast<double>(task_.weights());
  }
  std::string cost_name() const override { return "d eps"; }
  std::string Mechanism() const override {
    return "eps " + std::to_string(task_.config.epsilon) + " per weight";
  }
  Result<Announcement> Announce() const override {
    const auto accounted = AccountLdpFl(task_.config.epsilon, task_.weights(),
                                        task_.reports_per_user(), task_.shuffle_batch());
    return Announcement{
        "task " + task_.id + ": " + std::to_string(task_.weights()) + " weights in " +
            std::to_string(chunks_.size()) + " sealed pieces per report; eps " +
            std::to_string(task_.config.epsilon) + " per weight, so d eps = " +
            std::to_string(report_epsilon()) + " per report without trusting the shuffler",
        DescribeLdpFlPrivacy(accounted) + FloatingPointStatement(std::nullopt) + "\n",
        LdpFlPrivacyRecord(task_.config, accounted, std::nullopt)};
  }
  const std::vector<ReportChunk>& chunks() const override { return chunks_; }
  Status Open(std::uint64_t round, std::span<const LayerRange> ranges) override;
  std::vector<std::string> Report(std::vector<float> local, std::span<const float> global,
                                  Rng& rng) const override {
    if (task_.config.perturb_updates) {
      for (std::size_t j = 0; j < local.size(); ++j) local[j] -= global[j];
    }
    const LdpFlReport report = randomizer_->Randomize(local, rng);
    std::vector<std::string> pieces;
    pieces.reserve(chunks_.size());
    for (const auto& chunk : chunks_)
      pieces.push_back(EncodeReport(round_, PieceOf(report, chunk)));
    return pieces;
  }
  ReportGate& Gate(std::size_t chunk) override { return gates_[chunk]; }
  void Add(std::size_t chunk, const DecodedReport& piece) override {
    // The gate checked the piece against its chunk; a refusal here would be
    // counted in aggregator_->rejected().
    static_cast<void>(aggregator_->AddPiece(chunks_[chunk], std::get<LdpFlReport>(piece)));
  }
  std::vector<double> Mean() const override {
    const std::vector<float> mean = aggregator_->Mean();
    return {mean.begin(), mean.end()};
  }
  bool updates() const override { return task_.config.perturb_updates; }

 private:
  const LdpFlTaskSpec task_;
  const std::vector<ReportChunk> chunks_;
  std::uint64_t round_ = 0;
  std::optional<LdpFlRandomizer> randomizer_;
  std::vector<LdpFlRandomizer> chunk_randomizers_;  // the gates point into these
  std::vector<ReportGate> gates_;
  std::optional<LdpFlAggregator> aggregator_;
};

Status TwoPointMethod::Open(std::uint64_t round, std::span<const LayerRange> ranges) {
  const std::vector<LayerRange> layers(ranges.begin(), ranges.end());
  auto full = LdpFlRandomizer::Create(task_.config.epsilon, task_.layer_sizes, layers);
  if (!full.ok()) return Error{full.error()};
  round_ = round;
  gates_.clear();
  aggregator_.reset();
  randomizer_.emplace(std::move(full).value());
  chunk_randomizers_.clear();
  chunk_randomizers_.reserve(chunks_.size());
  for (const auto& chunk : chunks_) {
    chunk_randomizers_.push_back(LdpFlRandomizer::Create(task_.config.epsilon,
                                                         {chunk.end - chunk.begin},
                                                         {layers[chunk.layer]})
                                     .value());
  }
  gates_.reserve(chunks_.size());
  for (const auto& r : chunk_randomizers_) gates_.emplace_back(round, r);
  aggregator_.emplace(*randomizer_);
  return {};
}

// A vector randomizer on the whole update (PrivatizeUpdate's law, the
// simulator's). A randomizer with a compact form sends its bytes whole, as
// one piece, which the server decodes and checks as the randomizer's report;
// the others' values are cut into chunks, whose length and finiteness the
// server checks (the randomizer's own check needs the whole report, which
// it never sees).
class VectorMethod final : public LdpFlMethod {
 public:
  VectorMethod(const LdpFlTaskSpec& task, std::unique_ptr<VectorRandomizer> randomizer)
      : task_(task),
        compact_(randomizer->MaxSentBytes() > 0),
        chunks_(compact_ ? std::vector<ReportChunk>{{0, 0, task.weights()}}
                         : ChunkModel(task.layer_sizes, task.chunk)),
        randomizer_(std::move(randomizer)) {}
  double report_epsilon() const override { return task_.config.epsilon; }
  std::string cost_name() const override { return "eps"; }
  std::string Mechanism() const override {
    return LdpFlRandomizerName(task_.config) + " on the whole update, eps " +
           std::to_string(task_.config.epsilon) + " per report";
  }
  Result<Announcement> Announce() const override;
  const std::vector<ReportChunk>& chunks() const override { return chunks_; }
  Status Open(std::uint64_t round, std::span<const LayerRange> ranges) override {
    // Every task announces ranges, and malformed ones are refused as the
    // two-point method's are, though a vector report does not use them.
    auto checked = LdpFlRandomizer::Create(task_.config.epsilon, task_.layer_sizes,
                                           std::vector<LayerRange>(ranges.begin(), ranges.end()));
    if (!checked.ok()) return Error{checked.error()};
    round_ = round;
    gates_.clear();
    for (const auto& chunk : chunks_) {
      if (compact_) {
        gates_.emplace_back(round, *randomizer_);
      } else {
        gates_.emplace_back(round, ReportGate::VectorPiece{chunk.end - chunk.begin});
      }
    }
    sum_.assign(task_.weights(), 0.0);
    pieces_.assign(chunks_.size(), 0);
    return {};
  }
  std::vector<std::string> Report(std::vector<float> local, std::span<const float> global,
                                  Rng& rng) const override {
    if (compact_) {
      return {EncodeReport(round_, DrawVectorReport(*randomizer_, UpdateOf(local, global), rng))};
    }
    const std::vector<double> report =
        PrivatizeUpdate(*randomizer_, TrainedWeights(local.size()), local, global, rng);
    std::vector<std::string> pieces;
    pieces.reserve(chunks_.size());
    for (const auto& chunk : chunks_) {
      VectorReport piece;
      piece.values.assign(report.begin() + static_cast<std::ptrdiff_t>(chunk.begin),
                          report.begin() + static_cast<std::ptrdiff_t>(chunk.end));
      pieces.push_back(EncodeReport(round_, piece));
    }
    return pieces;
  }
  ReportGate& Gate(std::size_t chunk) override { return gates_[chunk]; }
  void Add(std::size_t chunk, const DecodedReport& piece) override {
    const auto& values = std::get<VectorReport>(piece).values;
    const std::size_t begin = chunks_[chunk].begin;
    for (std::size_t j = 0; j < values.size(); ++j) sum_[begin + j] += values[j];
    ++pieces_[chunk];
  }
  std::vector<double> Mean() const override;
  bool updates() const override { return true; }

 private:
  const LdpFlTaskSpec task_;
  const bool compact_;  // a report is the randomizer's bytes, one piece
  const std::vector<ReportChunk> chunks_;
  const std::unique_ptr<const VectorRandomizer> randomizer_;
  std::uint64_t round_ = 0;
  std::vector<ReportGate> gates_;
  // The sum of the round's pieces per weight, and the pieces of every chunk.
  std::vector<double> sum_;
  std::vector<std::uint64_t> pieces_;
};

Result<LdpFlMethod::Announcement> VectorMethod::Announce() const {
  const LdpFlConfig& c = task_.config;
  const RunPrivacyConfig account = LdpFlVectorRunPrivacy(*randomizer_, task_.reports_per_user(),
                                                         task_.shuffle_batch(), true, c.delta);
  auto accounted = AccountRun(account);
  if (!accounted.ok()) {
    return Error{"the accountant: " + accounted.error(), ErrorCode::kInvalidArgument};
  }
  std::ostringstream line;
  line << "task " << task_.id << ": " << LdpFlRandomizerName(c) << " on the whole update (l2 clip "
       << c.clip << "), " << task_.weights() << " weights "
       << (compact_ ? "sent as " + std::to_string(randomizer_->MaxSentBytes()) +
                          " bytes, one sealed piece per report"
                    : "in " + std::to_string(chunks_.size()) + " sealed pieces per report")
       << "; eps " << c.epsilon << " per report without trusting the shuffler";
  return Announcement{line.str(),
                      "privacy (fedldp account run " +
                          AccountRunArguments(account, VectorMechanismName(*c.vector)) +
                          "; at most " + std::to_string(task_.reports_per_user()) +
                          " report(s) per user):\n" +
                          DescribeRunPrivacy(*accounted, FloatingPointStatement(c.vector)),
                      LdpFlPrivacyRecord(c, {}, *accounted)};
}

std::vector<double> VectorMethod::Mean() const {
  std::vector<double> mean(sum_.size(), std::nan(""));
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    if (pieces_[c] == 0) continue;
    for (std::size_t j = chunks_[c].begin; j < chunks_[c].end; ++j) {
      mean[j] = sum_[j] / static_cast<double>(pieces_[c]);
    }
  }
  return mean;
}

}  // namespace

Result<std::unique_ptr<LdpFlMethod>> LdpFlMethod::Make(const LdpFlTaskSpec& task) {
  if (!task.config.vector) return std::unique_ptr<LdpFlMethod>(new TwoPointMethod(task));
  FEDLDP_RETURN_IF_ERROR(
      CheckServedRandomizer(*task.config.vector, "randomizer " + LdpFlRandomizerName(task.config)));
  auto randomizer = LdpFlVectorRandomizer(task.config, task.weights(), 0);
  if (!randomizer.ok()) return Error{randomizer.error()};
  return std::unique_ptr<LdpFlMethod>(new VectorMethod(task, std::move(randomizer).value()));
}

}  // namespace fedldp::net_internal
