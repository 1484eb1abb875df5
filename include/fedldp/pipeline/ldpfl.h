// LDP-FL's randomizer, compact report, parameter shuffler and aggregator
// (Sun, Qian & Chen, IJCAI 2021, Algorithms 1-3).
//
// Client: every weight w of layer l is clipped to [c_l - r_l, c_l + r_l] and
// perturbed with the two-point mechanism (eq. 2) at eps: the output is
// c_l + r_l B (bit 1) or c_l - r_l B (bit 0), B = (e^eps + 1) / (e^eps - 1).
// A report is therefore exactly one bit per weight plus (c_l, r_l) per layer
// (LdpFlReport::EncodedBytes); the ranges are the ones the server announced
// for the round, so a report with any other range is rejected.
//
// Shuffler: splits every report into (parameter id, bit) messages and hands
// the aggregator, per parameter, the bits of that parameter in an order drawn
// afresh for each parameter (a uniform permutation, or Algorithm 3's random
// delays t ~ U(0, T) sorted by time). No client id and no arrival order
// survives. Aggregator: per parameter, mean = c + r B (2 ones / n - 1), from
// the integer count of ones; the count does not depend on the order, so the
// model after shuffling is bit-identical to the model aggregated directly.
#ifndef FEDLDP_PIPELINE_LDPFL_H_
#define FEDLDP_PIPELINE_LDPFL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/mechanism/two_point.h"
#include "fedldp/random/rng.h"

namespace fedldp {

struct LayerRange {
  double center = 0;
  double radius = 0;
  bool operator==(const LayerRange&) const = default;
};

// One client's perturbed model: per layer its (c, r), and one bit per weight
// (bit i % 64 of word i / 64; 1 = c + r B).
struct LdpFlReport {
  std::vector<LayerRange> ranges;
  std::vector<std::uint64_t> bits;
  std::size_t weights = 0;
  bool Bit(std::size_t i) const { return (bits[i / 64] >> (i % 64)) & 1; }
  // Wire size: two float64 per layer, then ceil(weights / 8) bytes.
  std::size_t EncodedBytes() const { return 16 * ranges.size() + (weights + 7) / 8; }
  // The same model as float32 weights, for comparison.
  std::size_t Float32Bytes() const { return 4 * weights; }
};

class LdpFlRandomizer {
 public:
  // layer_sizes: weights per layer (in model order); ranges: one per layer,
  // radius > 0. eps is per weight.
  static Result<LdpFlRandomizer> Create(double epsilon, std::vector<std::size_t> layer_sizes,
                                        std::vector<LayerRange> ranges);
  // weights: the client's trained model, sum(layer_sizes) values.
  LdpFlReport Randomize(std::span<const float> weights, Rng& rng) const;
  // The announced ranges and layer sizes, and a well-formed bit vector.
  Status Check(const LdpFlReport& report) const;  // OK if valid, else the reason
  // The value bit b of weight i stands for.
  double Decode(std::size_t layer, bool bit) const {
    return bit ? mechanisms_[layer].high() : mechanisms_[layer].low();
  }

  double epsilon() const { return epsilon_; }
  std::size_t weights() const { return weights_; }
  const std::vector<std::size_t>& layer_sizes() const { return layer_sizes_; }
  const std::vector<LayerRange>& ranges() const { return ranges_; }
  const TwoPointMechanism& mechanism(std::size_t layer) const { return mechanisms_[layer]; }

 private:
  LdpFlRandomizer() = default;
  double epsilon_ = 0;
  std::size_t weights_ = 0;
  std::vector<std::size_t> layer_sizes_;
  std::vector<LayerRange> ranges_;
  std::vector<TwoPointMechanism> mechanisms_;
};

// What the shuffler hands the server for one round: per parameter, the bits
// of the n reports, in an order drawn for that parameter alone. Column j is
// words [j W, (j + 1) W) with W = ceil(n / 64), bit k = k-th message.
struct ShuffledRound {
  std::size_t reports = 0;
  std::size_t weights = 0;
  std::vector<LayerRange> ranges;
  std::vector<std::uint64_t> columns;
  std::size_t words_per_column() const { return (reports + 63) / 64; }
  bool Bit(std::size_t parameter, std::size_t k) const {
    return (columns[parameter * words_per_column() + k / 64] >> (k % 64)) & 1;
  }
};

enum class ShuffleSchedule {
  kPermutation,  // a uniform permutation per parameter (Fisher-Yates)
  kRandomDelay,  // Algorithm 3: each message waits t ~ U(0, T); released by time
};

class ParameterShuffler {
 public:
  explicit ParameterShuffler(const LdpFlRandomizer& randomizer,
                             ShuffleSchedule schedule = ShuffleSchedule::kPermutation);
  // Validates and splits one report; a rejected report leaves no trace.
  // OK if accepted, else the reason.
  Status Submit(const LdpFlReport& report);
  std::size_t reports() const { return reports_.size(); }
  // Shuffles every parameter's messages with rng and forgets the reports.
  ShuffledRound Release(Rng& rng);

 private:
  const LdpFlRandomizer& randomizer_;
  ShuffleSchedule schedule_;
  std::vector<LdpFlReport> reports_;
};

// A deployment's unit of shuffling: a report is cut into pieces of at most
// `chunk` consecutive weights, never across a layer, and each piece travels
// (sealed) on its own, so the shuffler can permute every chunk's pieces
// across clients without reading them. Piece j of a report is an LdpFlReport
// of one layer's range and end - begin weights.
struct ReportChunk {
  std::size_t layer = 0;
  std::size_t begin = 0, end = 0;  // weights [begin, end) of the model
};
std::vector<ReportChunk> ChunkModel(const std::vector<std::size_t>& layer_sizes, std::size_t chunk);
LdpFlReport PieceOf(const LdpFlReport& report, const ReportChunk& chunk);

// Mean per weight from integer counts of ones.
class LdpFlAggregator {
 public:
  explicit LdpFlAggregator(const LdpFlRandomizer& randomizer);
  // Direct path (no shuffler): one client's report. OK if accepted, else why.
  Status Add(const LdpFlReport& report);
  // Shuffled path: a whole round at once. OK if accepted, else why.
  Status AddShuffled(const ShuffledRound& round);
  // Deployed path: one piece (PieceOf) of some client's report, for the
  // chunk given; checked against the chunk's layer range. OK if accepted.
  Status AddPiece(const ReportChunk& chunk, const LdpFlReport& piece);
  std::size_t count() const { return count_; }  // whole reports (Add, AddShuffled)
  std::size_t rejected() const { return rejected_; }
  // Mean per weight, over the reports or pieces that weight received; empty
  // if nothing was accepted, NaN for a weight no piece reached.
  std::vector<float> Mean() const;

 private:
  const LdpFlRandomizer& randomizer_;
  std::vector<std::uint32_t> ones_, seen_;
  std::size_t count_ = 0, pieces_ = 0, rejected_ = 0;
};

}  // namespace fedldp

#endif  // FEDLDP_PIPELINE_LDPFL_H_
