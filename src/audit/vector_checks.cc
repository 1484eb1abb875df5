#include "fedldp/audit/vector_checks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "fedldp/random/counter_rng.h"
#include "fedldp/random/normal.h"

namespace fedldp::audit {

VectorSummary DrawVectorReports(const VectorRandomizer& r, std::span<const double> x, std::size_t n,
                                std::uint64_t seed, std::span<const double> cap_direction,
                                double cap_threshold) {
  const std::size_t d = r.dimension();
  VectorSummary s;
  s.n = n;
  s.target.resize(d);
  r.ClipInto(x, s.target);
  s.mean.assign(d, 0.0);
  s.m2.assign(d, 0.0);
  s.errors.reserve(n);
  CounterRng rng(seed);
  std::vector<double> out(d);
  for (std::size_t k = 0; k < n; ++k) {
    r.Randomize(x, out, rng);
    double error = 0, along = 0;
    const double count = static_cast<double>(k + 1);
    for (std::size_t i = 0; i < d; ++i) {
      const double e = out[i] - s.target[i];
      error += e * e;
      const double delta = out[i] - s.mean[i];
      s.mean[i] += delta / count;
      s.m2[i] += delta * (out[i] - s.mean[i]);
      if (!cap_direction.empty()) along += out[i] * cap_direction[i];
    }
    s.errors.push_back(error);
    if (!cap_direction.empty()) s.along.push_back(along);
    if (!cap_direction.empty() && along >= cap_threshold) ++s.in_cap;
  }
  return s;
}

double CoordinateThreshold(std::size_t d) {
  double lo = 5, hi = 40;  // Q(z) = 1e-4 / (2 d) by bisection, at least 5
  if (NormalUpperTail(lo) * 2 * static_cast<double>(d) <= 1e-4) return lo;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (NormalUpperTail(mid) * 2 * static_cast<double>(d) > 1e-4 ? lo : hi) = mid;
  }
  return hi;
}

Verdict CheckCoordinateMeans(const VectorSummary& s, std::span<const double> expected,
                             double allowance) {
  const double threshold = CoordinateThreshold(s.mean.size());
  double worst = 0;
  std::size_t where = 0;
  const double n = static_cast<double>(s.n);
  for (std::size_t i = 0; i < s.mean.size(); ++i) {
    const double se = std::sqrt(s.m2[i] / (n - 1) / n);
    const double off = std::max(0.0, std::fabs(s.mean[i] - expected[i]) - allowance);
    const double z = se > 0 ? off / se : (off > 0 ? INFINITY : 0.0);
    if (z > worst) worst = z, where = i;
  }
  std::ostringstream reason;
  reason << "worst coordinate " << where << ": mean " << s.mean[where] << " vs " << expected[where]
         << " (+-" << allowance << "), z = " << worst << " (threshold " << threshold << ")";
  return {worst <= threshold, reason.str(), worst};
}

Verdict CheckSquaredError(const VectorSummary& s, double low, double high) {
  return CheckMeanWithin(s.errors, low, high, "E||R(x) - x||^2");
}

Verdict CheckMeanWithin(std::span<const double> values, double low, double high, const char* what) {
  const auto m = SampleMoments(values);
  const double se = std::sqrt(m.variance / m.n);
  const double off = m.mean < low ? low - m.mean : (m.mean > high ? m.mean - high : 0.0);
  const double z = se > 0 ? off / se : (off > 0 ? INFINITY : 0.0);
  std::ostringstream reason;
  reason << what << " measured " << m.mean << " +- " << se << ", closed form [" << low << ", "
         << high << "], z = " << z;
  return {z <= 5, reason.str(), z};
}

Verdict CheckCapShare(const VectorSummary& s, double p) {
  const double n = static_cast<double>(s.n);
  const double share = static_cast<double>(s.in_cap) / n;
  const double z = (share - p) / std::sqrt(p * (1 - p) / n);
  std::ostringstream reason;
  reason << "share in the cap " << share << " vs p = " << p << ", z = " << z;
  return {std::fabs(z) <= 5, reason.str(), z};
}

Verdict CheckGaussianTiming(const GaussianRandomizer& g, std::size_t calls, std::uint64_t seed,
                            double low) {
  const Sampler sampler = [&g](std::span<const double> in, std::span<double> out, Rng& rng) {
    std::copy(in.begin(), in.end(), out.begin());
    g.noise().SampleMany(out, rng);
  };
  return CheckSamplerTiming(sampler, low * g.clip(), g.clip(), calls, seed);
}

std::vector<double> TestDirection(std::size_t d, double norm, std::uint64_t seed) {
  CounterRng rng(seed, 0x444952ULL);
  std::vector<double> v(d);
  double sumsq = 0;
  for (double& x : v) {
    x = 0.5 + Uniform01(rng);  // magnitudes within a factor 3 of each other
    if (rng() & 1) x = -x;
    sumsq += x * x;
  }
  for (double& x : v) x *= norm / std::sqrt(sumsq);
  return v;
}

namespace {

// n reports drawn by `report`, each an error or OK: the share off the
// support, with the first error as the example.
Verdict CountOffSupport(std::size_t n, const std::function<Status()>& report) {
  std::size_t off = 0;
  std::string example;
  for (std::size_t j = 0; j < n; ++j) {
    const Status s = report();
    if (!s.ok() && off++ == 0) example = s.error();
  }
  const double share = n == 0 ? 0.0 : static_cast<double>(off) / static_cast<double>(n);
  std::ostringstream out;
  if (off == 0) {
    out << "all " << n << " reports on the public support";
  } else {
    out << off << " of " << n << " reports (" << 100 * share
        << " %) off the public support: " << example;
  }
  return {off == 0, out.str(), share};
}

}  // namespace

Verdict CheckPublicSupport(const VectorRandomizer& r, std::span<const double> x, std::size_t n,
                           std::uint64_t seed) {
  CounterRng rng(seed);
  return CountOffSupport(n, [&] { return r.DrawAndCheckSent(x, rng); });
}

Verdict CheckVectorTiming(const VectorRandomizer& r, std::size_t calls, std::uint64_t seed) {
  const std::size_t d = r.dimension();
  const Sampler sampler = [&r, d](std::span<const double> in, std::span<double> out, Rng& rng) {
    for (std::size_t start = 0; start + d <= in.size(); start += d) {
      r.Randomize(in.subspan(start, d), out.subspan(start, d), rng);
    }
  };
  return CheckSamplerTiming(sampler, 0.0, r.clip() / std::sqrt(static_cast<double>(d)),
                            std::max(calls, 1000 * d), seed, r.varying_draws());
}

namespace {

// The first failure's reason goes into the note.
void Judge(const Verdict& v, VectorAudit& a) {
  if (!v.pass && a.pass) a.note = v.reason;
  a.pass = a.pass && v.pass;
}

void AuditPrivacy(const VectorRandomizer& r, VectorAudit& a) {
  const auto exact = r.ImplementedPrivacy();
  a.log_ratio = exact.log_ratio;
  const bool ratio_ok = std::isnan(exact.log_ratio) || exact.log_ratio <= r.epsilon() * (1 + 1e-9);
  const bool delta_ok = exact.delta_at_epsilon <= r.delta() * (1 + 1e-9);
  std::ostringstream text;
  text.precision(3);
  if (r.delta() > 0) {
    text << "delta(eps) = " << exact.delta_at_epsilon << " (asked " << r.delta() << ")";
  } else if (!ratio_ok) {
    text << "log worst ratio " << exact.log_ratio << " exceeds eps " << r.epsilon();
  }
  a.note = text.str();
  a.pass = ratio_ok && delta_ok;
}

// A cap law's check (PrivUnitG's own): the share of reports at the input
// C u (u a unit vector, so that no rounding to the sphere mixes the caps of u
// and -u) in its cap {<R, u> >= threshold}, and the share of the same event
// at -C u, whose ratio to the first is the privacy ratio e^-eps.
void AuditCapShare(const VectorRandomizer& r, const VectorRandomizer::CapLaw& law,
                   std::span<const double> unit, std::size_t n, std::uint64_t seed,
                   VectorAudit& a) {
  a.min_p = 1;
  for (const double side : {1.0, -1.0}) {
    std::vector<double> x(unit.begin(), unit.end());
    for (double& v : x) v *= side * r.clip();
    const double p = side > 0 ? law.share : law.opposite_share;
    // Too few expected counts for the normal approximation (-C u at a large
    // eps): the ratio is checked at the smaller eps.
    if (static_cast<double>(n) * std::fmin(p, 1 - p) < 10) continue;
    const auto s = DrawVectorReports(r, x, n, seed + (side < 0), unit, law.threshold);
    const auto cap = CheckCapShare(s, p);
    a.min_p = std::fmin(a.min_p, 2 * NormalUpperTail(std::fabs(cap.value)));
    Judge(cap, a);
  }
}

}  // namespace

VectorAudit AuditVectorRandomizer(const VectorRandomizer& r, std::size_t n, std::uint64_t seed,
                                  std::size_t timing_calls) {
  VectorAudit a;
  AuditPrivacy(r, a);
  const double norm = 0.9 * r.clip();
  const auto x = TestDirection(r.dimension(), norm, seed);
  const auto s = DrawVectorReports(r, x, n, seed);
  const auto mean = CheckCoordinateMeans(s, s.target, r.BiasBound(x));
  const auto error = CheckSquaredError(s, r.SquaredErrorLowerBound(norm), r.SquaredError(norm));
  a.worst_mean_z = mean.value, a.worst_var_z = error.value;
  Judge(mean, a);
  Judge(error, a);
  if (const auto cap = r.Cap()) {
    AuditCapShare(r, *cap, TestDirection(r.dimension(), 1.0, seed), n, seed + 1, a);
  }
  const auto support = CheckPublicSupport(r, x, std::min<std::size_t>(n, 2000), seed);
  a.ruled_out = support.value;
  Judge(support, a);
  if (timing_calls > 0) {
    const auto timing = CheckVectorTiming(r, timing_calls, seed);
    a.timing_t = timing.value;
    Judge(timing, a);
  }
  return a;
}

}  // namespace fedldp::audit
