#include "fedldp/privacy/random_allocation.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

namespace fedldp {

namespace {

// Which direction's sums: shares biased up (remove) or down (add).
enum class Side { kRemove, kAdd };

// A bound on a share's rounding (its fraction r of a grid step is computed
// to some 1e-13 of a step; the share moves by at most about that), with room.
constexpr double kShareSlack = 2e-12;

// B's law of a partial sum S of outputs' V = dA/dB: masses at S = e^(j h),
// j = first + i; `zero`: B's mass at S = 0; `lost`: E_B[S; trimmed to the
// part only A shows] (of t outputs, A_t shows that part with weight 1 / t).
struct SumLaw {
  double grid = 0;
  std::int64_t first = 0;
  std::vector<double> mass;
  double zero = 0, lost = 0;
};

double At(const SumLaw& s, std::size_t i) {
  return std::exp(static_cast<double>(s.first + static_cast<std::int64_t>(i)) * s.grid);
}

// Moves the ends of the support, each at most `budget` of what the side
// counts (A's mass, S times B's, for remove; B's for add), to the parts
// only A shows (lost) and only B shows (zero).
void TrimSum(SumLaw& s, double budget, Side side) {
  const auto cost = [&](std::size_t i) {
    return side == Side::kRemove ? s.mass[i] * At(s, i) : s.mass[i];
  };
  const auto drop = [&](std::size_t i) {
    s.zero += s.mass[i];
    s.lost += s.mass[i] * At(s, i);
  };
  std::size_t begin = 0, end = s.mass.size();
  for (double cut = 0; begin < end && cut + cost(begin) <= budget; ++begin) {
    cut += cost(begin);
    drop(begin);
  }
  for (double cut = 0; end > begin && cut + cost(end - 1) <= budget; --end) {
    cut += cost(end - 1);
    drop(end - 1);
  }
  s.mass.erase(s.mass.begin() + static_cast<std::ptrdiff_t>(end), s.mass.end());
  s.mass.erase(s.mass.begin(), s.mass.begin() + static_cast<std::ptrdiff_t>(begin));
  s.first += static_cast<std::int64_t>(begin);
}

// One output's law: B's mass e^-loss times A's at each loss, the rest at
// V = 0; A's infinite mass is a part only A shows.
SumLaw StepLaw(const Pld& step) {
  SumLaw s{.grid = step.grid, .first = step.first, .mass = step.mass};
  double total = 0;
  for (std::size_t i = 0; i < s.mass.size(); ++i) {
    s.mass[i] *= (1 + 4 * DBL_EPSILON) / At(s, i);
    total += s.mass[i];
  }
  s.zero = std::max(0.0, 1 - total) + 4 * DBL_EPSILON;
  s.lost = step.infinite;
  return s;
}

// The grid step a sum moves up by and the share given one step further:
// e^(d h) + 1 = e^((offset + r) h), share = (e^(r h) - 1) / (e^h - 1), the
// fraction that keeps the mean, biased by its rounding towards the side's
// pessimistic end.
struct Share {
  std::int64_t offset;
  double upper;
};

Share ShareOf(double steps, double h, Side side) {
  const double whole = std::floor(steps);
  const double exact = std::expm1((steps - whole) * h) / std::expm1(h);
  const double upper = side == Side::kRemove ? exact + kShareSlack : exact - kShareSlack;
  return {static_cast<std::int64_t>(whole), std::clamp(upper, 0.0, 1.0)};
}

// log(1 + e^(d h)) / h, accurately for either sign of d.
double SumSteps(std::int64_t d, double h) {
  const double dh = static_cast<double>(d) * h;
  return d <= 0 ? std::log1p(std::exp(dh)) / h
                : static_cast<double>(d) + std::log1p(std::exp(-dh)) / h;
}

// B's law of X + Y (independent): each pair of grid values given to the
// grid points around their sum in the shares that keep its mean.
SumLaw AddSums(const SumLaw& x, const SumLaw& y, Side side) {
  const double h = x.grid;
  const std::size_t nx = x.mass.size(), ny = y.mass.size();
  SumLaw out{.grid = h, .first = 0, .mass = {}, .zero = x.zero * y.zero, .lost = x.lost + y.lost};
  const std::int64_t reach = static_cast<std::int64_t>(std::ceil(std::log(2.0) / h)) + 2;
  const auto end = [](const SumLaw& s) {
    return s.first + static_cast<std::int64_t>(s.mass.size());
  };
  out.first = std::min(nx ? x.first : y.first, ny ? y.first : x.first);
  out.mass.assign(static_cast<std::size_t>(std::max(end(x), end(y)) + reach - out.first), 0.0);
  for (std::size_t i = 0; i < nx; ++i) out.mass[x.first - out.first + i] += x.mass[i] * y.zero;
  for (std::size_t j = 0; j < ny; ++j) out.mass[y.first - out.first + j] += y.mass[j] * x.zero;
  if (nx > 0 && ny > 0) {
    // Shares by k = j + (nx - 1 - i): d = (y.first + j) - (x.first + i).
    const std::int64_t d0 = y.first - (x.first + static_cast<std::int64_t>(nx) - 1);
    std::vector<Share> shares(nx + ny - 1);
    for (std::size_t k = 0; k < shares.size(); ++k) {
      shares[k] = ShareOf(SumSteps(d0 + static_cast<std::int64_t>(k), h), h, side);
    }
    for (std::size_t i = 0; i < nx; ++i) {
      const double m = x.mass[i];
      if (m == 0) continue;
      double* base = out.mass.data() + (x.first - out.first + static_cast<std::int64_t>(i));
      const Share* s = shares.data() + (nx - 1 - i);
      for (std::size_t j = 0; j < ny; ++j) {
        const double p = m * y.mass[j], up = p * s[j].upper;
        base[s[j].offset] += p - up;
        base[s[j].offset + 1] += up;
      }
    }
  }
  // Every mass raised by a bound on its sum's rounding: at least the exact one.
  const double raise = 1 + static_cast<double>((nx + 2) * (ny + 2)) * 2 * DBL_EPSILON;
  for (double& m : out.mass) m *= raise;
  out.zero *= raise;
  out.lost *= raise;
  return out;
}

// B's law of the sum of t independent copies of `one`, by doubling, each
// law trimmed so that all trims together cost at most `tail`: a law of c
// copies is in t / c of the final sum's parts (the doublings) or once (the
// running sum), and what its trim counts costs, in the end, t / c times
// its A-mass / t (remove) or its B-mass (add).
SumLaw SumOfCopies(const SumLaw& one, std::uint64_t t, Side side, double tail) {
  int trims = 1;
  for (std::uint64_t u = t; u > 0; u >>= 1) trims += 2;
  const auto trim = [&](SumLaw& s, std::uint64_t c) {
    const double share = tail * static_cast<double>(c) / trims;
    TrimSum(s, side == Side::kRemove ? share : share / static_cast<double>(t), side);
  };
  SumLaw result, base = one;
  trim(base, 1);
  bool empty = true;
  std::uint64_t done = 0, copies = 1;
  for (std::uint64_t u = t; u > 0; u >>= 1) {
    if (u & 1) {
      result = empty ? base : AddSums(result, base, side);
      done += copies;
      trim(result, done);
      empty = false;
    }
    if (u > 1) {
      base = AddSums(base, base, side);
      copies *= 2;
      trim(base, copies);
    }
  }
  return result;
}

// B's masses of the loss log(S / t) on the grid: S / t = e^((j + c) h),
// c = -log(t) / h, given to the grid points around it keeping its mean.
Pld LossOfSum(const SumLaw& s, std::uint64_t t, Side side) {
  const double h = s.grid;
  const Share share = ShareOf(-std::log(static_cast<double>(t)) / h, h, side);
  Pld b{.grid = h, .first = s.first + share.offset, .mass = {}, .infinite = 0};
  b.mass.assign(s.mass.size() + 1, 0.0);
  for (std::size_t i = 0; i < s.mass.size(); ++i) {
    b.mass[i] += s.mass[i] * (1 - share.upper);
    b.mass[i + 1] += s.mass[i] * share.upper;
  }
  return b;
}

}  // namespace

Result<DirectionalPld> AllocationEpochPld(const Pld& step, std::uint64_t steps, double tail) {
  if (steps < 1) return Error{"an epoch needs at least one step"};
  if (!(step.grid > 0 && step.grid <= 0.1)) return Error{"the grid step must be in (0, 0.1]"};
  if (!(tail >= 0 && tail <= 1e-3)) return Error{"the tail must be in [0, 1e-3]"};
  if (step.mass.size() > kMaxAllocationSupport) {
    return Error{"the step's losses span " + std::to_string(step.mass.size()) +
                 " grid points, past " + std::to_string(kMaxAllocationSupport) +
                 " (each sum takes their square): a coarser grid"};
  }
  const double t = static_cast<double>(steps), h = step.grid;
  DirectionalPld out;
  // Remove: A_t is B^t tilted by S / t, so A's mass at loss l is e^l B's.
  SumLaw sum = SumOfCopies(StepLaw(step), steps, Side::kRemove, tail);
  out.remove = LossOfSum(sum, steps, Side::kRemove);
  for (std::size_t i = 0; i < out.remove.mass.size(); ++i) {
    out.remove.mass[i] *=
        std::exp(static_cast<double>(out.remove.first + static_cast<std::int64_t>(i)) * h);
  }
  out.remove.infinite = sum.lost / t;
  // Add: B^t's loss is -log(S / t), infinite where S = 0.
  sum = SumOfCopies(StepLaw(step), steps, Side::kAdd, tail);
  const Pld b = LossOfSum(sum, steps, Side::kAdd);
  out.add = Pld{.grid = h,
                .first = -(b.first + static_cast<std::int64_t>(b.mass.size()) - 1),
                .mass = std::vector<double>(b.mass.rbegin(), b.mass.rend()),
                .infinite = sum.zero};
  return out;
}

DirectionalPld ComposeDirectional(const DirectionalPld& pair, std::uint64_t times, double trim) {
  return {ComposePld(pair.remove, times, trim), ComposePld(pair.add, times, trim)};
}

double DirectionalDelta(const DirectionalPld& pair, double eps) {
  return std::max(PldDelta(pair.remove, eps), PldDelta(pair.add, eps));
}

double DirectionalEpsilon(const DirectionalPld& pair, double delta) {
  // Each direction's delta falls with eps: the larger's is the max of theirs.
  return std::max(PldEpsilon(pair.remove, delta), PldEpsilon(pair.add, delta));
}

Result<DirectionalPld> GaussianAllocationPld(double sigma, std::uint64_t steps,
                                             std::uint64_t epochs, double grid) {
  if (epochs < 1) return Error{"at least one epoch"};
  auto step = GaussianPld(sigma, grid);
  if (!step.ok()) return Error{step.error()};
  auto epoch = AllocationEpochPld(*step, steps, 1e-13);
  if (!epoch.ok()) return epoch;
  return ComposeDirectional(*epoch, epochs, 1e-13);
}

Result<AllocationEpsilon> GaussianAllocationEpsilon(double sigma, std::uint64_t steps,
                                                    std::uint64_t epochs, double delta,
                                                    double grid) {
  if (!(delta >= 1e-12 && delta < 1)) return Error{"delta must be in [1e-12, 1)"};
  auto pair = GaussianAllocationPld(sigma, steps, epochs, grid);
  if (!pair.ok()) return Error{pair.error()};
  const double remove = PldEpsilon(pair->remove, delta), add = PldEpsilon(pair->add, delta);
  return AllocationEpsilon{.epsilon = std::max(remove, add), .remove = remove, .add = add};
}

}  // namespace fedldp
