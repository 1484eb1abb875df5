// A deployed FedSel client's privacy side as plain logic (no network): it
// hosts one or more users (rows of local data), keeps each user's
// accumulated vector r, and answers a round with the very client step the
// simulator runs (FedSelClientStep; for the vector variants the plan's
// VectorRandomizer on the whole gradient), drawing noise only from SecureRng.
//
// Before a report leaves, its cost (eps1 + eps2 of the announced task, the
// proven cost of one report) is charged to the user's account on the
// client's privacy ledger, in one transaction with the report's bytes. A
// report the ledger refuses is not produced, and the refusal is returned for
// the log. Asked again for a round it already answered (a retry after a lost
// connection or a restart), it returns the recorded bytes: nothing new is
// revealed or spent. Accounts are named by the local row ("row-17"), so the
// budget stays with the data whatever user number the server hands out.
#ifndef FEDLDP_NET_FEDSEL_PARTICIPANT_H_
#define FEDLDP_NET_FEDSEL_PARTICIPANT_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/data/dataset.h"
#include "fedldp/net/fedsel_coordinator.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/store/privacy_ledger.h"

namespace fedldp {

class FedSelParticipant {
 public:
  // rows: the local rows of `data`, one user each; `data` and `ledger` must
  // outlive the participant.
  static Result<FedSelParticipant> Create(const FedSelTaskSpec& task, const Dataset& data,
                                          std::vector<std::size_t> rows, PrivacyLedger& ledger);
  FedSelParticipant(FedSelParticipant&&) noexcept;
  FedSelParticipant& operator=(FedSelParticipant&&) noexcept;
  ~FedSelParticipant();

  // Tests only (client never calls it): noise from DeploymentRng(seed, 0)
  // instead of SecureRng, so that an in-process deployment replays bit for
  // bit (RoundPolicy::test_seed seeds the server's schedule).
  void SeedForTest(std::uint64_t seed) { rng_ = DeploymentRng(seed, 0); }

  // Called after Join: the server's numbers for this client's users.
  void SetFirstUser(std::uint64_t first) { first_user_ = first; }
  std::uint64_t users() const { return rows_.size(); }

  struct Answer {
    std::vector<std::pair<std::uint64_t, std::string>> reports;  // (user, bytes)
    std::vector<std::string> refusals;                           // one line each
    // Users whose budget cannot pay for a report: for good (tell the server).
    std::vector<std::uint64_t> exhausted;
  };
  Answer Respond(std::uint64_t round, std::span<const double> weights,
                 std::span<const std::uint64_t> users);

  // Every hosted user (the server's numbers, sorted) whose budget cannot pay
  // for another report: for good, since a ledger's total never grows.
  std::vector<std::uint64_t> Exhausted() const;

  double report_epsilon() const { return plan_.ReportEpsilon(); }
  const FedSelPlan& plan() const { return plan_; }

 private:
  FedSelParticipant(const FedSelTaskSpec& task, TaskData data, std::vector<std::size_t> rows,
                    PrivacyLedger& ledger, FedSelPlan plan,
                    std::unique_ptr<net_internal::FedSelMethod> method);

  FedSelTaskSpec task_;
  TaskData data_;  // the local rows, labelled with the task's classes
  std::vector<std::size_t> rows_;
  PrivacyLedger* ledger_;
  FedSelPlan plan_;
  std::unique_ptr<net_internal::FedSelMethod> method_;  // the variant's reports
  std::string ledger_task_;                             // LedgerTaskKey of the task
  std::vector<double> accumulated_;                     // users x d (two-stage variants)
  std::uint64_t first_user_ = 0;
  std::unique_ptr<Rng> rng_;
};

}  // namespace fedldp

#endif  // FEDLDP_NET_FEDSEL_PARTICIPANT_H_
