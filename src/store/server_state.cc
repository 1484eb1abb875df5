#include "fedldp/store/server_state.h"

#include <sodium.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "sqlite_util.h"

namespace fedldp {

using sqlite::Exec;
using sqlite::Message;
using sqlite::Statement;

namespace {

std::string TokenHash(std::string_view token) {
  unsigned char hash[32];
  crypto_generichash(hash, sizeof hash, reinterpret_cast<const unsigned char*>(token.data()),
                     token.size(), nullptr, 0);
  return std::string(reinterpret_cast<const char*>(hash), sizeof hash);
}

// n random bytes from libsodium's generator, in lowercase hex.
std::string RandomHex(std::size_t n) {
  std::vector<unsigned char> raw(n);
  randombytes_buf(raw.data(), raw.size());
  std::string hex(2 * n + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), raw.data(), raw.size());
  hex.pop_back();
  return hex;
}

template <typename T>
std::string Pack(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> Unpack(std::string_view bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

}  // namespace

bool IsDeploymentId(std::string_view id) {
  return id.size() == 2 * kDeploymentBytes && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

struct ServerState::Hot {
  explicit Hot(sqlite3* db)
      : begin(db, "BEGIN IMMEDIATE"),
        commit(db, "COMMIT"),
        rollback(db, "ROLLBACK"),
        insert_report(db, "INSERT INTO reports (round, user, bytes) VALUES (?, ?, ?)") {}
  bool ok() const { return begin.ok() && commit.ok() && rollback.ok() && insert_report.ok(); }
  Statement begin, commit, rollback, insert_report;
};

namespace {

// Steps a statement that returns no rows, and resets it.
bool Run(Statement& s) {
  const bool done = s.Step() == SQLITE_DONE;
  s.Reset();
  return done;
}

}  // namespace

// Runs `body` in an IMMEDIATE transaction; returns "" or why it failed
// (and then nothing was written).
template <typename Body>
std::string ServerState::Transaction(Body body) {
  if (!Run(hot_->begin)) return Message(db_, "server state busy");
  std::string why = body();
  if (why.empty() && Run(hot_->commit)) return "";
  if (why.empty()) why = Message(db_, "server state commit");
  Run(hot_->rollback);
  return why;
}

namespace {
// A transaction's answer as a Status: the database failed.
Status Stored(std::string why) {
  if (why.empty()) return {};
  return Error{std::move(why), ErrorCode::kIo};
}

// The tables of a state file. A file holds all of them (a new file gets them
// in one transaction) or none (then it is new): a file missing some was
// edited or damaged, and re-creating the missing ones would start its task
// again under the same deployment identity, a fresh schedule whose rounds
// the clients' ledgers already hold.
constexpr const char* kTables[] = {"task",    "tokens",    "snapshot",
                                   "reports", "withdrawn", "deployment"};

// A new file's tables, created in the caller's IMMEDIATE transaction (which
// takes the write lock even when nothing is written; exclusive mode keeps
// it), with the file's deployment identity.
std::string SchemaSql() {
  return "CREATE TABLE task (id INTEGER PRIMARY KEY CHECK (id = 1),"
         " bytes BLOB NOT NULL);"
         "CREATE TABLE tokens (hash BLOB PRIMARY KEY, first INTEGER,"
         " users INTEGER);"
         "CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1),"
         " round INTEGER NOT NULL, epoch INTEGER NOT NULL, position INTEGER NOT NULL,"
         " ord BLOB NOT NULL, weights BLOB NOT NULL, finished INTEGER NOT NULL,"
         " counted INTEGER NOT NULL, server BLOB NOT NULL DEFAULT x'');"
         "CREATE TABLE reports (round INTEGER NOT NULL, user INTEGER NOT NULL,"
         " bytes BLOB NOT NULL, PRIMARY KEY (round, user));"
         "CREATE TABLE withdrawn (user INTEGER PRIMARY KEY);"
         "CREATE TABLE deployment (id INTEGER PRIMARY KEY CHECK (id = 1),"
         " value TEXT NOT NULL);"
         "INSERT INTO deployment (id, value) VALUES (1, '" +
         RandomHex(kDeploymentBytes) + "');";
}

// The index that finds the users joined so far (the largest first + users)
// without reading every token: a Join read all of them, O(tokens) each,
// 0.2 s a join with 1,000,000 enrolled.
constexpr const char* kIndexSql = "CREATE INDEX IF NOT EXISTS tokens_first ON tokens (first);";

// What brings a file written by an earlier version up to the schema: the
// snapshot's `server` column (empty: such a server kept nothing else), the
// tokens' index.
std::string MigrationSql(sqlite3* db) {
  Statement columns(db, "SELECT name FROM pragma_table_info('snapshot')");
  while (columns.ok() && columns.Step() == SQLITE_ROW) {
    if (columns.Blob(0) == "server") return kIndexSql;
  }
  return std::string("ALTER TABLE snapshot ADD COLUMN server BLOB NOT NULL DEFAULT x'';") +
         kIndexSql;
}

// True if the file is new (no table), false if it holds every table, or an
// error naming the missing ones.
Result<bool> IsNewState(sqlite3* db, const std::string& path) {
  Statement names(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
  if (!names.ok()) return Error{Message(db, path + " is not a usable server state")};
  std::set<std::string, std::less<>> present;
  while (names.Step() == SQLITE_ROW) present.emplace(names.Blob(0));
  std::string missing;
  for (const char* table : kTables) {
    if (!present.contains(std::string_view(table))) {
      missing += std::string(missing.empty() ? "" : ", ") + table;
    }
  }
  if (present.empty()) return true;
  if (missing.empty()) return false;
  return Error{"server state " + path + " is damaged: its table(s) " + missing +
               " are missing (a state file is written whole; restore it from a copy, or "
               "start a new deployment with a new --state file)"};
}

// A damaged page is found at open, not when a round closes (or, worse, read
// as "no model yet").
Status CheckIntact(sqlite3* db, const std::string& path) {
  Statement check(db, "PRAGMA quick_check");
  const bool ran = check.ok() && check.Step() == SQLITE_ROW;
  std::string verdict = ran ? std::string(check.Blob(0)) : Message(db, "quick_check");
  std::replace(verdict.begin(), verdict.end(), '\n', ' ');  // one line
  if (verdict != "ok") return Error{"server state " + path + " is damaged: " + verdict};
  return {};
}

}  // namespace

ServerState::ServerState(sqlite3* db) : db_(db) {}

Result<ServerState> ServerState::Open(const std::string& path) { return OpenAt(path, false); }

Result<ServerState> ServerState::OpenTemporary() { return OpenAt(":memory:", true); }

Result<ServerState> ServerState::OpenAt(const std::string& path, bool temporary) {
  if (sodium_init() < 0) return Error{"libsodium cannot be initialised"};
  sqlite3* db = nullptr;
  FEDLDP_RETURN_IF_ERROR(sqlite::OpenDatabase(path, &db, "server state", temporary));
  ServerState state(db);
  // One server per state: in exclusive locking mode the file stays locked
  // from the first write transaction (the schema's, below) until the state
  // closes, so a second server, or `fedldp enrol`, on a state in use is
  // refused.
  const bool configured = Exec(db,
                               "PRAGMA locking_mode=EXCLUSIVE; PRAGMA busy_timeout=1000;"
                               " PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  auto in_use = [&] {
    const int code = sqlite3_errcode(db);
    return code == SQLITE_BUSY || code == SQLITE_LOCKED;
  };
  const std::string in_use_error = "server state " + path +
                                   " is in use by another process (a state file is held by "
                                   "one server, or one enrolment, at a time: stop the server "
                                   "to enrol more clients, and start it again to resume; a "
                                   "lost token is replaced with the server running)";
  if (in_use()) return Error{in_use_error, ErrorCode::kAlreadyExists};
  if (!configured || !Exec(db, "BEGIN IMMEDIATE")) {
    if (in_use()) return Error{in_use_error, ErrorCode::kAlreadyExists};
    return Error{Message(db, path + " is not a usable server state")};
  }
  const Result<bool> fresh = IsNewState(db, path);
  if (!fresh.ok()) {
    Exec(db, "ROLLBACK");
    return Error{fresh.error()};
  }
  const std::string schema = (*fresh ? SchemaSql() + kIndexSql : MigrationSql(db)) + "COMMIT;";
  if (!Exec(db, schema.c_str())) {
    const std::string why = Message(db, path + " is not a usable server state");
    Exec(db, "ROLLBACK");
    return Error{why};
  }
  FEDLDP_RETURN_IF_ERROR(CheckIntact(db, path));
  {
    Statement find(db, "SELECT value FROM deployment WHERE id = 1");
    if (!find.ok()) return Error{Message(db, path + " is not a usable server state")};
    if (find.Step() != SQLITE_ROW) {
      return Error{"server state " + path + " is damaged: its deployment identity is missing"};
    }
    state.deployment_ = std::string(find.Blob(0));
    if (!IsDeploymentId(state.deployment_)) {
      return Error{"server state " + path + " is damaged: its deployment identity is not " +
                   std::to_string(2 * kDeploymentBytes) + " hex digits"};
    }
  }
  state.hot_ = std::make_unique<Hot>(db);
  if (!state.hot_->ok()) return Error{Message(db, path + " is not a usable server state")};
  return state;
}

ServerState::~ServerState() {
  hot_.reset();
  sqlite3_close(db_);
}
ServerState::ServerState(ServerState&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)),
      hot_(std::move(o.hot_)),
      deployment_(std::move(o.deployment_)) {}
ServerState& ServerState::operator=(ServerState&& o) noexcept {
  if (this != &o) {
    hot_.reset();
    sqlite3_close(db_);
    db_ = std::exchange(o.db_, nullptr);
    hot_ = std::move(o.hot_);
    deployment_ = std::move(o.deployment_);
  }
  return *this;
}

namespace {
// The file's header says a snapshot was committed (PRAGMA user_version,
// written in the snapshot's transaction): a missing snapshot is then a
// deleted one, never a fresh start.
constexpr std::int64_t kStartedVersion = 1;
constexpr const char* kStartedMark = "PRAGMA user_version = 1";
constexpr const char* kAnotherTask =
    "this state file belongs to another task (or another configuration of it); use a new "
    "--state file";
}  // namespace

Status ServerState::CanBindTask(std::string_view task) const {
  Statement find(db_, "SELECT bytes FROM task WHERE id = 1");
  if (!find.ok()) return Error{Message(db_, "server state"), ErrorCode::kIo};
  if (find.Step() == SQLITE_ROW && find.Blob(0) != task) {
    return Error{kAnotherTask, ErrorCode::kInvalidArgument};
  }
  return {};
}

Result<std::optional<std::string>> ServerState::Task() const {
  Statement find(db_, "SELECT bytes FROM task WHERE id = 1");
  if (!find.ok()) return Error{Message(db_, "server state"), ErrorCode::kIo};
  if (find.Step() != SQLITE_ROW) return std::optional<std::string>();
  return std::optional<std::string>(std::string(find.Blob(0)));
}

Status ServerState::BindTask(std::string_view task) {
  bool other = false;
  const std::string why = Transaction([&]() -> std::string {
    Statement find(db_, "SELECT bytes FROM task WHERE id = 1");
    if (!find.ok()) return Message(db_, "server state");
    if (find.Step() == SQLITE_ROW) {
      other = find.Blob(0) != task;
      return other ? kAnotherTask : "";
    }
    Statement insert(db_, "INSERT INTO task (id, bytes) VALUES (1, ?)");
    insert.BindBlob(1, task);
    return insert.Step() == SQLITE_DONE ? "" : Message(db_, "server state");
  });
  if (other) return Error{why, ErrorCode::kInvalidArgument};
  return Stored(why);
}

Result<std::vector<std::string>> ServerState::IssueTokens(std::size_t count) {
  std::vector<std::string> tokens;
  const std::string why = Transaction([&]() -> std::string {
    Statement insert(db_, "INSERT INTO tokens (hash) VALUES (?)");
    if (!insert.ok()) return Message(db_, "server state");
    for (std::size_t i = 0; i < count; ++i) {
      tokens.push_back(RandomHex(32));
      insert.Reset();
      insert.BindBlob(1, TokenHash(tokens.back()));
      if (insert.Step() != SQLITE_DONE) return Message(db_, "server state");
    }
    return "";
  });
  if (!why.empty()) return Error{why};
  return tokens;
}

bool ServerState::KnownToken(std::string_view token) const {
  Statement find(db_, "SELECT 1 FROM tokens WHERE hash = ?");
  find.BindBlob(1, TokenHash(token));
  return find.ok() && find.Step() == SQLITE_ROW;
}

std::size_t ServerState::tokens() const {
  Statement count(db_, "SELECT COUNT(*) FROM tokens");
  return count.ok() && count.Step() == SQLITE_ROW ? static_cast<std::size_t>(count.Int(0)) : 0;
}

std::optional<ServerState::Client> ServerState::FindClient(std::string_view token) const {
  Statement find(db_, "SELECT first, users FROM tokens WHERE hash = ? AND users IS NOT NULL");
  find.BindBlob(1, TokenHash(token));
  if (!find.ok() || find.Step() != SQLITE_ROW) return std::nullopt;
  return Client{static_cast<std::uint64_t>(find.Int(0)), static_cast<std::uint64_t>(find.Int(1))};
}

ServerState::DrawnToken ServerState::DrawToken() {
  DrawnToken drawn;
  drawn.token = RandomHex(32);
  const std::string hash = TokenHash(drawn.token);
  drawn.hash_hex.assign(2 * hash.size() + 1, '\0');
  sodium_bin2hex(drawn.hash_hex.data(), drawn.hash_hex.size(),
                 reinterpret_cast<const unsigned char*>(hash.data()), hash.size());
  drawn.hash_hex.pop_back();
  return drawn;
}

Result<ServerState::Replaced> ServerState::ReplaceToken(std::uint64_t user) {
  DrawnToken drawn = DrawToken();
  FEDLDP_ASSIGN_OR_RETURN(const Client client, ReplaceTokenHash(user, drawn.hash_hex));
  return Replaced{std::move(drawn.token), client};
}

Result<ServerState::Client> ServerState::ReplaceTokenHash(std::uint64_t user,
                                                          std::string_view hash_hex) {
  std::string hash(32, '\0');
  std::size_t length = 0;
  if (hash_hex.size() != 64 ||
      sodium_hex2bin(reinterpret_cast<unsigned char*>(hash.data()), hash.size(), hash_hex.data(),
                     hash_hex.size(), nullptr, &length, nullptr) != 0 ||
      length != hash.size()) {
    return Error{"a token's hash is 64 hex digits", ErrorCode::kInvalidArgument};
  }
  Client out;
  const std::string why = Transaction([&]() -> std::string {
    Statement find(db_,
                   "SELECT hash, first, users FROM tokens WHERE users IS NOT NULL AND first <= ?1 "
                   "AND ?1 - first < users");
    if (!find.ok()) return Message(db_, "server state");
    find.Bind(1, static_cast<std::int64_t>(std::min<std::uint64_t>(user, INT64_MAX)));
    if (user > static_cast<std::uint64_t>(INT64_MAX) || find.Step() != SQLITE_ROW) {
      return "no joined client hosts user " + std::to_string(user) +
             " (a token that never joined holds no users: enrol another instead)";
    }
    const std::string old(find.Blob(0));
    out = {static_cast<std::uint64_t>(find.Int(1)), static_cast<std::uint64_t>(find.Int(2))};
    Statement update(db_, "UPDATE tokens SET hash = ? WHERE hash = ?");
    if (!update.ok()) return Message(db_, "server state");
    update.BindBlob(1, hash);
    update.BindBlob(2, old);
    return update.Step() == SQLITE_DONE ? "" : Message(db_, "server state");
  });
  if (!why.empty()) return Error{why};
  return out;
}

Result<ServerState::Client> ServerState::Join(std::string_view token, std::uint64_t users) {
  if (users == 0) return Error{"a client must host at least one user"};
  if (users > (std::uint64_t{1} << 40)) return Error{"too many users for one client"};
  Client client;
  const std::string why = Transaction([&]() -> std::string {
    Statement find(db_, "SELECT first, users FROM tokens WHERE hash = ?");
    find.BindBlob(1, TokenHash(token));
    if (!find.ok() || find.Step() != SQLITE_ROW) return "unknown token (not enrolled)";
    if (sqlite3_column_type(find.get(), 1) != SQLITE_NULL) {
      client = {static_cast<std::uint64_t>(find.Int(0)), static_cast<std::uint64_t>(find.Int(1))};
      return client.users == users ? ""
                                   : "this token joined with " + std::to_string(client.users) +
                                         " users; it cannot rejoin with " + std::to_string(users);
    }
    client.first = joined_users();
    client.users = users;
    Statement update(db_, "UPDATE tokens SET first = ?, users = ? WHERE hash = ?");
    update.Bind(1, static_cast<std::int64_t>(client.first));
    update.Bind(2, static_cast<std::int64_t>(client.users));
    update.BindBlob(3, TokenHash(token));
    return update.Step() == SQLITE_DONE ? "" : Message(db_, "server state");
  });
  if (!why.empty()) return Error{why};
  return client;
}

std::uint64_t ServerState::joined_users() const {
  // Clients take consecutive users (Join): the last one's end is the sum,
  // found by the index on `first` in O(log tokens).
  Statement last(db_,
                 "SELECT first + users FROM tokens WHERE first IS NOT NULL ORDER BY first DESC"
                 " LIMIT 1");
  if (!last.ok()) return 0;
  return last.Step() == SQLITE_ROW ? static_cast<std::uint64_t>(last.Int(0)) : 0;
}

Result<std::vector<ServerState::Client>> ServerState::Clients() const {
  std::vector<Client> out;
  Statement all(db_,
                "SELECT first, users FROM tokens WHERE first IS NOT NULL OR users IS NOT NULL"
                " ORDER BY first");
  if (!all.ok()) return Error{Message(db_, "server state: cannot read the clients")};
  int step;
  while ((step = all.Step()) == SQLITE_ROW) {
    for (int column : {0, 1}) {
      if (sqlite3_column_type(all.get(), column) != SQLITE_INTEGER || all.Int(column) < 0) {
        return Error{"server state: a client's users are damaged (not a count)"};
      }
    }
    out.push_back({static_cast<std::uint64_t>(all.Int(0)), static_cast<std::uint64_t>(all.Int(1))});
  }
  if (step != SQLITE_DONE) return Error{Message(db_, "server state: cannot read the clients")};
  return out;
}

Result<std::optional<ServerState::Snapshot>> ServerState::Load() const {
  Statement load(
      db_,
      "SELECT round, epoch, position, ord, weights, finished, counted, server FROM snapshot "
      "WHERE id = 1");
  if (!load.ok()) return Error{Message(db_, "server state: cannot read the model")};
  const int step = load.Step();
  if (step == SQLITE_DONE && Started()) {
    return Error{
        "server state: the model is missing, but a round has closed (the snapshot was "
        "deleted); restore the file from a copy, or start a new deployment with a new "
        "--state file"};
  }
  if (step == SQLITE_DONE) return std::optional<Snapshot>();
  if (step != SQLITE_ROW) return Error{Message(db_, "server state: cannot read the model")};
  for (int column : {0, 1, 2, 5, 6}) {
    if (sqlite3_column_type(load.get(), column) != SQLITE_INTEGER || load.Int(column) < 0) {
      return Error{"server state: the model's schedule is damaged (column " +
                   std::to_string(column + 1) + " is not a count)"};
    }
  }
  for (int column : {3, 4, 7}) {
    if (sqlite3_column_type(load.get(), column) != SQLITE_BLOB || load.Blob(column).size() % 8) {
      return Error{"server state: the model's " +
                   std::string(column == 3   ? "user order"
                               : column == 4 ? "weights"
                                             : "server state (optimiser, average)") +
                   " are damaged"};
    }
  }
  Snapshot s;
  s.round = static_cast<std::uint64_t>(load.Int(0));
  s.epoch = static_cast<std::uint64_t>(load.Int(1));
  s.position = static_cast<std::uint64_t>(load.Int(2));
  s.order = Unpack<std::uint64_t>(load.Blob(3));
  s.weights = Unpack<double>(load.Blob(4));
  s.finished = load.Int(5) != 0;
  s.counted = static_cast<std::uint64_t>(load.Int(6));
  s.server = Unpack<double>(load.Blob(7));
  return std::optional<Snapshot>(std::move(s));
}

Status ServerState::Commit(const Snapshot& s) {
  const Status committed = Stored(Transaction([&]() -> std::string {
    Statement put(db_,
                  "INSERT OR REPLACE INTO snapshot (id, round, epoch, position, ord, weights,"
                  " finished, counted, server) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (!put.ok()) return Message(db_, "server state");
    put.Bind(1, static_cast<std::int64_t>(s.round));
    put.Bind(2, static_cast<std::int64_t>(s.epoch));
    put.Bind(3, static_cast<std::int64_t>(s.position));
    put.BindBlob(4, Pack(s.order));
    put.BindBlob(5, Pack(s.weights));
    put.Bind(6, std::int64_t{s.finished});
    put.Bind(7, static_cast<std::int64_t>(s.counted));
    put.BindBlob(8, Pack(s.server));
    if (put.Step() != SQLITE_DONE) return Message(db_, "server state");
    Statement forget(db_, "DELETE FROM reports WHERE round < ?");
    forget.Bind(1, static_cast<std::int64_t>(s.round));
    if (!forget.ok() || forget.Step() != SQLITE_DONE) return Message(db_, "server state");
    return Exec(db_, kStartedMark) ? "" : Message(db_, "server state");
  }));
  if (!committed.ok()) return committed;
  // Commits are not synced (synchronous=NORMAL), but each round's is
  // checkpointed into the file, synced: a disk that cannot sync stops the
  // server at the round's close instead of going unnoticed (SQLite's own
  // checkpoints drop their errors) while the log grows without end.
  if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) !=
      SQLITE_OK) {
    return Error{Message(db_, "server state: the round's commit cannot be synced to disk"),
                 ErrorCode::kIo};
  }
  return {};
}

bool ServerState::Started() const {
  Statement version(db_, "PRAGMA user_version");
  return version.ok() && version.Step() == SQLITE_ROW && version.Int(0) >= kStartedVersion;
}

Status ServerState::RecordReports(std::uint64_t round,
                                  std::span<const std::pair<std::uint64_t, std::string>> reports) {
  if (reports.empty()) return {};
  return Stored(Transaction([&]() -> std::string {
    Statement& insert = hot_->insert_report;
    for (const auto& [user, bytes] : reports) {
      insert.Bind(1, static_cast<std::int64_t>(round));
      insert.Bind(2, static_cast<std::int64_t>(user));
      insert.BindBlob(3, bytes);
      if (!Run(insert)) return Message(db_, "server state");
    }
    return "";
  }));
}

Status ServerState::Withdraw(std::span<const std::uint64_t> users) {
  if (users.empty()) return {};
  return Stored(Transaction([&]() -> std::string {
    Statement insert(db_, "INSERT OR IGNORE INTO withdrawn (user) VALUES (?)");
    if (!insert.ok()) return Message(db_, "server state");
    for (const std::uint64_t user : users) {
      insert.Bind(1, static_cast<std::int64_t>(user));
      if (!Run(insert)) return Message(db_, "server state");
    }
    return "";
  }));
}

Result<std::vector<std::uint64_t>> ServerState::Withdrawn() const {
  std::vector<std::uint64_t> out;
  Statement all(db_, "SELECT user FROM withdrawn ORDER BY user");
  if (!all.ok()) return Error{Message(db_, "server state: cannot read the withdrawn users")};
  int step;
  while ((step = all.Step()) == SQLITE_ROW) {
    if (sqlite3_column_type(all.get(), 0) != SQLITE_INTEGER || all.Int(0) < 0) {
      return Error{"server state: a withdrawn user is damaged"};
    }
    out.push_back(static_cast<std::uint64_t>(all.Int(0)));
  }
  if (step != SQLITE_DONE)
    return Error{Message(db_, "server state: cannot read the withdrawn users")};
  return out;
}

std::vector<std::pair<std::uint64_t, std::string>> ServerState::Reports(std::uint64_t round) const {
  std::vector<std::pair<std::uint64_t, std::string>> out;
  Statement all(db_, "SELECT user, bytes FROM reports WHERE round = ? ORDER BY rowid");
  if (!all.ok()) return out;
  all.Bind(1, static_cast<std::int64_t>(round));
  while (all.Step() == SQLITE_ROW) {
    out.emplace_back(static_cast<std::uint64_t>(all.Int(0)), std::string(all.Blob(1)));
  }
  return out;
}

}  // namespace fedldp
