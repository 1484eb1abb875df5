#include "fedldp/pipeline/ldpfl.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <utility>

#include "fedldp/base/checked.h"

namespace fedldp {

Result<LdpFlRandomizer> LdpFlRandomizer::Create(double epsilon,
                                                std::vector<std::size_t> layer_sizes,
                                                std::vector<LayerRange> ranges) {
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(epsilon));
  if (layer_sizes.empty()) return Error{"LDP-FL needs at least one layer"};
  auto weights = SumOfSizes(layer_sizes, "layer");
  if (!weights.ok()) return Error{weights.error()};
  if (ranges.size() != layer_sizes.size()) {
    return Error{"LDP-FL needs one range per layer (" + std::to_string(layer_sizes.size()) +
                 " layers, " + std::to_string(ranges.size()) + " ranges)"};
  }
  LdpFlRandomizer r;
  r.epsilon_ = epsilon;
  r.weights_ = *weights;
  for (std::size_t l = 0; l < layer_sizes.size(); ++l) {
    auto m = TwoPointMechanism::Create(epsilon, ranges[l].center, ranges[l].radius);
    if (!m.ok()) return Error{"layer " + std::to_string(l) + ": " + m.error()};
    r.mechanisms_.push_back(std::move(m).value());
  }
  r.layer_sizes_ = std::move(layer_sizes);
  r.ranges_ = std::move(ranges);
  return r;
}

LdpFlReport LdpFlRandomizer::Randomize(std::span<const float> weights, Rng& rng) const {
  LdpFlReport report;
  report.ranges = ranges_;
  report.weights = weights_;
  report.bits.assign((weights_ + 63) / 64, 0);
  // Each layer is perturbed into its own word-aligned scratch, then copied
  // into the report at its bit offset.
  std::vector<std::uint64_t> layer_bits;
  std::size_t offset = 0;
  for (std::size_t l = 0; l < layer_sizes_.size(); ++l) {
    const std::size_t n = layer_sizes_[l];
    layer_bits.assign((n + 63) / 64, 0);
    mechanisms_[l].PerturbBits(weights.subspan(offset, n), layer_bits, rng);
    const std::size_t shift = offset % 64;
    std::uint64_t* dst = report.bits.data() + offset / 64;
    for (std::size_t w = 0; w < layer_bits.size(); ++w) {
      dst[w] |= layer_bits[w] << shift;
      if (shift != 0 && offset / 64 + w + 1 < report.bits.size()) {
        dst[w + 1] |= layer_bits[w] >> (64 - shift);
      }
    }
    offset += n;
  }
  return report;
}

Status LdpFlRandomizer::Check(const LdpFlReport& report) const {
  if (report.weights != weights_) {
    return Error{"report has " + std::to_string(report.weights) + " weights, the model " +
                 std::to_string(weights_)};
  }
  if (report.bits.size() != (weights_ + 63) / 64) {
    return Error{"report's bit vector has the wrong size"};
  }
  if (weights_ % 64 != 0 && (report.bits.back() >> (weights_ % 64)) != 0) {
    return Error{"report sets bits beyond its last weight"};
  }
  if (report.ranges != ranges_) return Error{"report's ranges differ from the ones announced"};
  return {};
}

ParameterShuffler::ParameterShuffler(const LdpFlRandomizer& randomizer, ShuffleSchedule schedule)
    : randomizer_(randomizer), schedule_(schedule) {}

Status ParameterShuffler::Submit(const LdpFlReport& report) {
  FEDLDP_RETURN_IF_ERROR(randomizer_.Check(report));
  reports_.push_back(report);
  return {};
}

ShuffledRound ParameterShuffler::Release(Rng& rng) {
  ShuffledRound round;
  round.reports = reports_.size();
  round.weights = randomizer_.weights();
  round.ranges = randomizer_.ranges();
  const std::size_t n = round.reports, wpc = round.words_per_column();
  round.columns.assign(round.weights * wpc, 0);
  std::vector<std::size_t> order(n);
  std::vector<std::pair<double, std::size_t>> delays(n);
  for (std::size_t j = 0; j < round.weights; ++j) {
    // order[k] = which report's message is the k-th one released.
    if (schedule_ == ShuffleSchedule::kPermutation) {
      std::iota(order.begin(), order.end(), std::size_t{0});
      for (std::size_t k = n; k > 1; --k) std::swap(order[k - 1], order[UniformIndex(rng, k)]);
    } else {
      // Algorithm 3: message i waits t_i ~ U(0, T) and arrives at t_i; T
      // only scales the times, so the release order is the sort of n uniform
      // draws (a tie, of probability < n^2 2^-54, keeps report order).
      for (std::size_t i = 0; i < n; ++i) delays[i] = {Uniform01(rng), i};
      std::sort(delays.begin(), delays.end());
      for (std::size_t k = 0; k < n; ++k) order[k] = delays[k].second;
    }
    std::uint64_t* column = round.columns.data() + j * wpc;
    for (std::size_t k = 0; k < n; ++k) {
      column[k / 64] |= static_cast<std::uint64_t>(reports_[order[k]].Bit(j)) << (k % 64);
    }
  }
  reports_.clear();
  reports_.shrink_to_fit();
  return round;
}

std::vector<ReportChunk> ChunkModel(const std::vector<std::size_t>& layer_sizes,
                                    std::size_t chunk) {
  std::vector<ReportChunk> chunks;
  std::size_t offset = 0;
  for (std::size_t l = 0; l < layer_sizes.size(); ++l) {
    const std::size_t end = offset + layer_sizes[l];
    for (std::size_t b = offset; b < end; b += std::max<std::size_t>(chunk, 1)) {
      chunks.push_back({l, b, std::min(end, b + std::max<std::size_t>(chunk, 1))});
    }
    offset = end;
  }
  return chunks;
}

LdpFlReport PieceOf(const LdpFlReport& report, const ReportChunk& chunk) {
  LdpFlReport piece;
  piece.ranges = {report.ranges.at(chunk.layer)};
  piece.weights = chunk.end - chunk.begin;
  piece.bits.assign((piece.weights + 63) / 64, 0);
  for (std::size_t i = 0; i < piece.weights; ++i) {
    piece.bits[i / 64] |= static_cast<std::uint64_t>(report.Bit(chunk.begin + i)) << (i % 64);
  }
  return piece;
}

LdpFlAggregator::LdpFlAggregator(const LdpFlRandomizer& randomizer)
    : randomizer_(randomizer), ones_(randomizer.weights(), 0), seen_(randomizer.weights(), 0) {}

Status LdpFlAggregator::Add(const LdpFlReport& report) {
  if (Status s = randomizer_.Check(report); !s.ok()) {
    ++rejected_;
    return s;
  }
  for (std::size_t i = 0; i < ones_.size(); ++i) ones_[i] += report.Bit(i), ++seen_[i];
  ++count_;
  return {};
}

Status LdpFlAggregator::AddPiece(const ReportChunk& chunk, const LdpFlReport& piece) {
  std::size_t first = 0;
  for (std::size_t l = 0; l < chunk.layer && l < randomizer_.layer_sizes().size(); ++l) {
    first += randomizer_.layer_sizes()[l];
  }
  std::string why;
  if (chunk.layer >= randomizer_.layer_sizes().size() || chunk.begin < first ||
      chunk.end <= chunk.begin || chunk.end > first + randomizer_.layer_sizes()[chunk.layer]) {
    why = "the chunk is not inside one layer of the model";
  } else if (piece.weights != chunk.end - chunk.begin ||
             piece.bits.size() != (piece.weights + 63) / 64) {
    why = "the piece has " + std::to_string(piece.weights) + " weights, its chunk " +
          std::to_string(chunk.end - chunk.begin);
  } else if (piece.weights % 64 != 0 && (piece.bits.back() >> (piece.weights % 64)) != 0) {
    why = "the piece sets bits beyond its last weight";
  } else if (piece.ranges.size() != 1 || piece.ranges[0] != randomizer_.ranges()[chunk.layer]) {
    why = "the piece's range differs from the one announced for its layer";
  }
  if (!why.empty()) {
    ++rejected_;
    return Error{why};
  }
  for (std::size_t i = 0; i < piece.weights; ++i) {
    ones_[chunk.begin + i] += piece.Bit(i);
    ++seen_[chunk.begin + i];
  }
  ++pieces_;
  return {};
}

Status LdpFlAggregator::AddShuffled(const ShuffledRound& round) {
  if (round.weights != randomizer_.weights() || round.ranges != randomizer_.ranges() ||
      round.columns.size() != round.weights * round.words_per_column()) {
    ++rejected_;
    return Error{"shuffled round does not match the announced model and ranges"};
  }
  const std::size_t wpc = round.words_per_column();
  for (std::size_t j = 0; j < round.weights; ++j) {
    std::uint32_t ones = 0;
    for (std::size_t w = 0; w < wpc; ++w) {
      ones += static_cast<std::uint32_t>(std::popcount(round.columns[j * wpc + w]));
    }
    ones_[j] += ones;
    seen_[j] += static_cast<std::uint32_t>(round.reports);
  }
  count_ += round.reports;
  return {};
}

std::vector<float> LdpFlAggregator::Mean() const {
  if (count_ == 0 && pieces_ == 0) return {};
  std::vector<float> mean(ones_.size());
  std::size_t i = 0;
  for (std::size_t l = 0; l < randomizer_.layer_sizes().size(); ++l) {
    const auto& m = randomizer_.mechanism(l);
    for (std::size_t end = i + randomizer_.layer_sizes()[l]; i < end; ++i) {
      // (ones high + (n - ones) low) / n, computed from the integer count.
      const double ones = ones_[i], n = seen_[i];
      if (n == 0) {
        mean[i] = std::nanf("");
        continue;
      }
      mean[i] = static_cast<float>((ones * m.high() + (n - ones) * m.low()) / n);
    }
  }
  return mean;
}

}  // namespace fedldp
