#include "fedldp/audit/mechanism_checks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "fedldp/random/counter_rng.h"

namespace fedldp::audit {

std::vector<double> AdversarialInputs(const ValueMechanism& m) {
  const Interval d = m.input_domain();
  const double w = d.hi - d.lo;
  const double inf = std::numeric_limits<double>::infinity();
  return {d.lo,
          d.hi,
          d.center(),
          d.lo + 0.1 * w,
          d.lo + 0.37 * w,
          d.hi - 1e-9 * w,
          d.lo - 10 * w,
          d.hi + 10 * w,
          -inf,
          inf,
          std::numeric_limits<double>::quiet_NaN()};
}

std::vector<double> Draw(const ValueMechanism& m, double x, std::size_t n, std::uint64_t seed) {
  CounterRng rng(seed);
  std::vector<double> in(n, x), out(n);
  m.SampleMany(in, out, rng);
  return out;
}

Verdict CheckMeanOf(std::span<const double> samples, const ValueMechanism& reference, double x) {
  return CheckMean(SampleMoments(samples), reference.Mean(x), reference.Variance(x));
}

Verdict CheckVarianceOf(std::span<const double> samples, const ValueMechanism& reference,
                        double x) {
  return CheckVariance(SampleMoments(samples), reference.Variance(x),
                       FourthCentralMoment(reference, x));
}

Verdict CheckDomainOf(std::span<const double> samples, const ValueMechanism& reference) {
  const Interval d = reference.output_domain();
  for (double y : samples) {
    if (!d.Contains(y) || !reference.CanOutput(y)) {
      std::ostringstream out;
      out << "output " << y << " is outside the output domain [" << d.lo << ", " << d.hi << "]";
      return {false, out.str()};
    }
  }
  return {true, "all outputs in the output domain"};
}

Verdict CheckSupportOf(std::span<const double> samples, const ValueMechanism& m) {
  // Every input the mechanism can see: the adversarial ones after clipping.
  std::vector<double> neighbours;
  for (double x : AdversarialInputs(m)) neighbours.push_back(m.Clip(x));
  std::sort(neighbours.begin(), neighbours.end());
  neighbours.erase(std::unique(neighbours.begin(), neighbours.end()), neighbours.end());
  std::size_t ruled_out = 0;
  double example = 0;
  for (double y : samples) {
    bool possible = m.OnPublicSupport(y);
    for (std::size_t i = 0; possible && i < neighbours.size(); ++i) {
      possible = m.Mass(y, neighbours[i]) > 0;
    }
    if (!possible && ruled_out++ == 0) example = y;
  }
  const double share = samples.empty() ? 0.0 : static_cast<double>(ruled_out) / samples.size();
  std::ostringstream out;
  out.precision(17);
  if (ruled_out == 0) {
    out << "all " << samples.size() << " outputs are public values every input can produce";
  } else {
    out << ruled_out << " of " << samples.size() << " outputs (" << 100 * share
        << " %) are off the public support or impossible at another input, e.g. " << example;
  }
  return {ruled_out == 0, out.str(), share};
}

namespace {

// Finite window holding all but a negligible part of the law: the output
// domain, or mean +- 12 sd where the domain is far wider than that (the
// discrete Laplace's grid reaches 2^52 steps).
Interval Window(const ValueMechanism& m, double x) {
  Interval d = m.output_domain();
  const double sd = std::sqrt(m.Variance(x));
  if (!(d.hi - d.lo <= 1e9 * sd)) d = {m.Mean(x) - 12 * sd, m.Mean(x) + 12 * sd};
  return d;
}

// Calls f(y) once for every atom and every grid point in `w` that is not an
// atom; past `most` grid points, on an even stride of them.
template <typename F>
void ForEachSupportPoint(const ValueMechanism& m, Interval w, std::uint64_t most, F&& f) {
  const std::vector<double> atoms = m.Atoms();
  for (double a : atoms) f(a);
  const auto grid = m.Grid();
  if (!grid) return;
  const auto first = std::max(grid->lo, static_cast<std::int64_t>(std::ceil(w.lo / grid->step)));
  const auto last = std::min(grid->hi, static_cast<std::int64_t>(std::floor(w.hi / grid->step)));
  if (last < first) return;
  const std::uint64_t count = static_cast<std::uint64_t>(last - first) + 1;
  const auto stride = static_cast<std::int64_t>((count + most - 1) / most);
  for (std::int64_t i = first; i <= last; i += stride) {
    const double y = grid->Value(i);
    if (std::find(atoms.begin(), atoms.end(), y) == atoms.end()) f(y);
  }
}

}  // namespace

double FourthCentralMoment(const ValueMechanism& m, double x) {
  const double mean = m.Mean(x);
  auto fourth = [mean](double y) { return (y - mean) * (y - mean) * (y - mean) * (y - mean); };
  double total = 0;
  const Interval w = Window(m, x);
  ForEachSupportPoint(m, w, std::uint64_t{1} << 26,
                      [&](double y) { total += m.Mass(y, x) * fourth(y); });
  constexpr int kCells = 1 << 18;
  const double h = (w.hi - w.lo) / kCells;
  for (int i = 0; i < kCells; ++i) {
    const double y = w.lo + (i + 0.5) * h;
    total += m.Density(y, x) * fourth(y) * h;
  }
  return total;
}

Verdict CheckLawOf(std::span<const double> samples, const ValueMechanism& reference, double x) {
  // Categories: (-inf, e_1], (e_1, e_2], ..., (e_K, +inf) with e_i equally
  // spaced over the window, except that an atom gets a category of its own
  // (a, a] = {a}, assigned before the bins.
  const Interval w = Window(reference, x);
  constexpr int kBins = 64;
  std::vector<double> edges;
  for (int i = 1; i < kBins; ++i) edges.push_back(w.lo + (w.hi - w.lo) * i / kBins);
  const std::vector<double> atoms = reference.Atoms();
  const std::size_t categories = atoms.size() + edges.size() + 1;
  std::vector<std::uint64_t> observed(categories, 0);
  for (double y : samples) {
    auto atom = std::find(atoms.begin(), atoms.end(), y);
    if (atom != atoms.end()) {
      ++observed[atom - atoms.begin()];
    } else {
      ++observed[atoms.size() + (std::lower_bound(edges.begin(), edges.end(), y) - edges.begin())];
    }
  }
  std::vector<double> probability(categories, 0.0);
  // An atom's mass is counted in its own category, so it is taken out of its bin.
  std::vector<double> atom_mass_in_bin(edges.size() + 1, 0.0);
  for (std::size_t a = 0; a < atoms.size(); ++a) {
    probability[a] = reference.Mass(atoms[a], x);
    const auto bin = std::lower_bound(edges.begin(), edges.end(), atoms[a]) - edges.begin();
    atom_mass_in_bin[bin] += probability[a];
  }
  double previous = 0;
  for (std::size_t b = 0; b <= edges.size(); ++b) {
    const double cdf = b < edges.size() ? reference.Cdf(edges[b], x) : 1.0;
    probability[atoms.size() + b] = std::fmax(0.0, cdf - previous - atom_mass_in_bin[b]);
    previous = cdf;
  }
  return CheckChiSquare(observed, probability);
}

Verdict CheckPrivacyOf(const ValueMechanism& m) {
  const std::vector<double> inputs = AdversarialInputs(m);
  const Interval w = Window(m, m.input_domain().center());
  // The outputs probed: the public support (every grid point up to 2^21 of
  // them), and a density grid for a mechanism that has one.
  std::vector<double> outputs;
  ForEachSupportPoint(m, w, std::uint64_t{1} << 21, [&](double y) { outputs.push_back(y); });
  constexpr int kGrid = 4001;
  for (int i = 0; i < kGrid; ++i) {
    const double y = w.lo + (w.hi - w.lo) * i / (kGrid - 1);
    if (!m.OnPublicSupport(y)) outputs.push_back(y);
  }
  std::vector<std::vector<double>> likelihood;
  for (double x : inputs) {
    std::vector<double> l;
    l.reserve(outputs.size());
    for (double y : outputs) l.push_back(m.Likelihood(y, x));
    likelihood.push_back(std::move(l));
  }
  return CheckRatio(WorstRatio(likelihood), m.epsilon());
}

namespace {

// Yuen's trimmed t for a mean of 0: the 10 % trimmed mean over its standard
// error from the winsorized variance, robust to the odd batch an interrupt
// lands in.
double TrimmedT(std::vector<double> d) {
  std::sort(d.begin(), d.end());
  const std::size_t n = d.size(), g = n / 10;
  double sum = 0;
  for (std::size_t i = g; i < n - g; ++i) sum += d[i];
  const double trimmed = sum / static_cast<double>(n - 2 * g);
  for (std::size_t i = 0; i < g; ++i) d[i] = d[g], d[n - 1 - i] = d[n - 1 - g];
  const Moments w = SampleMoments(d);
  const double se = std::sqrt(w.variance / static_cast<double>(n)) /
                    (1 - 2 * static_cast<double>(g) / static_cast<double>(n));
  return se > 0 ? trimmed / se : 0.0;
}

}  // namespace

namespace {

// A batch of one measurement: nanoseconds per call, and random words drawn.
struct Batch {
  double ns;
  std::uint64_t words;
};

// The words drawn at the two ends: the same in every batch, or for a
// sampler whose count varies by design (a rejection loop), counts whose
// paired differences have a trimmed t below 4 (an input-dependent loop draws
// more at one end in most batches).
Verdict JudgeWords(std::span<const Batch> at_x0, std::span<const Batch> at_x1, double x0, double x1,
                   bool varying) {
  const std::size_t n = at_x0.size();
  std::ostringstream text;
  text.precision(4);
  std::vector<double> diff(n);
  double mean0 = 0, mean1 = 0;
  for (std::size_t b = 0; b < n; ++b) {
    const auto w0 = static_cast<double>(at_x0[b].words), w1 = static_cast<double>(at_x1[b].words);
    diff[b] = w0 - w1;
    mean0 += w0 / static_cast<double>(n), mean1 += w1 / static_cast<double>(n);
    if (!varying && at_x0[b].words != at_x1[b].words) {
      text << "draws " << at_x0[b].words << " random words at " << x0 << ", " << at_x1[b].words
           << " at " << x1 << " on one stream (batch " << b << ")";
      return {false, text.str(), 0.0};
    }
  }
  if (!varying) return {true, "", 0.0};
  const double t = TrimmedT(diff);
  text << "draws " << mean0 << " random words a batch at " << x0 << ", " << mean1 << " at " << x1
       << ": trimmed paired t = " << t << " (bound 4)";
  return {std::fabs(t) < 4, text.str(), t};
}

// One measurement's verdict on its paired batches (see MeasureTiming).
Verdict JudgeTiming(std::span<const Batch> at_x0, std::span<const Batch> at_x1, double x0,
                    double x1, std::size_t calls, bool varying_words) {
  const std::size_t n = at_x0.size();
  const Verdict words = JudgeWords(at_x0, at_x1, x0, x1, varying_words);
  if (!words.pass) return words;
  std::ostringstream text;
  text.precision(3);
  std::vector<double> diff(n);
  double mean0 = 0, mean1 = 0;
  for (std::size_t b = 0; b < n; ++b) {
    diff[b] = at_x0[b].ns - at_x1[b].ns;
    mean0 += at_x0[b].ns / static_cast<double>(n), mean1 += at_x1[b].ns / static_cast<double>(n);
  }
  const double t = TrimmedT(diff);
  // Past a million calls, t finds any systematic difference, however small:
  // the branch-free, vectorised two-point loop (0.58 ns a call) shows 1-5 ps
  // between its ends with |t| up to 8 in some processes and not in others;
  // PM, HM and Laplace (3-16 ns a call, every draw's words the same at both
  // ends) show up to 4 % between their ends with |t| up to 25 on a shared
  // 2-core VM (Xeon, AVX-512), and a sign that changes from one process to
  // the next (an effect of the process and the machine, not of the input).
  // So a difference below max(kFloorNs, kShare of the time a call) passes
  // whatever t says: kFloorNs (10 ps, a thirtieth of a cycle) is twice the
  // largest difference of the first kind, kShare (5 %) above the second.
  // Work for one input only is caught either way: a loop that draws more
  // words exactly, by the count above; a branch of 0.1 ns on 0.58 ns is 17 %.
  constexpr double kFloorNs = 0.01, kShare = 0.05;
  const double floor = std::max(kFloorNs, kShare * std::min(mean0, mean1));
  const bool pass = std::fabs(t) < 4 || std::fabs(mean0 - mean1) < floor;
  text << "per call " << mean0 << " ns at " << x0 << ", " << mean1 << " ns at " << x1
       << ": trimmed paired t = " << t << " over " << n << " batches of " << calls
       << " (bound 4, or a difference under " << floor << " ns); "
       << (varying_words ? words.reason : "same random words at both");
  return {pass, text.str(), t};
}

// One measurement of CheckTimingOf.
Verdict MeasureTiming(const Sampler& m, double x0, double x1, std::size_t calls, std::uint64_t seed,
                      bool varying_words) {
  constexpr std::size_t kBatches = 1000;
  constexpr double kBatchNs = 2e4;  // a batch of at least 20 us: far above the clock's grain
  std::vector<double> in(std::max<std::size_t>(1, calls / kBatches)), out(in.size());
  // One batch at x on the batch's own stream. The same buffers for both
  // ends, so that only the input differs. Short batches, so that the two of
  // a pair see the same machine: a batch an interrupt or another process
  // lands in is an outlier, trimmed.
  auto time = [&](double x, std::uint64_t stream) {
    std::fill(in.begin(), in.end(), x);
    CounterRng rng(seed, stream);
    const auto start = std::chrono::steady_clock::now();
    m(in, out, rng);
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    return Batch{took.count() / static_cast<double>(in.size()), rng.position()};
  };
  // Warm caches, branch predictors and the clock first; lengthen fast batches.
  double ns = 0;
  for (std::uint64_t b = 0; b < 20; ++b) ns = time(x0, kBatches + b).ns, time(x1, kBatches + b);
  if (ns * static_cast<double>(in.size()) < kBatchNs) {
    in.resize(static_cast<std::size_t>(std::ceil(kBatchNs / std::max(ns, 0.01))));
    out.resize(in.size());
  }
  std::vector<Batch> at_x0(kBatches), at_x1(kBatches);
  for (std::size_t b = 0; b < kBatches; ++b) {
    // Alternate which end goes first, so a drift in speed cancels.
    if (b % 2 == 0) {
      at_x0[b] = time(x0, b + 1), at_x1[b] = time(x1, b + 1);
    } else {
      at_x1[b] = time(x1, b + 1), at_x0[b] = time(x0, b + 1);
    }
  }
  return JudgeTiming(at_x0, at_x1, x0, x1, in.size(), varying_words);
}

}  // namespace

Verdict CheckTimingBetween(const ValueMechanism& m, double x0, double x1, std::size_t calls,
                           std::uint64_t seed) {
  return CheckSamplerTiming([&m](std::span<const double> in, std::span<double> out,
                                 Rng& rng) { m.SampleMany(in, out, rng); },
                            x0, x1, calls, seed);
}

Verdict CheckSamplerTiming(const Sampler& m, double x0, double x1, std::size_t calls,
                           std::uint64_t seed, bool varying_words) {
  Verdict first = MeasureTiming(m, x0, x1, calls, seed, varying_words);
  if (first.pass) return first;
  // A sampler whose time depends on its input fails again on fresh streams;
  // a burst of load on one side of the pairs rarely does.
  Verdict again = MeasureTiming(m, x0, x1, calls, seed + 0x9e3779b97f4a7c15ULL, varying_words);
  again.reason = "measured twice: " + first.reason + "; again " + again.reason;
  return again;
}

Verdict CheckTimingOf(const ValueMechanism& m, std::size_t calls, std::uint64_t seed) {
  const Interval d = m.input_domain();
  return CheckTimingBetween(m, d.lo, d.hi, calls, seed);
}

}  // namespace fedldp::audit
