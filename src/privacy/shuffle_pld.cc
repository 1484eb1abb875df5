#include "fedldp/privacy/shuffle_pld.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "clone_pair.h"
#include "fedldp/base/bisect.h"

namespace fedldp {

namespace {

// The grid index a loss is rounded up to.
std::int64_t Up(double loss, double grid) {
  return static_cast<std::int64_t>(std::ceil(loss / grid));
}

// Dense masses over [lo, hi] of the grid, from sparse additions.
struct Accumulator {
  std::int64_t lo, hi;
  std::vector<double> mass;
  Accumulator(std::int64_t l, std::int64_t h)
      : lo(l), hi(h), mass(static_cast<std::size_t>(h - l + 1), 0.0) {}
  void Add(std::int64_t index, double m) {
    mass[static_cast<std::size_t>(std::clamp(index, lo, hi) - lo)] += m;
  }
};

// Moves at most `budget` of mass from the ends of the support (the smallest
// losses first, then the largest, half the budget each) to infinite loss:
// pessimistic, since an infinite loss only adds to delta.
void Trim(Pld& p, double budget) {
  double cut = 0;
  std::size_t begin = 0, end = p.mass.size();
  while (begin < end && cut + p.mass[begin] <= budget / 2) cut += p.mass[begin++];
  double top = 0;
  while (end > begin && top + p.mass[end - 1] <= budget / 2) top += p.mass[--end];
  p.infinite += cut + top;
  p.mass.erase(p.mass.begin() + static_cast<std::ptrdiff_t>(end), p.mass.end());
  p.mass.erase(p.mass.begin(), p.mass.begin() + static_cast<std::ptrdiff_t>(begin));
  p.first += static_cast<std::int64_t>(begin);
}

}  // namespace

namespace {

// The symmetric pair on the grid whose delta at each grid point j h is
// delta[j] and, between them, the chord in e^eps (Doroshenko et al.'s
// "connect the dots", PETS 2022): the masses at losses j h > 0 are the
// slopes' rises in e^eps (a dip, where rounding made the curve non-convex,
// counted as infinite loss), the loss -j h has e^(-j h) times that mass,
// the rest is at 0; delta.back() is the infinite mass. A symmetric pair's
// delta is convex in e^eps, so the chords lie above it: this pair dominates
// every symmetric pair whose delta at the grid points is at most delta[j].
// The symmetric pair with P's masses `up[j]` at the losses j h and `down[j]`
// at -j h (j >= 1), `infinite` at +inf and the rest (1 minus `spent` and
// the masses) at 0.
Pld MirroredPld(std::span<const double> up, std::span<const double> down, double infinite,
                double spent, double grid) {
  const std::size_t n = up.size() - 1;
  Pld out;
  out.grid = grid;
  out.first = -static_cast<std::int64_t>(n);
  out.mass.assign(2 * n + 1, 0.0);
  out.infinite = infinite;
  for (std::size_t j = 1; j <= n; ++j) {
    out.mass[n + j] = up[j];
    out.mass[n - j] = down[j];
    spent += up[j] + down[j];
  }
  out.mass[n] = std::max(0.0, 1 - spent);
  Trim(out, 0);  // zero ends only
  return out;
}

Pld ConnectedPld(std::span<const double> delta, double grid) {
  const std::size_t n = delta.size() - 1;
  std::vector<double> alpha(n + 1), up(n + 1, 0.0), down(n + 1, 0.0);
  for (std::size_t j = 0; j <= n; ++j) alpha[j] = std::exp(static_cast<double>(j) * grid);
  double infinite = delta[n];
  // Slopes of delta in alpha between grid points; 0 past the last.
  const auto slope = [&](std::size_t j) {
    return j >= n ? 0.0 : (delta[j + 1] - delta[j]) / (alpha[j + 1] - alpha[j]);
  };
  for (std::size_t j = 1; j <= n; ++j) {
    // Q's mass at loss j h is the slope's rise there, P's alpha_j times it.
    const double rise = slope(j) - slope(j - 1);
    up[j] = alpha[j] * std::max(0.0, rise);
    infinite += alpha[j] * std::max(0.0, -rise);  // rounding's dips, counted in
    down[j] = up[j] / alpha[j];                   // the mirror: P(-l) = e^-l P(l)
  }
  return MirroredPld(up, down, infinite, delta[n], grid);
}

}  // namespace

Pld ConvolvePld(const Pld& x, const Pld& y, double trim) {
  const auto nonzero = [](const Pld& p) {
    return std::count_if(p.mass.begin(), p.mass.end(), [](double m) { return m != 0; });
  };
  const bool swap = nonzero(x) > nonzero(y);
  const Pld& a = swap ? y : x;
  const Pld& b = swap ? x : y;
  Pld out;
  out.grid = a.grid;
  out.first = a.first + b.first;
  out.infinite = a.infinite + b.infinite - a.infinite * b.infinite;
  if (a.mass.empty() || b.mass.empty()) return out;
  out.mass.assign(a.mass.size() + b.mass.size() - 1, 0.0);
  for (std::size_t i = 0; i < a.mass.size(); ++i) {
    const double m = a.mass[i];
    if (m == 0) continue;
    double* o = out.mass.data() + i;
    for (std::size_t j = 0; j < b.mass.size(); ++j) o[j] += m * b.mass[j];
  }
  Trim(out, trim);
  return out;
}

Pld PldFromAtoms(std::span<const std::pair<double, double>> atoms, double grid) {
  Pld p;
  p.grid = grid;
  if (atoms.empty()) return p;
  std::int64_t lo = Up(atoms[0].first, grid), hi = lo;
  for (const auto& [loss, m] : atoms) {
    if (std::isinf(loss)) continue;
    lo = std::min(lo, Up(loss, grid));
    hi = std::max(hi, Up(loss, grid));
  }
  Accumulator acc(lo, hi);
  for (const auto& [loss, m] : atoms) {
    if (std::isinf(loss) && loss > 0) {
      p.infinite += m;
    } else if (!std::isinf(loss)) {
      acc.Add(Up(loss, grid), m);
    }
  }
  p.first = lo;
  p.mass = std::move(acc.mass);
  return p;
}

Result<Pld> ReportsPld(double eps0, double delta0, std::uint64_t k, double grid,
                       std::size_t max_support) {
  if (!(std::isfinite(eps0) && eps0 > 0)) return Error{"the local epsilon must be > 0"};
  if (!(delta0 >= 0 && delta0 < 1)) return Error{"the local delta must be in [0, 1)"};
  if (k < 1) return Error{"at least one report"};
  const double kd = static_cast<double>(k);
  if (!(2 * kd * eps0 / grid + 1 <= static_cast<double>(max_support))) {
    return Error{"the reports' losses span too many grid points"};
  }
  // log P(j of the k reports at -eps0): j ~ Binomial(k, 1 / (1 + e^eps0)).
  const double log_low = -std::log1p(std::exp(eps0)), log_high = -std::log1p(std::exp(-eps0));
  const double kept = std::exp(kd * std::log1p(-delta0));  // no report's delta0 event
  std::vector<std::pair<double, double>> atoms;
  atoms.reserve(k + 2);
  double lost = 0;
  for (std::uint64_t j = 0; j <= k; ++j) {
    const double jd = static_cast<double>(j);
    const double log_mass = std::lgamma(kd + 1) - std::lgamma(jd + 1) - std::lgamma(kd - jd + 1) +
                            jd * log_low + (kd - jd) * log_high;
    const double mass = kept * std::exp(log_mass);
    if (mass < 1e-300) {
      lost += mass;
      continue;
    }
    atoms.emplace_back((kd - 2 * jd) * eps0, mass);
  }
  if (atoms.empty()) return Pld{.grid = grid, .first = 0, .mass = {}, .infinite = 1};
  atoms.emplace_back(std::numeric_limits<double>::infinity(), 1 - kept + lost);
  Pld p = PldFromAtoms(atoms, grid);
  Trim(p, 0);  // zero ends only
  return p;
}

namespace {

// Per grid cell ((j - 1) h, j h], the P-mass of the losses in it and their
// Q-mass (P-mass times e^-loss): delta at every grid point, exactly.
struct CellSums {
  Accumulator p, q;
  CellSums(std::int64_t lo, std::int64_t hi) : p(lo, hi), q(lo, hi) {}
};

// Adds, with `weight`, the losses of the pair given M = m clones shown,
// user 1's side shown with probability a = pair.favour, the other with
// pair.against (clone_pair.h). P's mass outside the window of A | C is
// counted as infinite loss.
void AddPairLosses(std::uint64_t m, const shuffle_internal::ClonePair& pair, double weight,
                   double tolerance, double grid, shuffle_internal::Window& halves, CellSums& cells,
                   double& infinite) {
  const double a = pair.favour, not_a = pair.against;
  shuffle_internal::BinomialWindow(m - 1, 0.5, tolerance, halves);
  infinite += weight * halves.outside;
  // Each mass raised by the window's rounding: at least the exact one (a
  // PLD's masses may sum past 1 by that: its delta(eps) only grows).
  weight *= 1 + halves.rounding + 4 * DBL_EPSILON;
  const std::vector<double>& b = halves.pmf;
  for (std::size_t j = 0; j <= b.size(); ++j) {
    const double at = j < b.size() ? b[j] : 0;
    const double before = j > 0 ? b[j - 1] : 0;
    const double pk = a * at + not_a * before;
    const double qk = not_a * at + a * before;
    if (pk <= 0) continue;
    if (qk <= 0) {
      infinite += weight * pk;
      continue;
    }
    const std::int64_t cell = Up(std::log(pk / qk), grid);
    cells.p.Add(cell, weight * pk);
    cells.q.Add(cell, weight * qk);
  }
}

// The symmetric pair on the grid through the round's delta at every grid
// point, chords in between (shuffle_pld.h): a cell's atoms, losses l in
// ((c - 1) h, c h], give their Q-mass to the grid points c - 1 and c, a_c =
// (e^(c h) Q_c - P_c) / (e^(c h) - e^((c - 1) h)) and Q_c - a_c, which keeps
// delta at every grid point and each atom's P-mass. Each share is a sum of
// non-negative terms (no differences of deltas, whose rounding e^eps would
// magnify); a_c is taken low by a bound on its rounding, which moves mass
// up: pessimistic.
Pld ConnectCells(const CellSums& cells, double infinite, double grid) {
  // The cells are over [-last, last]; q_at: Q's mass at the grid points 0 .. last.
  const auto last = static_cast<std::size_t>(cells.p.hi);
  std::vector<double> q_at(last + 1, 0.0);
  for (std::size_t c = 1; c <= last; ++c) {
    const double pc = cells.p.mass[last + c], qc = cells.q.mass[last + c];
    if (pc == 0 && qc == 0) continue;
    const double lower = std::exp(static_cast<double>(c - 1) * grid);
    const double upper = std::exp(static_cast<double>(c) * grid);
    // Not upper - lower, whose cancellation would cost about 2 / h ulps.
    const double width = lower * std::expm1(grid);
    // A bound on the share's rounding (a few ulps of each term), with room.
    const double slack = 8 * DBL_EPSILON * (upper * qc + pc) / width;
    const double low = std::clamp((upper * qc - pc) / width - slack, 0.0, qc);
    q_at[c - 1] += low;
    q_at[c] += qc - low;
  }
  std::vector<double> up(last + 1, 0.0);
  for (std::size_t j = 1; j <= last; ++j) {
    up[j] = std::exp(static_cast<double>(j) * grid) * q_at[j];  // the mirror, -j h: q_at[j]
  }
  return MirroredPld(up, q_at, infinite, infinite, grid);
}

}  // namespace

Pld SymmetricPldFromAtoms(std::span<const std::pair<double, double>> atoms, double grid) {
  double top = 0, infinite = 0;
  for (const auto& [loss, m] : atoms) {
    if (std::isfinite(loss)) top = std::max(top, loss);
  }
  const std::int64_t reach = Up(top, grid) + 1;
  CellSums cells(-reach, reach);
  for (const auto& [loss, m] : atoms) {
    if (std::isinf(loss)) {
      if (loss > 0) infinite += m;
    } else if (loss > 0) {
      cells.p.Add(Up(loss, grid), m);
      cells.q.Add(Up(loss, grid), m * std::exp(-loss));
    }
  }
  return ConnectCells(cells, infinite, grid);
}

Result<Pld> GaussianPld(double sigma, double grid) {
  if (!(std::isfinite(sigma) && sigma > 0)) return Error{"the noise scale sigma must be > 0"};
  if (!(grid > 0 && grid <= 0.1)) return Error{"the grid step must be in (0, 0.1]"};
  const double mu = 1 / sigma, top = mu * mu / 2 + 10 * mu;
  if (!(top / grid <= 1e7)) {
    std::ostringstream why;
    why << "the Gaussian's losses reach " << top << ", past 1e7 grid points of " << grid
        << ": sigma " << sigma << " is too small for this grid";
    return Error{why.str()};
  }
  // P(loss > x) under P (mean mu^2 / 2) and under Q (mean -mu^2 / 2).
  const auto above = [&](double x, double mean) {
    return 0.5 * std::erfc((x - mean) / (mu * std::sqrt(2.0)));
  };
  const std::int64_t reach = Up(top, grid);
  CellSums cells(-reach, reach);
  for (std::int64_t c = 1; c <= reach; ++c) {
    const double lo = static_cast<double>(c - 1) * grid, hi = static_cast<double>(c) * grid;
    // Each a difference of two tails, raised by a bound on its rounding
    // (erfc within a few ulps, the difference within one), with room.
    const auto cell = [&](double mean) {
      const double a = above(lo, mean), b = above(hi, mean);
      return std::max(0.0, a - b) + 16 * DBL_EPSILON * a;
    };
    cells.p.Add(c, cell(mu * mu / 2));
    cells.q.Add(c, cell(-mu * mu / 2));
  }
  return ConnectCells(cells, above(static_cast<double>(reach) * grid, mu * mu / 2), grid);
}

Result<Pld> ShuffledRoundPld(std::uint64_t n, double eps0, double grid, double tolerance,
                             ShuffleReduction reduction) {
  using namespace shuffle_internal;
  if (n < 1) return Error{"the number of reports must be at least 1"};
  if (!(std::isfinite(eps0) && eps0 > 0)) return Error{"the local epsilon must be > 0"};
  if (eps0 > kMaxPldLocalEpsilon) {
    return Error{"a local epsilon past 700: its likelihood ratios are past a double's range"};
  }
  if (!(grid > 0 && grid <= 0.1)) return Error{"the grid step must be in (0, 0.1]"};
  auto pair = CheckedPair(n, reduction, eps0);
  if (!pair.ok()) return Error{pair.error()};
  const CloneBlocks blocks = BlocksOf(n, *pair, tolerance);
  // Every loss is within [-eps0, eps0] (P / Q is between (1 - a) / a and
  // its inverse, a = favour).
  const std::int64_t reach = Up(eps0, grid) + 1;
  CellSums cells(-reach, reach);
  double infinite = blocks.outside;
  Window halves;
  for (const CloneBlock& b : blocks.blocks) {
    // A block's fewest clones dominate each of its m.
    AddPairLosses(b.lo, *pair, b.mass * (1 + blocks.rounding), tolerance, grid, halves, cells,
                  infinite);
  }
  return ConnectCells(cells, infinite, grid);
}

namespace {

// delta(eps) of one PLD at many eps, each in O(1): suffix sums of
// the masses and of mass x e^-loss (delta = infinite + S1 - e^eps S2 over
// the losses above eps).
class PldDeltas {
 public:
  explicit PldDeltas(const Pld& p) : p_(p), mass_(p.mass.size() + 1), weighted_(mass_.size()) {
    for (std::size_t i = p.mass.size(); i-- > 0;) {
      mass_[i] = mass_[i + 1] + p.mass[i];
      weighted_[i] = weighted_[i + 1] + p.mass[i] * std::exp(-Loss(i));
    }
  }
  double operator()(double eps) const {
    // The first index whose loss is above eps.
    const double at = std::floor(eps / p_.grid) + 1 - static_cast<double>(p_.first);
    const std::size_t i =
        at <= 0 ? 0 : static_cast<std::size_t>(std::min(at, static_cast<double>(p_.mass.size())));
    const double tail = mass_[i] - std::exp(eps) * weighted_[i];
    return p_.infinite + std::max(0.0, tail);
  }
  double Loss(std::size_t i) const {
    return static_cast<double>(p_.first + static_cast<std::int64_t>(i)) * p_.grid;
  }

 private:
  const Pld& p_;
  std::vector<double> mass_, weighted_;  // suffix sums
};

// C_q(f)'s delta at eps >= 0 (shuffle_pld.h).
double SampledDelta(const PldDeltas& round, double q, double eps) {
  const double inverse_side = q * round(std::log1p(std::expm1(eps) / q));
  const double alpha = std::exp(eps), t = 1 - (1 - q) * alpha;
  const double own_side = t > 0 ? t * round(std::log(alpha * q / t)) : 0;
  return std::max(inverse_side, own_side);
}

}  // namespace

Pld SampledRoundPld(const Pld& round, double q) {
  if (q >= 1) return round;
  const double h = round.grid;
  const PldDeltas deltas(round);
  const double top = round.mass.empty() ? 0 : std::max(0.0, deltas.Loss(round.mass.size() - 1));
  // Past both sides' largest finite loss delta is the infinite mass, q times the round's.
  const std::int64_t last =
      std::max(Up(std::log1p(q * std::expm1(top)), h), Up(-std::log1p(-q), h)) + 1;
  const auto n = static_cast<std::size_t>(last);
  std::vector<double> delta(n + 1);
  for (std::size_t j = 0; j < n; ++j) {
    delta[j] = SampledDelta(deltas, q, static_cast<double>(j) * h);
  }
  delta[n] = q * round.infinite;
  return ConnectedPld(delta, h);
}

Pld MixPld(std::span<const std::pair<double, Pld>> components) {
  Pld out;
  out.infinite = 1;
  if (components.empty()) return out;
  out.grid = components.front().second.grid;
  bool any = false;
  std::int64_t first = 0, last = 0;  // the losses [first, last) the components reach
  for (const auto& [w, p] : components) {
    if (p.mass.empty()) continue;
    const std::int64_t end = p.first + static_cast<std::int64_t>(p.mass.size());
    first = any ? std::min(first, p.first) : p.first;
    last = any ? std::max(last, end) : end;
    any = true;
  }
  out.first = first;
  out.mass.assign(static_cast<std::size_t>(last - first), 0.0);
  double weight = 0, infinite = 0;
  for (const auto& [w, p] : components) {
    weight += w;
    infinite += w * p.infinite;
    for (std::size_t i = 0; i < p.mass.size(); ++i) {
      out.mass[static_cast<std::size_t>(p.first - first) + i] += w * p.mass[i];
    }
  }
  out.infinite = infinite + std::max(0.0, 1 - weight);
  return out;
}

namespace {

// Binomial(n, q) probabilities over [lo, hi], from their logarithms.
std::vector<double> BinomialWindow(std::uint64_t n, double q, std::uint64_t lo, std::uint64_t hi) {
  const double dn = static_cast<double>(n);
  std::vector<double> pmf;
  pmf.reserve(hi - lo + 1);
  for (std::uint64_t m = lo; m <= hi; ++m) {
    const double k = static_cast<double>(m);
    const double log_choose = std::lgamma(dn + 1) - std::lgamma(k + 1) - std::lgamma(dn - k + 1);
    const double log_q = k == 0 ? 0 : k * std::log(q);
    const double log_rest = dn == k ? 0 : (dn - k) * std::log1p(-q);
    pmf.push_back(std::exp(log_choose + log_q + log_rest));
  }
  return pmf;
}

}  // namespace

Result<Pld> PoissonRoundPld(std::uint64_t users, double q, double eps0, double grid,
                            double tolerance, ShuffleReduction reduction, std::size_t buckets,
                            double tail) {
  if (users < 1) return Error{"the number of users must be at least 1"};
  if (!(q > 0 && q <= 1)) return Error{"the sampling rate must be in (0, 1]"};
  if (buckets < 1) return Error{"give at least one block of counts"};
  // The count's window: 40 standard deviations (and 40) each side hold all
  // but an underflow of its mass; what they leave out is infinite loss.
  const double mean = static_cast<double>(users) * q, sd = std::sqrt(mean * (1 - q));
  std::uint64_t lo = static_cast<std::uint64_t>(std::max(0.0, std::floor(mean - 40 * sd - 40)));
  std::uint64_t hi =
      std::min<std::uint64_t>(users, static_cast<std::uint64_t>(std::ceil(mean + 40 * sd + 40)));
  const std::vector<double> pmf = BinomialWindow(users, q, lo, hi);
  const std::uint64_t window = lo;
  const auto at = [&](std::uint64_t m) { return pmf[m - window]; };
  double cut = 0;  // the tails moved to infinite loss, at most `tail`
  while (lo < hi && cut + at(lo) <= tail / 2) cut += at(lo++);
  while (hi > lo && cut + at(hi) <= tail) cut += at(hi--);
  std::vector<std::pair<double, Pld>> parts;
  if (lo == 0) {
    Pld none;  // nothing sent
    none.grid = grid;
    none.mass = {1.0};
    parts.emplace_back(at(0), std::move(none));
    if (hi == 0) return MixPld(parts);
    lo = 1;
  }
  const std::uint64_t width = (hi - lo + buckets) / buckets;  // ceil((hi - lo + 1) / buckets)
  for (std::uint64_t a = lo; a <= hi; a += width) {
    const std::uint64_t b = std::min(hi, a + width - 1);
    double w = 0;
    for (std::uint64_t m = a; m <= b; ++m) w += at(m);
    auto round = ShuffledRoundPld(a, eps0, grid, tolerance, reduction);
    if (!round.ok()) return Error{round.error()};
    const double rate = std::min(1.0, static_cast<double>(b) / static_cast<double>(users));
    parts.emplace_back(w, SampledRoundPld(*round, rate));
  }
  return MixPld(parts);
}

double ComposedWidth(const Pld& round, std::uint64_t times) {
  double mass = 0, mean = 0, square = 0;
  for (std::size_t i = 0; i < round.mass.size(); ++i) {
    const double at = static_cast<double>(i);
    mass += round.mass[i];
    mean += round.mass[i] * at;
    square += round.mass[i] * at * at;
  }
  if (mass <= 0) return 1;
  mean /= mass;
  const double sd = std::sqrt(std::max(0.0, square / mass - mean * mean));
  return 12 * std::sqrt(static_cast<double>(times)) * sd + static_cast<double>(round.mass.size());
}

Pld ComposePld(const Pld& round, std::uint64_t times, double trim) {
  Pld result;
  result.grid = round.grid;
  result.mass = {1.0};  // no loss
  if (times == 0) return result;
  int steps = 0;
  for (std::uint64_t t = times; t > 0; t >>= 1) steps += 2;
  const double each = trim / steps;
  Pld base = round;
  bool first = true;
  for (std::uint64_t t = times; t > 0; t >>= 1) {
    if (t & 1) {
      result = first ? base : ConvolvePld(result, base, each);
      first = false;
    }
    if (t > 1) base = ConvolvePld(base, base, each);
  }
  return result;
}

Result<Pld> ShuffledRoundOfRunPld(std::uint64_t n, double eps0, double q, double grid,
                                  double tolerance, ShuffleReduction reduction, bool poisson) {
  if (poisson && q < 1) {
    const auto users = static_cast<std::uint64_t>(std::llround(static_cast<double>(n) / q));
    return PoissonRoundPld(users, q, eps0, grid, tolerance, reduction, 32,
                           std::min(1e-12, tolerance));
  }
  auto shuffled = ShuffledRoundPld(n, eps0, grid, tolerance, reduction);
  if (!shuffled.ok()) return shuffled;
  return SampledRoundPld(*shuffled, q);
}

std::optional<Pld> ShuffledRunPld(std::uint64_t n, double eps0, double q, std::uint64_t rounds,
                                  double grid, double tolerance, double trim,
                                  ShuffleReduction reduction, bool poisson) {
  auto round = ShuffledRoundOfRunPld(n, eps0, q, grid, tolerance, reduction, poisson);
  if (!round.ok()) return std::nullopt;
  if (ComposedWidth(*round, rounds) > kMaxComposedWidth) return std::nullopt;
  return ComposePld(*round, rounds, trim);
}

double PldDelta(const Pld& pld, double eps) {
  double delta = pld.infinite;
  for (std::size_t i = 0; i < pld.mass.size(); ++i) {
    const double loss = static_cast<double>(pld.first + static_cast<std::int64_t>(i)) * pld.grid;
    if (loss > eps) delta += pld.mass[i] * -std::expm1(eps - loss);
  }
  return std::min(1.0, delta);
}

double PldEpsilon(const Pld& pld, double delta) {
  // At or past the largest finite loss, delta is the infinite mass alone
  // (searched from 200 up, so that a bound below 200 is bisected as before).
  std::size_t top = pld.mass.size();
  while (top > 0 && pld.mass[top - 1] == 0) --top;
  const double largest = static_cast<double>(pld.first + static_cast<std::int64_t>(top)) * pld.grid;
  double lo = 0, hi = std::max(200.0, largest);
  if (PldDelta(pld, hi) > delta) return std::numeric_limits<double>::infinity();
  if (PldDelta(pld, lo) <= delta) return 0;
  return Bisect(
             lo, hi, [&](double eps) { return PldDelta(pld, eps) <= delta; }, 0, 1e-7)
      .hi;
}

}  // namespace fedldp
