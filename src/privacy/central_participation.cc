#include "fedldp/privacy/central_participation.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace fedldp {

namespace {

// Which direction's sums: shares biased up (remove) or down (add).
enum class Side { kRemove, kAdd };

// A bound on a share's rounding, with room: its fraction r of a grid step
// is computed to a few ulps of the step count (at most some 1e5 steps:
// 1e-10), and the share moves by about as much.
constexpr double kShareSlack = 1e-9;

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

// log(a e^(j h) + b) / h for the grid index j, a > 0, b >= 0.
double RatioSteps(std::int64_t j, double a, double b, double h) {
  const double x = static_cast<double>(j) * h;
  if (b == 0) return static_cast<double>(j) + std::log(a) / h;  // j exact
  return x > 0 ? (x + std::log(a + b * std::exp(-x))) / h : std::log(a * std::exp(x) + b) / h;
}

// B's masses of the loss log(a S + b) on the grid, each value given to the
// grid points around it in the shares that keep its mean (a S + b is
// affine in S: a spread of one is a spread of the other).
Pld RatioLosses(const SumLaw& s, double a, double b, Side side) {
  const double h = s.grid;
  const auto n = static_cast<std::int64_t>(s.mass.size());
  const double at_zero = b > 0 ? std::log(b) / h : 0;
  const double low = b > 0 ? at_zero : n > 0 ? RatioSteps(s.first, a, b, h) : 0;
  const double high = n > 0 ? RatioSteps(s.first + n - 1, a, b, h) : low;
  Pld out{
      .grid = h, .first = static_cast<std::int64_t>(std::floor(low)), .mass = {}, .infinite = 0};
  out.mass.assign(static_cast<std::size_t>(std::floor(high) - std::floor(low)) + 2, 0.0);
  const auto add = [&](double steps, double m) {
    const Share share = ShareOf(steps, h, side);
    double* at = out.mass.data() + (share.offset - out.first);
    at[0] += m * (1 - share.upper);
    at[1] += m * share.upper;
  };
  for (std::int64_t i = 0; i < n; ++i) add(RatioSteps(s.first + i, a, b, h), s.mass[i]);
  if (b > 0) add(at_zero, s.zero);
  return out;
}

// The pair whose likelihood ratio is a S + b under B (S of B's law, from
// the remove pass `up` and the add pass `down`), A being B tilted by it,
// plus a times what only A shows; with b = 0, S = 0 is an infinite loss
// in the add direction.
DirectionalPld PairOfRatio(const SumLaw& up, const SumLaw& down, double a, double b) {
  DirectionalPld out;
  out.remove = RatioLosses(up, a, b, Side::kRemove);
  for (std::size_t i = 0; i < out.remove.mass.size(); ++i) {
    const auto loss = out.remove.first + static_cast<std::int64_t>(i);
    out.remove.mass[i] *= std::exp(static_cast<double>(loss) * up.grid);
  }
  out.remove.infinite = a * up.lost;
  const Pld low = RatioLosses(down, a, b, Side::kAdd);
  out.add = Pld{.grid = low.grid,
                .first = -(low.first + static_cast<std::int64_t>(low.mass.size()) - 1),
                .mass = std::vector<double>(low.mass.rbegin(), low.mass.rend()),
                .infinite = b > 0 ? 0 : down.zero};
  return out;
}

// The grid (to 1e-4, up) at which a support of `span` points of `grid`
// would be `limit` points: spans scale as 1 / grid.
double GridToFit(double grid, double span, double limit) {
  return std::ceil(grid * span / limit * 1e4) / 1e4;
}

Status CheckStep(const Pld& step) {
  if (!(step.grid > 0 && step.grid <= 0.1)) return Error{"the grid step must be in (0, 0.1]"};
  if (step.mass.size() > kMaxAllocationSupport) {
    const double coarser = GridToFit(step.grid, static_cast<double>(step.mass.size()),
                                     static_cast<double>(kMaxAllocationSupport));
    std::ostringstream why;
    why << "the step's losses span " << step.mass.size() << " grid points, past "
        << kMaxAllocationSupport << " (each sum takes their square): ";
    if (coarser <= 0.1) {
      why << "a grid of at least " << coarser;
    } else {
      why << "too wide for any grid up to 0.1";
    }
    return Error{why.str()};
  }
  return {};
}

}  // namespace

Result<DirectionalPld> AllocationEpochPld(const Pld& step, std::uint64_t steps, double tail) {
  if (steps < 1) return Error{"an epoch needs at least one step"};
  if (!(tail >= 0 && tail <= 1e-3)) return Error{"the tail must be in [0, 1e-3]"};
  if (Status bad = CheckStep(step); !bad.ok()) return Error{bad.error()};
  // S / t: A_t is B^t tilted by it.
  return PairOfRatio(SumOfCopies(StepLaw(step), steps, Side::kRemove, tail),
                     SumOfCopies(StepLaw(step), steps, Side::kAdd, tail),
                     1 / static_cast<double>(steps), 0);
}

Result<DirectionalPld> PoissonSampledPld(const Pld& step, double q) {
  if (!(q > 0 && q <= 1)) return Error{"the sampling rate must be in (0, 1]"};
  if (Status bad = CheckStep(step); !bad.ok()) return Error{bad.error()};
  // q A + (1 - q) B against B: the ratio q V + 1 - q.
  return PairOfRatio(StepLaw(step), StepLaw(step), q, 1 - q);
}

DirectionalPld ComposeDirectional(const DirectionalPld& pair, std::uint64_t times, double trim) {
  return {ComposePld(pair.remove, times, trim), ComposePld(pair.add, times, trim)};
}

double DirectionalDelta(const DirectionalPld& pair, double eps) {
  return std::max(PldDelta(pair.remove, eps), PldDelta(pair.add, eps));
}

Status GaussianStepsConfig::Validate() const {
  if (!(std::isfinite(sigma) && sigma > 0)) return Error{"the noise scale sigma must be > 0"};
  if (steps < 1) return Error{"an epoch needs at least one step"};
  if (!(sampling_rate > 0 && sampling_rate <= 1)) {
    return Error{"the sampling rate must be in (0, 1]"};
  }
  if (sampling_rate < 1 && steps > 1) {
    return Error{"Poisson sampling (a rate below 1) or random allocation (steps > 1), not both"};
  }
  if (epochs < 1) return Error{"at least one epoch"};
  FEDLDP_RETURN_IF_ERROR(CheckDelta(delta));
  if (!(grid > 0 && grid <= 0.1)) return Error{"the grid step must be in (0, 0.1]"};
  return {};
}

Result<DirectionalPld> GaussianStepsPld(const GaussianStepsConfig& c) {
  if (Status bad = c.Validate(); !bad.ok()) return Error{bad.error()};
  auto step = GaussianPld(c.sigma, c.grid);
  if (!step.ok()) return Error{step.error()};
  auto epoch = c.sampling_rate < 1 ? PoissonSampledPld(*step, c.sampling_rate)
                                   : AllocationEpochPld(*step, c.steps, 1e-13);
  if (!epoch.ok()) return epoch;
  const double width =
      std::max(ComposedWidth(epoch->remove, c.epochs), ComposedWidth(epoch->add, c.epochs));
  if (width > kMaxStepsComposedWidth) {
    const double coarser = GridToFit(c.grid, width, kMaxStepsComposedWidth);
    std::ostringstream why;
    why << "the " << c.epochs << " epochs' composition would spread over about "
        << std::llround(width) << " grid points, past " << kMaxStepsComposedWidth
        << " (each composition takes their square): a grid of at least " << coarser
        << ", or fewer epochs";
    return Error{why.str()};
  }
  return ComposeDirectional(*epoch, c.epochs, 1e-13);
}

Result<CentralEpsilon> GaussianStepsEpsilon(const GaussianStepsConfig& c) {
  auto pair = GaussianStepsPld(c);
  if (!pair.ok()) return Error{pair.error()};
  // Each direction's delta falls with eps: the larger's eps is the max of theirs.
  const double remove = PldEpsilon(pair->remove, c.delta), add = PldEpsilon(pair->add, c.delta);
  return CentralEpsilon{.epsilon = std::max(remove, add), .remove = remove, .add = add};
}

}  // namespace fedldp
