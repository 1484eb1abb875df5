// An LDP-FL deployment's report method, both sides of it: the two-point
// mechanism on every weight over the round's announced ranges, or a vector
// randomizer on the whole update. A report travels as one piece per chunk of
// the model (ChunkModel), or, from a vector randomizer with a compact form
// (VectorRandomizer::EncodeSent), as one piece of those bytes. The
// participant opens a round and reports with it; the coordinator opens a
// round, gates, adds and averages with it, and serve announces what it
// costs; none of them asks which it holds. Make is the one place that does.
#ifndef FEDLDP_SRC_NET_LDPFL_METHOD_H_
#define FEDLDP_SRC_NET_LDPFL_METHOD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fedldp/base/status.h"
#include "fedldp/net/ldpfl_deploy.h"
#include "fedldp/random/rng.h"
#include "fedldp/wire/report_codec.h"

namespace fedldp::net_internal {

class LdpFlMethod {
 public:
  virtual ~LdpFlMethod() = default;
  // The method of the task, or why a deployment cannot serve it.
  static Result<std::unique_ptr<LdpFlMethod>> Make(const LdpFlTaskSpec& task);

  // The proven cost of one report without trusting the shuffler (d eps for
  // two-point weights, eps for a vector report), and what it is called.
  virtual double report_epsilon() const = 0;
  virtual std::string cost_name() const = 0;
  // The mechanism as a joined client states it ("eps 1 per weight").
  virtual std::string Mechanism() const = 0;
  // What the task spends, as the server announces it: a line about the
  // task, then the run's privacy statement (the simulator's, TrainLdpFl's:
  // rounds of per_round shuffled reports).
  struct Announcement {
    std::string line, privacy;
    std::optional<PrivacyRecord> record;  // the statement as records carry it
  };
  virtual Result<Announcement> Announce() const = 0;
  // How a report is cut into pieces, one per chunk (LdpFlTaskSpec::chunks).
  virtual const std::vector<ReportChunk>& chunks() const = 0;

  // Both sides, as round `round` opens with the announced per-layer ranges:
  // OK, or why the ranges are unusable. The round's aggregate starts empty.
  virtual Status Open(std::uint64_t round, std::span<const LayerRange> ranges) = 0;
  // Client: a user's report, its pieces encoded for the open round (not
  // sealed), of the weights `local` it trained from the global model.
  virtual std::vector<std::string> Report(std::vector<float> local, std::span<const float> global,
                                          Rng& rng) const = 0;
  // Server: the gate of chunk c's pieces in the open round, adding a piece
  // it admitted, and the round's mean per weight (NaN where no piece of the
  // chunk came in): an update of the global model when `updates`, else the
  // model.
  virtual ReportGate& Gate(std::size_t chunk) = 0;
  virtual void Add(std::size_t chunk, const DecodedReport& piece) = 0;
  virtual std::vector<double> Mean() const = 0;
  virtual bool updates() const = 0;
};

}  // namespace fedldp::net_internal

#endif  // FEDLDP_SRC_NET_LDPFL_METHOD_H_
