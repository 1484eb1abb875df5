#include "fedldp/privacy/accountant.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "fedldp/base/limits.h"
#include "fedldp/privacy/shuffle_pld.h"

namespace fedldp {

namespace {

constexpr double kGrid = 1e-3;
// Grid points a composed PLD may span: beyond, the convolved total is not
// offered (the basic one is).
constexpr std::size_t kMaxSupport = 2'000'000;

// A group's steps as one PLD; none where the group has no PLD here.
std::optional<Pld> GroupPld(const AccountedGroup& g, double trim) {
  const AccountedStep& s = g.step;
  if (!s.shuffled()) {
    auto p = ReportsPld(s.local_epsilon, s.local_delta, g.times, kGrid, kMaxSupport);
    if (!p.ok()) return std::nullopt;
    return std::move(p).value();
  }
  return ShuffledRunPld(s.reports_per_round, s.local_epsilon, s.sampling_rate, g.times, kGrid,
                        trim / static_cast<double>(g.times), trim, kTightestShuffleBound,
                        s.poisson);
}

// Reports a group's statement covers, for the coupling allowance.
double Reports(const AccountedGroup& g) {
  const double times = static_cast<double>(g.times);
  return g.step.shuffled() ? times * static_cast<double>(g.step.reports_per_round) : times;
}

// Each group at delta / G, added up.
Status ComposeBasic(std::span<const AccountedGroup> groups, double delta, AccountedTotal& out) {
  const double share = delta / static_cast<double>(groups.size());
  out.basic = {};
  for (const AccountedGroup& g : groups) {
    auto run = AccountRun(g.step.Run(g.times, share));
    if (!run.ok()) return Error{run.error()};
    out.per_group.push_back(run->total);
    out.basic.epsilon += run->total.epsilon;
    out.basic.delta += run->total.delta;
    out.allowance += run->allowance;
  }
  out.basic.delta = std::min(1.0, out.basic.delta);
  out.total = out.basic;
  out.rule = "basic composition of the " + std::to_string(groups.size()) +
             " kinds of step, each stated as `account run` states it at delta / " +
             std::to_string(groups.size());
  return Status::Ok();
}

// Every group's PLD convolved, at the whole delta; the claim if tighter.
void ComposePlds(std::span<const AccountedGroup> groups, double delta, AccountedTotal& out) {
  const double trim = 1e-3 * delta / static_cast<double>(groups.size());
  std::optional<Pld> run;
  double coupled = 0;  // sum of reports x tau
  for (const AccountedGroup& g : groups) {
    std::optional<Pld> p = GroupPld(g, trim);
    if (!p) return;
    run = run ? ConvolvePld(*run, *p, trim) : std::move(*p);
    if (run->mass.size() > kMaxSupport) return;
    coupled += Reports(g) * g.step.report_deviation;
  }
  const double epsilon = PldEpsilon(*run, delta);
  if (!std::isfinite(epsilon)) return;
  const double allowance = (1 + std::exp(epsilon)) * coupled;
  out.pld = DpGuarantee{epsilon, std::min(1.0, delta + allowance)};
  if (epsilon < out.total.epsilon) {
    out.total = *out.pld;
    out.allowance = allowance;
    out.rule =
        "privacy-loss distributions of every step convolved (canonical pairs for direct "
        "reports, the clone pair for shuffled rounds)";
  }
}

}  // namespace

RunPrivacyConfig AccountedStep::Run(std::uint64_t times, double delta) const {
  RunPrivacyConfig c;
  c.local_epsilon = local_epsilon;
  c.local_delta = local_delta;
  c.rounds = times;
  c.shuffle = shuffled();
  c.reports_per_round = reports_per_round;
  c.delta = delta;
  c.sampling_rate = sampling_rate;
  c.poisson = poisson;
  c.report_deviation = report_deviation;
  return c;
}

Status Accountant::Record(const AccountedStep& step, std::uint64_t times) {
  if (times < 1) return Error{"record at least one step"};
  const auto it = std::find_if(groups_.begin(), groups_.end(),
                               [&](const AccountedGroup& g) { return g.step == step; });
  const std::uint64_t before = it == groups_.end() ? 0 : it->times;
  const auto most = static_cast<std::uint64_t>(kReportRounds.max);
  // Checked as AccountRun checks it (any delta: the statement's comes later).
  FEDLDP_RETURN_IF_ERROR(step.Run(std::min(before, most) + std::min(times, most), 1e-6).Validate());
  if (it == groups_.end()) {
    groups_.push_back({step, times});
  } else {
    it->times += times;
  }
  return Status::Ok();
}

std::uint64_t Accountant::steps() const {
  std::uint64_t n = 0;
  for (const AccountedGroup& g : groups_) n += g.times;
  return n;
}

Result<AccountedTotal> Accountant::Total(double delta) const {
  FEDLDP_RETURN_IF_ERROR(CheckDelta(delta, "the total delta"));
  AccountedTotal out;
  if (groups_.empty()) {
    out.rule = "nothing recorded";
    return out;
  }
  if (groups_.size() == 1) {
    const AccountedGroup& g = groups_.front();
    FEDLDP_ASSIGN_OR_RETURN(RunPrivacy run, AccountRun(g.step.Run(g.times, delta)));
    out.total = run.total;
    out.rule = run.rule;
    out.allowance = run.allowance;
    out.run = std::move(run);
    return out;
  }
  FEDLDP_RETURN_IF_ERROR(ComposeBasic(groups_, delta, out));
  ComposePlds(groups_, delta, out);
  return out;
}

std::string DescribeAccountedTotal(const Accountant& accountant, const AccountedTotal& t) {
  std::ostringstream s;
  s.precision(6);
  if (t.run) return DescribeRunPrivacy(*t.run);
  s << "per client over what was recorded: (" << t.total.epsilon << ", " << t.total.delta
    << ")-DP (" << t.rule << ")\n";
  const auto& groups = accountant.groups();
  for (std::size_t i = 0; i < groups.size() && i < t.per_group.size(); ++i) {
    const AccountedStep& st = groups[i].step;
    s << "  " << groups[i].times
      << (st.shuffled() ? " shuffled rounds of " + std::to_string(st.reports_per_round) + " reports"
                        : std::string(" reports"))
      << " at (" << st.local_epsilon << ", " << st.local_delta << ")-LDP";
    if (st.sampling_rate < 1) {
      s << (st.poisson ? ", each client drawn with probability " : ", sampled at ")
        << st.sampling_rate;
    }
    s << ": (" << t.per_group[i].epsilon << ", " << t.per_group[i].delta << ")\n";
  }
  s << "  basic composition of these: (" << t.basic.epsilon << ", " << t.basic.delta << ")";
  if (t.pld)
    s << "; privacy-loss distributions convolved: (" << t.pld->epsilon << ", " << t.pld->delta
      << ")";
  s << "\n";
  return s.str();
}

}  // namespace fedldp
