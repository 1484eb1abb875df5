#include "fedldp/audit/participation_checks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "fedldp/privacy/central_participation.h"
#include "fedldp/privacy/shuffle_pld.h"

namespace fedldp::audit {
namespace {

// Randomized response at eps reports its bit with this probability.
double Keep(double eps) { return 1 / (1 + std::exp(-eps)); }

double LogChoose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

double Hypergeometric(int n, int good, int draws, int k) {
  if (k < 0 || k > good || draws - k > n - good || draws > n) return 0;
  return std::exp(LogChoose(good, k) + LogChoose(n - good, draws - k) - LogChoose(n, draws));
}

// The law of the count of 1s reported by `ones` holders of 1 and `zeros`
// holders of 0, each reporting a 1 with probability rate.first (a holder of
// 1) or rate.second (of 0).
std::vector<double> Count(int ones, int zeros, std::pair<double, double> rate) {
  std::vector<double> law = {1.0};
  const auto add = [&law](double r) {
    std::vector<double> next(law.size() + 1, 0.0);
    for (std::size_t c = 0; c < law.size(); ++c) {
      next[c] += (1 - r) * law[c];
      next[c + 1] += r * law[c];
    }
    law = std::move(next);
  };
  for (int i = 0; i < ones; ++i) add(rate.first);
  for (int i = 0; i < zeros; ++i) add(rate.second);
  return law;
}

// D_e^eps(a || b) of two laws on the same outcomes, or of their 2-fold
// products (two independent rounds).
double Hockey(const std::vector<double>& a, const std::vector<double>& b, double eps, int rounds) {
  const double e = std::exp(eps);
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (rounds == 1) {
      d += std::max(0.0, a[i] - e * b[i]);
      continue;
    }
    for (std::size_t j = 0; j < a.size(); ++j) d += std::max(0.0, a[i] * a[j] - e * b[i] * b[j]);
  }
  return d;
}

// A sampled round's count: user 1 in with probability m / N.
std::vector<double> SampledLaw(int users, int m, double keep, int ones, bool first_one) {
  std::vector<double> law(static_cast<std::size_t>(m) + 1, 0.0);
  const double q = static_cast<double>(m) / users;
  for (int in = 0; in <= 1; ++in) {
    const int drawn = in ? m - 1 : m;
    for (int j = 0; j <= drawn; ++j) {  // j of the drawn others hold 1
      const double w = (in ? q : 1 - q) * Hypergeometric(users - 1, ones, drawn, j);
      if (w == 0) continue;
      const int holders = j + (in && first_one ? 1 : 0);
      const auto count = Count(holders, drawn + in - holders, {keep, 1 - keep});
      for (std::size_t y = 0; y < count.size(); ++y) law[y] += w * count[y];
    }
  }
  return law;
}

// A Poisson round's law over (count m, ones k), [m * (users + 1) + k].
std::vector<double> PoissonLaw(int users, double q, double keep, int ones, bool first_one) {
  const std::size_t side = static_cast<std::size_t>(users) + 1;
  std::vector<double> law(side * side, 0.0);
  law[0] = 1;
  for (int u = 0; u < users; ++u) {
    const bool one = u == 0 ? first_one : u <= ones;
    const double r = one ? keep : 1 - keep;
    std::vector<double> next(law.size(), 0.0);
    for (std::size_t m = 0; m + 1 < side; ++m) {
      for (std::size_t k = 0; k <= m; ++k) {
        const double p = law[m * side + k];
        if (p == 0) continue;
        next[m * side + k] += (1 - q) * p;
        next[(m + 1) * side + k + 1] += q * r * p;
        next[(m + 1) * side + k] += q * (1 - r) * p;
      }
    }
    law = std::move(next);
  }
  return law;
}

// The allocated epoch's law over the rounds' counts, built round by round:
// the round's members a uniform subset of those left (hypergeometric in the
// holders of each bit and user 1), their count of 1s a sum of binomials.
class AllocatedLaw {
 public:
  AllocatedLaw(std::span<const int> sizes, double eps0, bool adaptive)
      : sizes_(sizes.begin(), sizes.end()), eps0_(eps0), adaptive_(adaptive) {}
  using Law = std::map<std::vector<int>, double>;
  Law Of(int ones, bool first_one) const {
    Law law;
    std::vector<int> history;
    Visit(law, {ones, Users() - 1 - ones, 1, first_one}, history, 1.0);
    return law;
  }
  int Users() const {
    int users = 0;
    for (const int m : sizes_) users += m;
    return users;
  }

 private:
  struct Left {
    int ones, zeros, first;  // holders of each bit left to place; user 1 (0 or 1)
    bool first_one;
  };
  // The chance that a holder of 1 (first) and of 0 (second) reports a 1 in
  // the round after `history`.
  std::pair<double, double> Rates(const std::vector<int>& history) const {
    int seen = 0;
    for (const int c : history) seen += c;
    const double keep = Keep(adaptive_ && seen % 3 == 1 ? eps0_ / 2 : eps0_);
    const bool flip = adaptive_ && seen % 2 == 1;
    return flip ? std::pair{1 - keep, keep} : std::pair{keep, 1 - keep};
  }
  void Visit(Law& law, Left left, std::vector<int>& history, double p) const {
    const std::size_t j = history.size();
    if (j == sizes_.size()) {
      law[history] += p;
      return;
    }
    const int m = sizes_[j], pool = left.ones + left.zeros + left.first;
    for (int f = 0; f <= left.first; ++f) {
      for (int a = 0; a <= m - f; ++a) {
        const int b = m - f - a;
        const double w =
            std::exp(LogChoose(left.ones, a) + LogChoose(left.zeros, b) - LogChoose(pool, m));
        if (a > left.ones || b > left.zeros || !(w > 0)) continue;
        const int holders = a + (f == 1 && left.first_one ? 1 : 0);
        const auto counts = Count(holders, m - holders, Rates(history));
        const Left next{left.ones - a, left.zeros - b, left.first - f, left.first_one};
        for (std::size_t c = 0; c < counts.size(); ++c) {
          history.push_back(static_cast<int>(c));
          Visit(law, next, history, p * w * counts[c]);
          history.pop_back();
        }
      }
    }
  }

  std::vector<int> sizes_;
  double eps0_;
  bool adaptive_;
};

double MapHockey(const AllocatedLaw::Law& a, const AllocatedLaw::Law& b, double eps) {
  double sum = 0;
  for (const auto& [key, p] : a) {
    const auto it = b.find(key);
    sum += std::max(0.0, p - std::exp(eps) * (it == b.end() ? 0.0 : it->second));
  }
  return sum;
}

// A rule's PLD against its exact delta (exact(eps) at each eps of
// `epsilons`): never below it (but for the sums' rounding). value: the smallest PLD delta / exact
// delta where the exact one is above 1e-12 (near 1: near tight).
template <typename DeltaOf>
Verdict JudgeCurve(const std::string& what, DeltaOf delta_of, std::span<const double> epsilons,
                   std::span<const double> exact) {
  double closest = INFINITY, at = 0;
  bool holds = true;
  for (std::size_t i = 0; i < epsilons.size(); ++i) {
    const double bound = delta_of(epsilons[i]);
    // The exact sums carry rounding of about 1e-16 of each term's P + e^eps
    // Q (an exact delta of 3e-13 where the true one is 0, at eps = eps0 = 8).
    holds = holds && bound >= exact[i] * (1 - 1e-9) - 1e-14 * (1 + std::exp(epsilons[i]));
    if (exact[i] > 1e-12 && bound / exact[i] < closest) {
      closest = bound / exact[i];
      at = epsilons[i];
    }
  }
  std::ostringstream why;
  why << what << ": its delta(eps) at eps 0 to " << epsilons.back()
      << (holds ? " never below" : " BELOW") << " randomized response's exact delta; closest "
      << closest << "x at eps " << at;
  return {holds, why.str(), closest};
}

Verdict Judge(const std::string& what, const Pld& pld, std::span<const double> epsilons,
              std::span<const double> exact) {
  return JudgeCurve(
      what, [&pld](double eps) { return PldDelta(pld, eps); }, epsilons, exact);
}

// (privacy loss, probability) atoms of one direction of a pair.
using Atoms = std::vector<std::pair<double, double>>;

Atoms Compose(const Atoms& x, const Atoms& y) {
  Atoms out;
  out.reserve(x.size() * y.size());
  for (const auto& [lx, px] : x) {
    for (const auto& [ly, py] : y) out.emplace_back(lx + ly, px * py);
  }
  return out;
}

Atoms ComposeTimes(const Atoms& x, int times) {
  Atoms out = x;
  for (int i = 1; i < times; ++i) out = Compose(out, x);
  return out;
}

double AtomsDelta(const Atoms& atoms, double eps) {
  double delta = 0;
  for (const auto& [loss, p] : atoms) {
    if (loss > eps) delta += p * -std::expm1(eps - loss);
  }
  return delta;
}

// The larger direction's delta at each eps, `times` compositions of each.
std::vector<double> WorseDirection(const Atoms& remove, const Atoms& add, int times,
                                   std::span<const double> epsilons) {
  const Atoms r = ComposeTimes(remove, times), a = ComposeTimes(add, times);
  std::vector<double> out;
  for (const double eps : epsilons) out.push_back(std::max(AtomsDelta(r, eps), AtomsDelta(a, eps)));
  return out;
}

// The eps a rule's curve is checked at: 0 to eps0, doubling from 0.05.
std::vector<double> CheckedEpsilons(double eps0) {
  std::vector<double> e = {0.0};
  for (double x = 0.05; x < eps0; x *= 2) e.push_back(x);
  e.push_back(eps0);
  return e;
}

}  // namespace

double SampledResponseDelta(int users, int m, double eps0, double eps, int rounds) {
  double worst = 0;
  for (int ones = 0; ones < users; ++ones) {
    const auto a = SampledLaw(users, m, Keep(eps0), ones, true);
    const auto b = SampledLaw(users, m, Keep(eps0), ones, false);
    worst = std::max({worst, Hockey(a, b, eps, rounds), Hockey(b, a, eps, rounds)});
  }
  return worst;
}

double PoissonResponseDelta(int users, double q, double eps0, double eps) {
  double worst = 0;
  for (int ones = 0; ones < users; ++ones) {
    const auto a = PoissonLaw(users, q, Keep(eps0), ones, true);
    const auto b = PoissonLaw(users, q, Keep(eps0), ones, false);
    worst = std::max({worst, Hockey(a, b, eps, 1), Hockey(b, a, eps, 1)});
  }
  return worst;
}

std::vector<double> AllocatedResponseDeltas(std::span<const int> sizes, double eps0, bool adaptive,
                                            std::span<const double> epsilons) {
  const AllocatedLaw laws(sizes, eps0, adaptive);
  std::vector<double> worst(epsilons.size(), 0.0);
  for (int ones = 0; ones < laws.Users(); ++ones) {
    const auto a = laws.Of(ones, true), b = laws.Of(ones, false);
    for (std::size_t i = 0; i < epsilons.size(); ++i) {
      worst[i] = std::max({worst[i], MapHockey(a, b, epsilons[i]), MapHockey(b, a, epsilons[i])});
    }
  }
  return worst;
}

Verdict CheckSampledRound(double eps0) {
  constexpr int kUsers = 20, kRound = 5;
  const auto round = ShuffledRoundPld(kRound, eps0, 1e-3, 1e-12);
  if (!round.ok()) return {false, round.error(), NAN};
  const std::vector<double> eps = CheckedEpsilons(eps0);
  std::vector<double> exact;
  for (const double e : eps) exact.push_back(SampledResponseDelta(kUsers, kRound, eps0, e));
  return Judge("5 of 20 sampled", SampledRoundPld(*round, double{kRound} / kUsers), eps, exact);
}

Verdict CheckPoissonRound(double eps0) {
  constexpr int kUsers = 24;
  constexpr double kRate = 0.2;
  const auto round = PoissonRoundPld(kUsers, kRate, eps0, 1e-3, 1e-12);
  if (!round.ok()) return {false, round.error(), NAN};
  const std::vector<double> eps = CheckedEpsilons(eps0);
  std::vector<double> exact;
  for (const double e : eps) exact.push_back(PoissonResponseDelta(kUsers, kRate, eps0, e));
  return Judge("24 users drawn at 0.2", *round, eps, exact);
}

Pld ResponseStepPld(double eps0, double grid) {
  const std::pair<double, double> atoms[] = {{eps0, Keep(eps0)}, {-eps0, 1 - Keep(eps0)}};
  return SymmetricPldFromAtoms(atoms, grid);
}

std::vector<double> CentralAllocatedResponseDeltas(double eps0, int steps, int epochs,
                                                   std::span<const double> epsilons) {
  // k ones among the t outputs: B^t(k) binomial at 1 / (1 + e^eps0), A_t(k)
  // = B^t(k) S / t; remove is log(S / t) under A_t, add -log(S / t) under B^t.
  const double b = 1 - Keep(eps0);
  Atoms remove, add;
  for (int k = 0; k <= steps; ++k) {
    const double pmf =
        std::exp(LogChoose(steps, k) + k * std::log(b) + (steps - k) * std::log1p(-b));
    const double ratio = (k * std::exp(eps0) + (steps - k) * std::exp(-eps0)) / steps;
    remove.emplace_back(std::log(ratio), pmf * ratio);
    add.emplace_back(-std::log(ratio), pmf);
  }
  return WorseDirection(remove, add, epochs, epsilons);
}

std::vector<double> CentralPoissonResponseDeltas(double eps0, double q, int times,
                                                 std::span<const double> epsilons) {
  // B shows 1 with probability b, A (B's record answered) with 1 - b, the
  // sampled step q A + (1 - q) B.
  Atoms remove, add;
  for (const double b : {1 - Keep(eps0), Keep(eps0)}) {
    const double p = q * (1 - b) + (1 - q) * b;
    remove.emplace_back(std::log(p / b), p);
    add.emplace_back(std::log(b / p), b);
  }
  return WorseDirection(remove, add, times, epsilons);
}

Verdict CheckCentralAllocation(double eps0) {
  constexpr int kSteps = 5, kEpochs = 2;
  const auto epoch = AllocationEpochPld(ResponseStepPld(eps0, 1e-3), kSteps, 1e-14);
  if (!epoch.ok()) return {false, epoch.error(), NAN};
  const DirectionalPld run = ComposeDirectional(*epoch, kEpochs, 1e-14);
  const std::vector<double> eps = CheckedEpsilons(kEpochs * eps0);
  return JudgeCurve(
      "central steps, 2 epochs of 1 of 5", [&run](double e) { return DirectionalDelta(run, e); },
      eps, CentralAllocatedResponseDeltas(eps0, kSteps, kEpochs, eps));
}

Verdict CheckCentralPoisson(double eps0) {
  constexpr int kTimes = 3;
  constexpr double kRate = 0.2;
  const auto step = PoissonSampledPld(ResponseStepPld(eps0, 1e-3), kRate);
  if (!step.ok()) return {false, step.error(), NAN};
  const DirectionalPld run = ComposeDirectional(*step, kTimes, 1e-14);
  const std::vector<double> eps = CheckedEpsilons(kTimes * eps0);
  return JudgeCurve(
      "central steps, 3 at rate 0.2", [&run](double e) { return DirectionalDelta(run, e); }, eps,
      CentralPoissonResponseDeltas(eps0, kRate, kTimes, eps));
}

Verdict CheckAllocatedEpoch(double eps0) {
  const int sizes[] = {3, 5, 4};
  const auto epoch = ShuffledRoundPld(12, eps0, 1e-3, 1e-12);
  if (!epoch.ok()) return {false, epoch.error(), NAN};
  const std::vector<double> eps = CheckedEpsilons(eps0);
  return Judge("12 users in rounds of 3, 5, 4, adaptive, as one shuffle of 12", *epoch, eps,
               AllocatedResponseDeltas(sizes, eps0, true, eps));
}

}  // namespace fedldp::audit
