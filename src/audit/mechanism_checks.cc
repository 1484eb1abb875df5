#include "fedldp/audit/mechanism_checks.h"

#include <algorithm>
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

namespace {

// Finite window holding all but a negligible part of the law.
Interval Window(const ValueMechanism& m, double x) {
  Interval d = m.output_domain();
  if (!std::isfinite(d.lo) || !std::isfinite(d.hi)) {
    const double sd = std::sqrt(m.Variance(x));
    d = {m.Mean(x) - 12 * sd, m.Mean(x) + 12 * sd};
  }
  return d;
}

}  // namespace

double FourthCentralMoment(const ValueMechanism& m, double x) {
  const double mean = m.Mean(x);
  auto fourth = [mean](double y) { return (y - mean) * (y - mean) * (y - mean) * (y - mean); };
  double total = 0;
  for (double a : m.Atoms()) total += m.Mass(a, x) * fourth(a);
  const Interval w = Window(m, x);
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
  const std::vector<double> atoms = m.Atoms();
  std::vector<std::vector<double>> likelihood;
  for (double x : inputs) {
    std::vector<double> l;
    for (double a : atoms) l.push_back(m.Mass(a, x));
    constexpr int kGrid = 4001;
    for (int i = 0; i < kGrid; ++i)
      l.push_back(m.Density(w.lo + (w.hi - w.lo) * i / (kGrid - 1), x));
    likelihood.push_back(std::move(l));
  }
  return CheckRatio(WorstRatio(likelihood), m.epsilon());
}

}  // namespace fedldp::audit
