#include "fedldp/store/privacy_ledger.h"

#include <sqlite3.h>

#include <cmath>
#include <sstream>
#include <utility>

namespace fedldp {
namespace {

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }
  void Bind(int i, std::string_view text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, std::string_view bytes) {
    sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }
  int Step() { return sqlite3_step(stmt_); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

std::string Message(sqlite3* db, const std::string& what) {
  return what + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
}

bool Exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

std::string Format(double v) {
  std::ostringstream s;
  s.precision(12);
  s << v;
  return s.str();
}

}  // namespace

Result<PrivacyLedger> PrivacyLedger::Open(const std::string& path, double total_epsilon) {
  // Not CheckEpsilon's (0, 500]: LDP-FL's proven per-client cost is d eps per
  // round (21,840 eps for the CNN), so totals are large.
  if (auto e = CheckPositive(total_epsilon, "total epsilon"); !e.empty()) return Error{e};
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string e = Message(db, "cannot open privacy ledger " + path);
    sqlite3_close(db);
    return Error{e};
  }
  PrivacyLedger ledger(db, total_epsilon);
  // Full synchronous commits: a charge that returned is on disk.
  if (!Exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000;") ||
      !Exec(db,
            "CREATE TABLE IF NOT EXISTS budget (id INTEGER PRIMARY KEY CHECK (id = 1),"
            " total REAL NOT NULL);"
            "CREATE TABLE IF NOT EXISTS reports (task TEXT NOT NULL, round INTEGER NOT NULL,"
            " epsilon REAL NOT NULL, bytes BLOB NOT NULL, at TEXT NOT NULL DEFAULT"
            " (datetime('now')), PRIMARY KEY (task, round));")) {
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
  return ledger;
}

PrivacyLedger::~PrivacyLedger() { sqlite3_close(db_); }

PrivacyLedger::PrivacyLedger(PrivacyLedger&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), total_(other.total_) {}

PrivacyLedger& PrivacyLedger::operator=(PrivacyLedger&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    total_ = other.total_;
  }
  return *this;
}

std::string PrivacyLedger::Charge(std::string_view task, std::uint64_t round, double epsilon,
                                  std::string_view bytes) {
  if (!(epsilon >= 0) || !std::isfinite(epsilon)) return "epsilon must be finite and >= 0";
  if (round > static_cast<std::uint64_t>(INT64_MAX)) return "round number too large";
  // IMMEDIATE: the read of the spent budget and the insert are one unit, even
  // if two processes share the ledger.
  if (!Exec(db_, "BEGIN IMMEDIATE")) return Message(db_, "privacy ledger busy");
  auto rollback = [&](std::string why) {
    Exec(db_, "ROLLBACK");
    return why;
  };
  if (Find(task, round)) {
    return rollback("already reported in round " + std::to_string(round) + " of task " +
                    std::string(task) + "; resend the recorded report instead of a new one");
  }
  Statement sum(db_, "SELECT COALESCE(SUM(epsilon), 0) FROM reports");
  if (!sum.ok() || sum.Step() != SQLITE_ROW) return rollback(Message(db_, "privacy ledger"));
  const double used = sqlite3_column_double(sum.get(), 0);
  if (used + epsilon > total_ * (1 + 1e-12)) {
    return rollback("refused: this report spends eps = " + Format(epsilon) + ", but only " +
                    Format(total_ - used) + " of the total " + Format(total_) + " is left");
  }
  Statement insert(db_, "INSERT INTO reports (task, round, epsilon, bytes) VALUES (?, ?, ?, ?)");
  if (!insert.ok()) return rollback(Message(db_, "privacy ledger"));
  insert.Bind(1, task);
  sqlite3_bind_int64(insert.get(), 2, static_cast<sqlite3_int64>(round));
  sqlite3_bind_double(insert.get(), 3, epsilon);
  insert.BindBlob(4, bytes);
  if (insert.Step() != SQLITE_DONE) return rollback(Message(db_, "privacy ledger"));
  if (!Exec(db_, "COMMIT")) return rollback(Message(db_, "privacy ledger commit"));
  return "";
}

std::optional<std::string> PrivacyLedger::Find(std::string_view task, std::uint64_t round) const {
  Statement find(db_, "SELECT bytes FROM reports WHERE task = ? AND round = ?");
  if (!find.ok()) return std::nullopt;
  find.Bind(1, task);
  sqlite3_bind_int64(find.get(), 2, static_cast<sqlite3_int64>(round));
  if (find.Step() != SQLITE_ROW) return std::nullopt;
  const auto* data = static_cast<const char*>(sqlite3_column_blob(find.get(), 0));
  return std::string(data ? data : "", static_cast<std::size_t>(sqlite3_column_bytes(find.get(), 0)));
}

double PrivacyLedger::spent() const {
  Statement sum(db_, "SELECT COALESCE(SUM(epsilon), 0) FROM reports");
  // A ledger that cannot be read counts as spent: it fails closed.
  return sum.ok() && sum.Step() == SQLITE_ROW ? sqlite3_column_double(sum.get(), 0) : total_;
}

std::size_t PrivacyLedger::reports() const {
  Statement count(db_, "SELECT COUNT(*) FROM reports");
  return count.ok() && count.Step() == SQLITE_ROW
             ? static_cast<std::size_t>(sqlite3_column_int64(count.get(), 0))
             : 0;
}

}  // namespace fedldp
