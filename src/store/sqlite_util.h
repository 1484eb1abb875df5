// Small helpers over the SQLite C API, shared by the store module's files.
#ifndef FEDLDP_SRC_STORE_SQLITE_UTIL_H_
#define FEDLDP_SRC_STORE_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>

#include "fedldp/base/files.h"
#include "fedldp/base/status.h"

namespace fedldp::sqlite {

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
  void Bind(int i, std::int64_t value) { sqlite3_bind_int64(stmt_, i, value); }
  int Step() { return sqlite3_step(stmt_); }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string_view Blob(int column) const {
    const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
    return {data ? data : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
  }
  std::int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

inline std::string Message(sqlite3* db, const std::string& what) {
  return what + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
}

// OK if `path` can hold a database that outlives the process, else why not,
// naming it as `what` ("privacy ledger", "server state"): refused are the names
// SQLite reads as a temporary database ("", ":memory:", a "file:" URI),
// which would keep a ledger or a server's tokens only until the process
// ends, and a path that is not a regular file (or nothing) in a folder this
// process can write (CheckOutputFile; SQLite's journal goes beside it).
inline Status CheckDatabasePath(const std::string& path, const std::string& what) {
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) {
    return Error{what + " '" + path + "': SQLite takes that for a temporary database that " +
                     "ends with the process; give a file path",
                 ErrorCode::kInvalidArgument};
  }
  if (Status usable = CheckOutputFile(path); !usable.ok()) {
    return Error{what + " " + path + ": " + usable.error(), usable.code()};
  }
  return {};
}

// Opens `path` for reading and writing, creating it, once CheckDatabasePath
// holds; `temporary`: an in-memory database instead (":memory:", for
// fuzzers and tests only: no user's path reaches it). The first call in a process turns SQLite's
// memory statistics off (if SQLite is not yet in use): they take one process-wide mutex on every
// allocation, which serializes threads that each use their own database,
// like a load test's client ledgers.
inline Status OpenDatabase(const std::string& path, sqlite3** db, const std::string& what,
                           bool temporary = false) {
  if (!temporary) FEDLDP_RETURN_IF_ERROR(CheckDatabasePath(path, what));
  static std::once_flag once;
  std::call_once(once, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  const char* name = temporary ? ":memory:" : path.c_str();
  if (sqlite3_open_v2(name, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    const std::string e = Message(*db, "cannot open " + what + " " + path);
    sqlite3_close(*db);
    *db = nullptr;
    return Error{e};
  }
  return {};
}

inline bool Exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

inline std::string Format(double v) {
  std::ostringstream s;
  s.precision(12);
  s << v;
  return s.str();
}

}  // namespace fedldp::sqlite

#endif  // FEDLDP_SRC_STORE_SQLITE_UTIL_H_
