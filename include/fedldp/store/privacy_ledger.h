// A client's persistent privacy ledger (SQLite): every report the client
// releases is written down, with the epsilon it spends, before it leaves
// the device, and a report that would take the client past its total budget
// is refused.
//
// Rules, and why:
// - The total budget is fixed when the ledger is created. Opening it with
//   another total is an error: a ledger whose limit can be raised quietly
//   protects nothing.
// - Charging happens before sending, in one transaction with the report's
//   bytes. A crash after the charge and before the send costs budget but
//   never lets a report out unrecorded; on restart the client finds the
//   stored bytes (Find) and sends exactly those again, which reveals nothing
//   new and costs nothing. Drawing a fresh report for the same round would
//   spend the budget twice, so a second Charge for a (task, round) is
//   refused.
// - One holder at a time: an open ledger keeps its file locked (SQLite's
//   exclusive locking mode), so a second process, or a second Open in the
//   same process, is refused with "in use" instead of spending from the same
//   budget behind the first one's back.
// - One ledger file may keep several accounts (a process that hosts many
//   simulated devices, each with its own budget): every account has the
//   same total, and a charge only counts against its own account. The
//   single-device calls use the account "".
// - Spending is compared with a small relative tolerance (1e-12 of the
//   total) so that ten charges of 0.1 fit a total of 1.0 despite rounding.
#ifndef FEDLDP_STORE_PRIVACY_LEDGER_H_
#define FEDLDP_STORE_PRIVACY_LEDGER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fedldp/base/status.h"

struct sqlite3;

namespace fedldp {

class PrivacyLedger {
 public:
  // Opens the ledger at `path`, creating it with `total_epsilon` if it does
  // not exist; an existing ledger must have been created with the same total.
  static Result<PrivacyLedger> Open(const std::string& path, double total_epsilon);
  // A ledger that ends with the process, holding no file: for load tests of
  // many clients in one process, never for a client whose budget must last.
  static Result<PrivacyLedger> OpenInMemory(double total_epsilon);
  // OK if Open could create or open a ledger at `path`, checked without
  // writing: a client checks its ledger before it joins a task (the total
  // comes with the task). Refuses a temporary database ("", ":memory:"), a
  // folder or device, a missing or unwritable folder, an unwritable file.
  static Status CheckPath(const std::string& path);
  ~PrivacyLedger();
  PrivacyLedger(PrivacyLedger&&) noexcept;
  PrivacyLedger& operator=(PrivacyLedger&&) noexcept;

  // Records that the report `bytes` for (task, round) spends `epsilon`, if
  // the total allows it; otherwise records nothing and says why (with how
  // much is left): kFailedPrecondition past the budget, kAlreadyExists for
  // a (task, round) charged before, kInvalidArgument for a bad epsilon or
  // round, kIo when the file fails. A refusal must be read: a report sent
  // without its charge spends budget nobody counted.
  Status Charge(std::string_view task, std::uint64_t round, double epsilon, std::string_view bytes);
  // The bytes recorded for (task, round), if any.
  std::optional<std::string> Find(std::string_view task, std::uint64_t round) const;

  struct Entry {
    std::string account;
    std::string task;
    std::uint64_t round = 0;
    double epsilon = 0;
    std::string bytes;
  };
  // Charges every entry in one transaction (one disk sync), each against its
  // own account; returns, per entry, OK or why it was refused (as Charge).
  // Refused entries record nothing; the others are recorded. Two entries for
  // the same (account, task, round) in one call: the second is refused.
  [[nodiscard]] std::vector<Status> ChargeMany(std::span<const Entry> entries);
  std::optional<std::string> Find(std::string_view account, std::string_view task,
                                  std::uint64_t round) const;

  double total() const { return total_; }
  double spent(std::string_view account = "") const;
  double remaining(std::string_view account = "") const { return total_ - spent(account); }
  std::size_t reports() const;  // in all accounts

 private:
  static Result<PrivacyLedger> OpenAt(const std::string& path, double total_epsilon,
                                      bool temporary);
  // The statements every charge runs, prepared once (parsing them per call
  // was most of a small charge's cost); one caller at a time uses them.
  struct Statements;
  PrivacyLedger(sqlite3* db, double total);
  std::optional<std::string> FindLocked(std::string_view account, std::string_view task,
                                        std::uint64_t round) const;
  std::optional<double> SpentLocked(std::string_view account) const;  // nullopt: unreadable
  sqlite3* db_ = nullptr;
  double total_ = 0;
  std::unique_ptr<Statements> statements_;
};

}  // namespace fedldp

#endif  // FEDLDP_STORE_PRIVACY_LEDGER_H_
