// The LDP-FL deployment as plain logic (no network): server, client and
// shuffler, each a separate party.
//
// - LdpFlCoordinator (the server): users join through their clients; every
//   round it draws round(fraction N) users with the secure generator, and
//   announces the global model and the round's ranges. It never receives a
//   report from a client: the shuffler delivers batches of sealed pieces,
//   which it opens, passes through the very gate and aggregator the
//   simulator's server uses (ReportGate with each chunk's LdpFlRandomizer,
//   LdpFlAggregator::AddPiece; a vector randomizer's pieces: their length and
//   finiteness, then their mean per chunk), and records in ServerState before it
//   acknowledges. Rounds close as FedSel's do (complete, clients gone quiet,
//   deadline; minimum participation), and the state survives SIGKILL. A
//   closed round's estimate steps the model through the simulator's server
//   optimiser and average (ServerLearner, fl/server_optimizer.h), whose
//   state the snapshot keeps; a chunk none of whose pieces got through
//   keeps its weights (its pseudo-gradient is 0).
// - LdpFlParticipant (a client): per user, the simulator's local training
//   and LdpFlRandomizer::Randomize with SecureRng; the report is cut into
//   chunks (ChunkModel), every piece sealed to the server's key; the cost,
//   d eps per report (what is proven without trusting the shuffler), is
//   charged to the user's ledger account before anything leaves, with the
//   sealed pieces, which are what a retry resends. With a vector randomizer
//   (config.vector): PrivatizeUpdate, the simulator's, on the whole update;
//   the report's chunks travel as VectorReport pieces and cost eps.
//   (The server then checks each piece's length and finiteness: the
//   randomizer's own check needs the whole report, which it never sees.)
//   Both parties hold the task's method (src/net/ldpfl_method.h), the one
//   place that knows which of the two it is.
// - ShufflerCore (a third party): holds the sealed pieces of a round, one
//   submission per user (vouched for by the server), and forwards a batch
//   only when it has at least `min_batch` users and every user still
//   expected has come in (or the round's deadline nears). A batch names its
//   contributors sorted, never which piece is whose: every chunk's pieces are
//   permuted on their own with the secure generator, so the server can link
//   a piece to no client, nor two pieces (two chunks) to each other.
//
// Trust: the shuffler cannot read or alter a piece (sealed boxes); it is
// trusted not to collude with the server and not to inject pieces (anyone
// can seal to the public key). The server learns who took part in a round,
// which it knows anyway from who polls.
#ifndef FEDLDP_NET_LDPFL_DEPLOY_H_
#define FEDLDP_NET_LDPFL_DEPLOY_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fedldp/data/dataset.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/net/roster.h"
#include "fedldp/net/round_coordinator.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/store/privacy_ledger.h"
#include "fedldp/store/server_state.h"
#include "fedldp/wire/report_codec.h"
#include "fedldp/wire/sealed_box.h"

namespace fedldp {

// What the server announces.
struct LdpFlTaskSpec {
  std::string id;
  std::string deployment;  // the server state's identity (ServerState::deployment)
  // arch, rounds, local_epochs, batch, learning_rate, fraction, epsilon,
  // adaptive, fixed_range, adaptive_margin, perturb_updates; randomizer and
  // clip (twopoint, or privunitg / fastprojunit on the whole update).
  LdpFlConfig config;
  std::uint64_t users = 0;  // N
  double input_mean = 0, input_sd = 1;
  std::uint64_t chunk = 256;  // weights per sealed piece, at most
  std::string public_key;     // the server's, 32 bytes
  std::vector<std::size_t> layer_sizes;
  // config.arch a TorchScript file (the operator's network): its bytes,
  // announced so that every client runs the same network (ModelFileOf).
  std::string model;
  // The classes as the server's file names them (its labels as written), so
  // that a client's file, which may hold some classes only, is labelled
  // alike (TaskData); empty for a built-in dataset.
  std::vector<std::string> classes;

  std::size_t weights() const;
  std::uint64_t per_round() const;  // users drawn per round
  // The statement's n, each report shuffled among at least so many: the
  // smallest batch the server takes (ShuffleBatchOf config.shuffle_batch).
  std::uint64_t shuffle_batch() const;
  // config.disjoint_rounds: rounds per epoch, floor(users / per_round), cut
  // from one random order; else 1 (every round draws anew).
  std::uint64_t rounds_per_epoch() const;
  // The most reports a user sends: every round, or with disjoint rounds one
  // per epoch begun (LdpFlReportsPerClient).
  std::uint64_t reports_per_user() const;
  // The proven cost of one report without trusting the shuffler: d eps for
  // two-point weights, eps for a vector randomizer's report (the method's;
  // NaN for a task no deployment can serve).
  double ReportEpsilon() const;
  // How a report is cut into sealed pieces: chunks of at most `chunk`
  // weights within a layer (ChunkModel), or one chunk of the whole model
  // for a vector randomizer that sends compact bytes (privunitg-seed: 16
  // bytes a report).
  std::vector<ReportChunk> chunks() const;
  Status Check() const;  // OK if usable, else why not
};

// The task a server announces for `config`, `users` users and `chunk`:
// with the inputs' standardisation over `rows` of `train` (InputMomentsOf,
// as the simulator computes it over the same rows), config.arch's layer
// sizes and the server's public key; checked.
Result<LdpFlTaskSpec> MakeLdpFlTask(std::string id, const LdpFlConfig& config, std::uint64_t users,
                                    const Dataset& train, std::span<const std::size_t> rows,
                                    std::string public_key, std::uint64_t chunk = 256);

// Where a client keeps an announced network (`model`, TorchScript bytes):
// a file named by their BLAKE2b hash in the temporary folder, written
// (0600) if absent or different; its path, for config.arch.
Result<std::string> ModelFileOf(std::string_view model);

namespace net_internal {
class LdpFlMethod;  // the task's reports, both sides (src/net/ldpfl_method.h)
}  // namespace net_internal

class LdpFlCoordinator : public RoundCoordinator {
 public:
  ~LdpFlCoordinator() override;
  // After every closed round (rounds closed so far, the model released:
  // the averaged one, with iterate averaging). It runs under
  // the coordinator's lock, where polls wait: keep it quick (copy the model;
  // evaluate elsewhere), or clients go unheard and are judged quiet.
  using OnRound = std::function<void(std::uint64_t, std::span<const double>)>;

  // OK if the task and policy can be served, else why not: what Create
  // checks first. Call it before writing the task into a state file.
  static Status Check(const LdpFlTaskSpec& spec, const RoundPolicy& policy);

  // `initial`: the model to start from, if the state holds none yet. The
  // spec's deployment is the state's (filled in when empty; another is an
  // error).
  static Result<std::unique_ptr<LdpFlCoordinator>> Create(const LdpFlTaskSpec& spec,
                                                          const RoundPolicy& policy,
                                                          ServerState state, ServerKeys keys,
                                                          std::vector<double> initial, Log log = {},
                                                          OnRound on_round = {});

  // Join, Admit, Withdraw, Vouch, RoundInfo, Tick and weights: the shared
  // round lifecycle (round_coordinator.h).
  struct Poll {
    FedSelCoordinator::Poll round;   // as FedSel's
    std::vector<LayerRange> ranges;  // kRound: the round's (c, r) per layer
  };
  Poll PollRound(std::string_view token, std::string_view session, Clock::time_point now);

  using Info = ShuffleInfo;

  using Delivery = ShuffleDelivery;
  using Delivered = ShuffleDelivered;
  Delivered Deliver(const Delivery& batch, Clock::time_point now);

  struct Stats {
    std::uint64_t round = 0;  // rounds closed in all, over every run
    std::uint64_t rounds_closed = 0;
    std::uint64_t rounds_without_update = 0;
    std::uint64_t batches = 0, pieces_accepted = 0, pieces_rejected = 0, batches_refused = 0;
    std::uint64_t counted = 0;  // user reports in the model, over every run
    std::uint64_t withdrawn = 0;
    bool started = false, finished = false;
  };
  Stats stats() const;
  const LdpFlTaskSpec& spec() const { return spec_; }
  // The model the rounds closed so far release (weights() is the one the
  // clients train from: the same without iterate averaging).
  std::vector<double> released() const;

 private:
  LdpFlCoordinator(const LdpFlTaskSpec& spec, const RoundPolicy& policy, ServerState state,
                   ServerKeys keys, Log log, OnRound on_round);
  void Start(Clock::time_point now) override;
  bool RoundOpen() const override { return !ranges_.empty(); }
  bool Reported(std::uint64_t user) const override { return delivered_.contains(user); }
  std::size_t Chunks() const override { return chunks_.size(); }
  std::uint64_t PieceBytes() const override { return piece_bytes_; }
  std::uint64_t ShuffleBatch() const override { return spec_.shuffle_batch(); }
  void CloseRound(Clock::time_point now, const char* why) override;
  std::uint64_t ShownRound() const override { return snap_.round + 1; }
  void DrawUsers();
  void SetRoundUsers();  // round_users_ from snap_
  Status OpenRound(Clock::time_point now);
  // The closed round's estimate of the new model, from the pieces' mean.
  std::vector<double> Estimate() const;

  const LdpFlTaskSpec spec_;
  const ServerKeys keys_;
  const OnRound on_round_;
  const std::vector<ReportChunk> chunks_;
  const std::unique_ptr<net_internal::LdpFlMethod> method_;

  // snap_.order (the base's): the open round's users, sorted; with disjoint
  // rounds the epoch's order of all users, the round's from `position` on.
  // The open round (its users, delivered set and times: the base's).
  std::vector<LayerRange> ranges_;  // the open round's (empty: no round open)
  std::uint64_t piece_bytes_ = 0;   // the open round's largest sealed piece
  ServerLearner learner_;           // its state: snap_.server
  std::vector<double> released_;
  Stats stats_;
};

class LdpFlParticipant {
 public:
  // shards: the local rows of `data` of each hosted user; `data` and
  // `ledger` must outlive the participant.
  static Result<LdpFlParticipant> Create(const LdpFlTaskSpec& task, const Dataset& data,
                                         std::vector<std::vector<std::size_t>> shards,
                                         PrivacyLedger& ledger);
  void SetFirstUser(std::uint64_t first) { first_user_ = first; }
  std::uint64_t users() const { return shards_.size(); }

  struct Answer {
    // (user, sealed pieces in chunk order)
    std::vector<std::pair<std::uint64_t, std::vector<std::string>>> reports;
    std::vector<std::string> refusals;  // one line each
    // Users whose budget cannot pay for a report: for good (tell the server).
    std::vector<std::uint64_t> exhausted;
  };
  Answer Respond(std::uint64_t round, std::span<const double> weights,
                 std::span<const LayerRange> ranges, std::span<const std::uint64_t> users);
  // As FedSelParticipant::Exhausted.
  std::vector<std::uint64_t> Exhausted() const;
  double report_epsilon() const;
  // The mechanism, and what a report's cost is called ("d eps"), as the
  // client states them on joining.
  std::string Mechanism() const;
  std::string cost_name() const;

  LdpFlParticipant(LdpFlParticipant&&) noexcept;
  LdpFlParticipant& operator=(LdpFlParticipant&&) noexcept;
  ~LdpFlParticipant();

 private:
  LdpFlParticipant(const LdpFlTaskSpec& task, TaskData data,
                   std::vector<std::vector<std::size_t>> shards, PrivacyLedger& ledger,
                   NeuralNet net, std::unique_ptr<net_internal::LdpFlMethod> method);
  std::string Account(std::size_t local) const;

  LdpFlTaskSpec task_;
  TaskData data_;  // the local rows, labelled with the task's classes
  std::vector<std::vector<std::size_t>> shards_;
  PrivacyLedger* ledger_;
  NeuralNet net_;
  std::unique_ptr<net_internal::LdpFlMethod> method_;  // the task's reports
  std::string ledger_task_;                            // LedgerTaskKey of the task
  std::uint64_t first_user_ = 0;
  std::unique_ptr<SecureRng> rng_;
};

// Several byte strings as one (length-prefixed), and back: how a user's
// sealed pieces are kept in its ledger entry.
std::string PackPieces(std::span<const std::string> pieces);
Result<std::vector<std::string>> UnpackPieces(std::string_view bytes);

struct ShufflerPolicy {
  std::size_t min_batch = 10;  // users per forwarded batch, at least
  std::chrono::milliseconds flush_before{
      2000};  // forward what is held this long before the deadline
};

class ShufflerCore {
 public:
  using Log = std::function<void(const std::string&)>;
  explicit ShufflerCore(ShufflerPolicy policy, Log log = {});

  // The server's latest view of the round (LdpFlCoordinator::Info). A view
  // of an earlier round than the one known is stale and ignored.
  void Update(const LdpFlCoordinator::Info& info);
  // A client names `round`, which this view has not seen open: ask the
  // server for a fresh view before refusing (clients hear of a new round
  // before the shuffler's next look).
  bool Behind(std::uint64_t round) const;
  // A client's submission; `vouch` asks the server whether the token's
  // client may report for this user in this round (OK: yes). Returns OK if
  // held (or already held or delivered), else why not.
  Status Shuffle(const std::string& token, std::uint64_t round, std::uint64_t user,
                 std::vector<std::string> pieces, const std::function<Status()>& vouch);
  // The same, reading the pieces (`read`; nullopt: they could not be read)
  // only once the server vouched for the caller: a refusal before that
  // never reads them. A retry of pieces held or sent on for the same token
  // is answered OK without reading them. A token refused kMaxRefusals times
  // in a round (the server did not vouch, or pieces read were no report)
  // is refused unread and unasked, ResourceExhausted, until the next round:
  // each refusal had cost the server a Vouch call, or this process a body
  // of up to 64 MB, without end. Pieces read that are no report count once
  // for each report's worth of bytes they carry (the server's piece_bytes
  // per chunk), so junk of many reports' size ends the token's round at
  // once: what a token makes this process read in a round is about what
  // its reports need, and one call.
  using ReadPieces = std::function<std::optional<std::vector<std::string>>()>;
  Status Receive(const std::string& token, std::uint64_t round, std::uint64_t user,
                 const ReadPieces& read, const std::function<Status()>& vouch);
  static constexpr std::uint64_t kMaxRefusals = 64;
  // A batch to forward now, if the rule allows one; its users count as
  // forwarded. Put it back with Return if the server could not be reached.
  std::optional<LdpFlCoordinator::Delivery> TakeBatch();
  void Return(LdpFlCoordinator::Delivery batch);

  struct Stats {
    std::uint64_t held = 0, refused = 0, batches = 0, forwarded = 0, dropped = 0;
  };
  Stats stats() const;
  // This process among the server's shufflers (32 hex digits, drawn at
  // construction): how the server tells several shufflers apart.
  const std::string& instance() const { return instance_; }
  // Whether the next view should list the round's delivered users: not yet
  // had for the round this core knows (or none known).
  bool WantsDelivered() const;

 private:
  void Say(const std::string& line) const;
  // The fewest users a batch holds: the policy's and the server's (the n
  // of the task's statement), whichever is larger; under mu_.
  std::uint64_t SmallestBatch() const;
  // The answer to a submission that needs no word from the server (no open
  // round, another round, a token refused too often, a retry of pieces held
  // or sent on); nullopt: ask the server, and the submission counts as
  // being received (receiving_) until Receive ends. Takes mu_.
  std::optional<Status> AnswerUnasked(const std::string& token, std::uint64_t round,
                                      std::uint64_t user);
  // Holds `weight` refusals in info_.round against `token` (under mu_).
  void CountRefusal(const std::string& token, std::uint64_t weight = 1);
  // Why `pieces` are no report of the open round ("" if they may be one),
  // under mu_: a count other than its chunks, or a piece larger than the
  // server takes.
  std::string Misshapen(const std::vector<std::string>& pieces) const;
  // How many reports' worth of bytes `pieces` carry, at least 1 (1 when
  // the server has not said its piece size), under mu_.
  std::uint64_t ReportsWorth(const std::vector<std::string>& pieces) const;
  struct Held {
    std::string token;
    std::vector<std::string> pieces;
  };
  const ShufflerPolicy policy_;
  const Log log_;
  const std::string instance_;
  mutable std::mutex mu_;
  LdpFlCoordinator::Info info_;
  bool known_ = false;
  std::optional<std::uint64_t> listed_round_;  // the round whose delivered users were listed
  std::map<std::uint64_t, Held> pending_;      // user -> submission, for info_.round
  // Submissions between their vouch and their end (held or refused): users
  // the server counts as held here that pending_ may not have yet.
  std::uint64_t receiving_ = 0;
  // Users of info_.round sent on, with their token ("": delivered before
  // this process started).
  std::map<std::uint64_t, std::string> forwarded_;
  // Refusals of each token in info_.round (at most kMaxTokensCounted).
  std::unordered_map<std::string, std::uint64_t> refusals_;
  static constexpr std::size_t kMaxTokensCounted = 1 << 16;
  std::optional<LdpFlCoordinator::Delivery> returned_;
  SecureRng rng_;
  bool warned_small_ = false;
  Stats stats_;
};

}  // namespace fedldp

#endif  // FEDLDP_NET_LDPFL_DEPLOY_H_
