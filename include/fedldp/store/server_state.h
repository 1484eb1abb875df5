// The coordinator's durable state (SQLite, WAL): the task it serves, the
// enrolled clients, the model at the last closed round, and every report
// accepted in the open round. What the coordinator acknowledged is on disk
// before the acknowledgement leaves, so a server killed at any point (even
// SIGKILL) resumes from its last committed round with no report lost and
// none counted twice:
// - a round's accepted reports are recorded in one transaction per batch,
//   before the client hears "accepted";
// - closing a round writes the new model and deletes that round's reports in
//   one transaction; on restart the open round's recorded reports are
//   admitted again, so a client that resends one is told it is counted.
// Commits use synchronous=NORMAL: they survive the process being killed; an
// operating-system crash may lose the last commits (then clients resend what
// their own ledgers recorded). Each round's commit is then checkpointed into
// the file and synced, so a disk that cannot sync stops the server at a
// round's close. Tokens are stored only as BLAKE2b hashes.
//
// A file is trusted no further than a report: it holds every table or none
// (a new file), a deleted snapshot is not taken for a fresh start, and the
// coordinator checks the joined clients' user ranges and the snapshot
// against its task before it serves.
#ifndef FEDLDP_STORE_SERVER_STATE_H_
#define FEDLDP_STORE_SERVER_STATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fedldp/base/status.h"

struct sqlite3;

namespace fedldp {

// A deployment's identity: kDeploymentBytes random bytes in lowercase hex.
inline constexpr std::size_t kDeploymentBytes = 16;
bool IsDeploymentId(std::string_view id);

class ServerState {
 public:
  // A state held by another process (a running server, or an enrolment)
  // is refused with kAlreadyExists.
  static Result<ServerState> Open(const std::string& path);
  // A state in memory that ends with the process, for fuzzers and tests
  // (Open refuses the names SQLite reads so: a user's tokens would be lost).
  static Result<ServerState> OpenTemporary();
  ~ServerState();
  ServerState(ServerState&&) noexcept;
  ServerState& operator=(ServerState&&) noexcept;

  // Every write returns OK, or why it failed (and then nothing was written):
  // kIo when the database failed, kInvalidArgument when the request is wrong
  // for this file.

  // The task (opaque bytes, a serialized fedldp.v1.Task): stored on the first
  // call; later calls must pass the same bytes (a state file serves one task).
  Status BindTask(std::string_view task);
  // What BindTask would answer, writing nothing: OK if no task is bound or
  // `task` is the bound one.
  Status CanBindTask(std::string_view task) const;
  // The bound task's bytes; nullopt if none is bound yet (a file enrol made,
  // never served). An error if the file cannot be read.
  Result<std::optional<std::string>> Task() const;

  // Drawn (libsodium's generator) when the file is created and never
  // changed: what makes the task's name unique to this deployment in every
  // client's ledger, so that a ledger carried to another server, even one
  // serving a task of the same name, never takes that server's rounds for
  // this one's.
  const std::string& deployment() const { return deployment_; }

  // Enrolment: `count` fresh tokens (64 hex characters), recorded by hash.
  Result<std::vector<std::string>> IssueTokens(std::size_t count);
  bool KnownToken(std::string_view token) const;
  std::size_t tokens() const;

  // Clients that joined: their users are first .. first + users - 1. Join
  // gives a new client the next free user numbers; a client that joins again
  // (after a restart) keeps its numbers and must host the same count.
  struct Client {
    std::uint64_t first = 0;
    std::uint64_t users = 0;
  };
  std::optional<Client> FindClient(std::string_view token) const;
  Result<Client> Join(std::string_view token, std::uint64_t users);
  std::uint64_t joined_users() const;
  // Every joined client, by first user (an error if a range is not two
  // counts: a damaged file).
  Result<std::vector<Client>> Clients() const;
  // A lost token's replacement: the joined client hosting `user` gets a
  // fresh token (returned with its users) in place of its old one, which is
  // no longer known. Its users, their reports and the task stay as they
  // were. An error if no joined client hosts `user` (a token that never
  // joined holds no users: enrol another).
  struct Replaced {
    std::string token;
    Client client;
  };
  Result<Replaced> ReplaceToken(std::uint64_t user);
  // The same, with a new token drawn elsewhere (DrawToken) of which only
  // the hash comes here: how a running server replaces a token for
  // `fedldp enrol` (token_requests.h) without a token passing through a file.
  struct DrawnToken {
    std::string token, hash_hex;  // the token, and its hash as the state keeps it, in hex
  };
  static DrawnToken DrawToken();
  Result<Client> ReplaceTokenHash(std::uint64_t user, std::string_view hash_hex);

  // The model after the last closed round, and where the schedule stands.
  struct Snapshot {
    std::uint64_t round = 0;  // the open round
    std::uint64_t epoch = 0;
    std::uint64_t position = 0;  // index into order of the open round's first user
    std::vector<std::uint64_t> order;
    std::vector<double> weights;
    bool finished = false;
    std::uint64_t counted = 0;  // reports aggregated into the model so far
    // What the server keeps besides the model (LDP-FL: its optimiser's
    // moments and its average, ServerLearner::State); empty in a file
    // written before it was kept.
    std::vector<double> server = {};
  };
  // nullopt: no round has closed yet. An error: the snapshot is unreadable
  // (a damaged file), never taken for a fresh start.
  Result<std::optional<Snapshot>> Load() const;
  // Stores the snapshot and forgets the reports of earlier rounds, atomically.
  Status Commit(const Snapshot& snapshot);

  // Accepted reports of the open round, recorded before they are acknowledged.
  Status RecordReports(std::uint64_t round,
                       std::span<const std::pair<std::uint64_t, std::string>> reports);
  std::vector<std::pair<std::uint64_t, std::string>> Reports(std::uint64_t round) const;

  // Users whose clients said their budget is spent: they will not report
  // again in this task (recorded before the client hears it is done).
  Status Withdraw(std::span<const std::uint64_t> users);
  Result<std::vector<std::uint64_t>> Withdrawn() const;  // sorted

 private:
  static Result<ServerState> OpenAt(const std::string& path, bool temporary);
  bool Started() const;  // a snapshot was committed
  explicit ServerState(sqlite3* db);
  template <typename Body>
  std::string Transaction(Body body);
  sqlite3* db_ = nullptr;
  // The statements of every report call, prepared once (finalized before
  // the database closes).
  struct Hot;
  std::unique_ptr<Hot> hot_;
  std::string deployment_;
};

}  // namespace fedldp

#endif  // FEDLDP_STORE_SERVER_STATE_H_
