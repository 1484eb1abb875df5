#include "fedldp/store/privacy_ledger.h"

#include <sqlite3.h>

#include <cmath>
#include <utility>

#include "sqlite_util.h"

namespace fedldp {

using sqlite::Exec;
using sqlite::Format;
using sqlite::Message;
using sqlite::Statement;

struct PrivacyLedger::Statements {
  explicit Statements(sqlite3* db)
      : find(db, "SELECT bytes FROM reports WHERE account = ? AND task = ? AND round = ?"),
        sum(db, "SELECT COALESCE(SUM(epsilon), 0) FROM reports WHERE account = ?"),
        insert(
            db,
            "INSERT INTO reports (account, task, round, epsilon, bytes) VALUES (?, ?, ?, ?, ?)") {}
  bool ok() const { return find.ok() && sum.ok() && insert.ok(); }
  std::mutex mu;
  Statement find, sum, insert;
};

namespace {

// Runs the prepared insert for one entry; false if SQLite failed.
bool Insert(Statement& insert, const PrivacyLedger::Entry& e) {
  insert.Reset();
  insert.Bind(1, e.account);
  insert.Bind(2, e.task);
  sqlite3_bind_int64(insert.get(), 3, static_cast<sqlite3_int64>(e.round));
  sqlite3_bind_double(insert.get(), 4, e.epsilon);
  insert.BindBlob(5, e.bytes);
  const int step = insert.Step();
  insert.Reset();
  return step == SQLITE_DONE;
}

}  // namespace

PrivacyLedger::PrivacyLedger(sqlite3* db, double total) : db_(db), total_(total) {}

Status PrivacyLedger::CheckPath(const std::string& path) {
  return sqlite::CheckDatabasePath(path, "privacy ledger");
}

Result<PrivacyLedger> PrivacyLedger::Open(const std::string& path, double total_epsilon) {
  return OpenAt(path, total_epsilon, /*temporary=*/false);
}

Result<PrivacyLedger> PrivacyLedger::OpenInMemory(double total_epsilon) {
  return OpenAt("(in memory)", total_epsilon, /*temporary=*/true);
}

Result<PrivacyLedger> PrivacyLedger::OpenAt(const std::string& path, double total_epsilon,
                                            bool temporary) {
  // Not CheckEpsilon's (0, 500]: LDP-FL's proven per-client cost is d eps per
  // round (21,840 eps for the CNN), so totals are large.
  FEDLDP_RETURN_IF_ERROR(CheckPositive(total_epsilon, "total epsilon"));
  sqlite3* db = nullptr;
  FEDLDP_RETURN_IF_ERROR(sqlite::OpenDatabase(path, &db, "privacy ledger", temporary));
  PrivacyLedger ledger(db, total_epsilon);
  // One holder at a time: in exclusive locking mode the file stays locked
  // from the first write until the ledger closes, so two clients cannot
  // spend from one budget file, and a charge needs no file-lock system calls
  // (they were much of a charge's cost with a thousand ledgers in one
  // load-test process). Full synchronous commits: a charge that returned is
  // on disk.
  const bool configured = Exec(db,
                               "PRAGMA locking_mode=EXCLUSIVE; PRAGMA busy_timeout=1000;"
                               " PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
  if (sqlite3_errcode(db) == SQLITE_BUSY || sqlite3_errcode(db) == SQLITE_LOCKED) {
    return Error{"privacy ledger " + path +
                 " is in use by another client (a ledger is held by one process, and one"
                 " ledger object, at a time)"};
  }
  if (!configured ||
      !Exec(db,
            "CREATE TABLE IF NOT EXISTS budget (id INTEGER PRIMARY KEY CHECK (id = 1),"
            " total REAL NOT NULL);"
            "CREATE TABLE IF NOT EXISTS reports (account TEXT NOT NULL, task TEXT NOT NULL,"
            " round INTEGER NOT NULL, epsilon REAL NOT NULL, bytes BLOB NOT NULL,"
            " at TEXT NOT NULL DEFAULT (datetime('now')), PRIMARY KEY (account, task, round));")) {
    return Error{Message(db, path + " is not a usable privacy ledger")};
  }
  Statement insert(db, "INSERT OR IGNORE INTO budget (id, total) VALUES (1, ?)");
  if (!insert.ok()) return Error{Message(db, path)};
  sqlite3_bind_double(insert.get(), 1, total_epsilon);
  if (insert.Step() != SQLITE_DONE) return Error{Message(db, path)};
  Statement total(db, "SELECT total FROM budget WHERE id = 1");
  if (!total.ok() || total.Step() != SQLITE_ROW) return Error{Message(db, path)};
  const double stored = sqlite3_column_double(total.get(), 0);
  if (stored != total_epsilon) {
    return Error{"privacy ledger " + path + " was created with a total budget of " +
                 Format(stored) + ", not " + Format(total_epsilon) +
                 "; a ledger's total cannot be changed"};
  }
  ledger.statements_ = std::make_unique<Statements>(db);
  if (!ledger.statements_->ok())
    return Error{Message(db, path + " is not a usable privacy ledger")};
  return ledger;
}

PrivacyLedger::~PrivacyLedger() {
  statements_.reset();  // finalized before the database closes
  sqlite3_close(db_);
}

PrivacyLedger::PrivacyLedger(PrivacyLedger&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      total_(other.total_),
      statements_(std::move(other.statements_)) {}

PrivacyLedger& PrivacyLedger::operator=(PrivacyLedger&& other) noexcept {
  if (this != &other) {
    statements_.reset();
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    total_ = other.total_;
    statements_ = std::move(other.statements_);
  }
  return *this;
}

Status PrivacyLedger::Charge(std::string_view task, std::uint64_t round, double epsilon,
                             std::string_view bytes) {
  const Entry entry{"", std::string(task), round, epsilon, std::string(bytes)};
  return ChargeMany({&entry, 1}).front();
}

std::vector<Status> PrivacyLedger::ChargeMany(std::span<const Entry> entries) {
  std::vector<Status> verdicts(entries.size());
  auto fail_all = [&](const std::string& why) {
    for (auto& v : verdicts) v = Error{why, ErrorCode::kIo};
    return verdicts;
  };
  if (entries.empty()) return verdicts;
  std::lock_guard lock(statements_->mu);
  // IMMEDIATE: the reads of the spent budgets and the inserts are one unit
  // (the file is this ledger's alone anyway: exclusive locking, see Open).
  if (!Exec(db_, "BEGIN IMMEDIATE")) return fail_all(Message(db_, "privacy ledger busy"));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (!(e.epsilon >= 0) || !std::isfinite(e.epsilon)) {
      verdicts[i] = Error{"epsilon must be finite and >= 0"};
      continue;
    }
    if (e.round > static_cast<std::uint64_t>(INT64_MAX)) {
      verdicts[i] = Error{"round number too large"};
      continue;
    }
    if (FindLocked(e.account, e.task, e.round)) {
      verdicts[i] = Error{"already reported in round " + std::to_string(e.round) + " of task " +
                              e.task + "; resend the recorded report instead of a new one",
                          ErrorCode::kAlreadyExists};
      continue;
    }
    const std::optional<double> spent = SpentLocked(e.account);
    if (!spent) {
      Exec(db_, "ROLLBACK");
      return fail_all(Message(db_, "privacy ledger"));
    }
    const double used = *spent;
    if (used + e.epsilon > total_ * (1 + 1e-12)) {
      verdicts[i] =
          Error{"refused: this report spends eps = " + Format(e.epsilon) + ", but only " +
                    Format(total_ - used) + " of the total " + Format(total_) + " is left" +
                    (e.account.empty() ? "" : " (account " + e.account + ")"),
                ErrorCode::kFailedPrecondition};
      continue;
    }
    if (!Insert(statements_->insert, e)) {
      Exec(db_, "ROLLBACK");
      return fail_all(Message(db_, "privacy ledger"));
    }
  }
  if (!Exec(db_, "COMMIT")) {
    Exec(db_, "ROLLBACK");
    return fail_all(Message(db_, "privacy ledger commit"));
  }
  return verdicts;
}

std::optional<std::string> PrivacyLedger::Find(std::string_view task, std::uint64_t round) const {
  return Find("", task, round);
}

std::optional<std::string> PrivacyLedger::Find(std::string_view account, std::string_view task,
                                               std::uint64_t round) const {
  std::lock_guard lock(statements_->mu);
  return FindLocked(account, task, round);
}

std::optional<std::string> PrivacyLedger::FindLocked(std::string_view account,
                                                     std::string_view task,
                                                     std::uint64_t round) const {
  Statement& find = statements_->find;
  find.Reset();
  find.Bind(1, account);
  find.Bind(2, task);
  sqlite3_bind_int64(find.get(), 3, static_cast<sqlite3_int64>(round));
  std::optional<std::string> out;
  if (find.Step() == SQLITE_ROW) out = std::string(find.Blob(0));
  find.Reset();
  return out;
}

double PrivacyLedger::spent(std::string_view account) const {
  std::lock_guard lock(statements_->mu);
  // A ledger that cannot be read counts as spent: it fails closed.
  return SpentLocked(account).value_or(total_);
}

std::optional<double> PrivacyLedger::SpentLocked(std::string_view account) const {
  Statement& sum = statements_->sum;
  sum.Reset();
  sum.Bind(1, account);
  std::optional<double> out;
  if (sum.Step() == SQLITE_ROW) out = sqlite3_column_double(sum.get(), 0);
  sum.Reset();
  return out;
}

std::size_t PrivacyLedger::reports() const {
  Statement count(db_, "SELECT COUNT(*) FROM reports");
  return count.ok() && count.Step() == SQLITE_ROW
             ? static_cast<std::size_t>(sqlite3_column_int64(count.get(), 0))
             : 0;
}

}  // namespace fedldp
