#include "fedldp/net/fedsel_participant.h"

#include "fedldp/model/linear.h"
#include "fedldp/wire/report_codec.h"
#include "fedsel_method.h"
#include "ledger_answers.h"

namespace fedldp {

Result<FedSelParticipant> FedSelParticipant::Create(const FedSelTaskSpec& task, const Dataset& data,
                                                    std::vector<std::size_t> rows,
                                                    PrivacyLedger& ledger) {
  if (Status e = CheckAnnouncedDeployment(task.deployment); !e.ok()) return Error{e.error()};
  if (data.dimension != task.dimension) {
    return Error{"the task has dimension " + std::to_string(task.dimension) +
                 " but the local data has " + std::to_string(data.dimension)};
  }
  FEDLDP_ASSIGN_OR_RETURN(TaskData labelled, TaskData::Of(data, task.classes));
  if (labelled.get().classes != 2) return Error{"FedSel's linear models need a binary task"};
  if (rows.empty()) return Error{"a client needs at least one local row"};
  for (const std::size_t r : rows) {
    if (r >= data.size()) return Error{"local row " + std::to_string(r) + " does not exist"};
  }
  auto plan = PlanFedSel(task.config, task.users, task.dimension);
  if (!plan.ok()) return Error{plan.error()};
  if (plan->ReportEpsilon() > ledger.total()) {
    return Error{"one report of this task spends eps = " + std::to_string(plan->ReportEpsilon()) +
                 ", more than this client's whole budget " + std::to_string(ledger.total())};
  }
  auto method = net_internal::FedSelMethod::Make(*plan, task.config, task.dimension);
  if (!method.ok()) return Error{method.error()};
  return FedSelParticipant(task, std::move(labelled), std::move(rows), ledger,
                           std::move(plan).value(), std::move(method).value());
}

FedSelParticipant::FedSelParticipant(const FedSelTaskSpec& task, TaskData data,
                                     std::vector<std::size_t> rows, PrivacyLedger& ledger,
                                     FedSelPlan plan,
                                     std::unique_ptr<net_internal::FedSelMethod> method)
    : task_(task),
      data_(std::move(data)),
      rows_(std::move(rows)),
      ledger_(&ledger),
      plan_(std::move(plan)),
      method_(std::move(method)),
      ledger_task_(LedgerTaskKey(task.id, task.deployment)),
      accumulated_(method_->keeps_state() ? rows_.size() * task.dimension : 0, 0.0),
      rng_(DeploymentRng(std::nullopt, 0)) {}

FedSelParticipant::FedSelParticipant(FedSelParticipant&&) noexcept = default;
FedSelParticipant& FedSelParticipant::operator=(FedSelParticipant&&) noexcept = default;
FedSelParticipant::~FedSelParticipant() = default;

std::vector<std::uint64_t> FedSelParticipant::Exhausted() const {
  std::vector<std::uint64_t> out;
  const double cost = plan_.ReportEpsilon();
  for (std::size_t local = 0; local < rows_.size(); ++local) {
    if (ledger_->remaining("row-" + std::to_string(rows_[local])) < cost * (1 - 1e-12)) {
      out.push_back(first_user_ + local);
    }
  }
  return out;
}

FedSelParticipant::Answer FedSelParticipant::Respond(std::uint64_t round,
                                                     std::span<const double> weights,
                                                     std::span<const std::uint64_t> users) {
  Answer answer;
  const std::size_t d = task_.dimension;
  if (weights.size() != d) {
    answer.refusals.push_back("the server sent " + std::to_string(weights.size()) +
                              " weights for a task of dimension " + std::to_string(d));
    return answer;
  }
  const FedSelConfig& config = task_.config;
  const LinearModel model{config.loss, config.lambda, 1.0, config.gradient_scaling};
  std::vector<double> gradient(d), previous(d);
  // A user's report: its row's gradient, privatised by the variant's method.
  const auto draw = [&](std::size_t local) {
    const std::size_t row = rows_[local];
    model.Gradient(weights, data_.get().row(row), data_.get().labels[row], gradient);
    const std::span<double> accumulated =
        method_->keeps_state() ? std::span<double>(accumulated_.data() + local * d, d)
                               : std::span<double>();
    return method_->Report(round, accumulated, previous, gradient, *rng_);
  };
  const net_internal::LedgerRound ledger_round{
      *ledger_,     ledger_task_,
      round,        plan_.ReportEpsilon(),
      "eps",        first_user_,
      rows_.size(), [&](std::size_t local) { return "row-" + std::to_string(rows_[local]); }};
  net_internal::AnswerFromLedger(
      ledger_round, users, [](const std::string& bytes) { return Result<std::string>(bytes); },
      draw, answer);
  return answer;
}

}  // namespace fedldp
