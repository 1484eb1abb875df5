// Edits a closed SQLite file as another program would: what a test of a
// tampered or damaged state file does to it.
#ifndef FEDLDP_TESTS_TESTING_EDIT_SQLITE_H_
#define FEDLDP_TESTS_TESTING_EDIT_SQLITE_H_

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

namespace fedldp::testing {

inline void EditSqlite(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* why = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &why), SQLITE_OK)
      << sql << ": " << (why ? why : "");
  sqlite3_free(why);
  sqlite3_close(db);
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_EDIT_SQLITE_H_
