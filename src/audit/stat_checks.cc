#include "fedldp/audit/stat_checks.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace fedldp::audit {

Moments SampleMoments(std::span<const double> values) {
  Moments m;
  m.n = static_cast<double>(values.size());
  long double sum = 0;
  for (double v : values) sum += v;
  m.mean = static_cast<double>(sum / values.size());
  long double s2 = 0, s4 = 0;
  for (double v : values) {
    const long double d = v - m.mean;
    s2 += d * d;
    s4 += d * d * d * d;
  }
  m.variance = static_cast<double>(s2 / (values.size() - 1));
  m.fourth = static_cast<double>(s4 / values.size());
  return m;
}

Verdict CheckMean(const Moments& m, double expected_mean, double expected_variance) {
  const double se = std::sqrt(expected_variance / m.n);
  const double z = (m.mean - expected_mean) / se;
  std::ostringstream out;
  out << "mean " << m.mean << " vs expected " << expected_mean << ": z = " << z
      << " (bound 5, n = " << m.n << ")";
  return {std::fabs(z) <= 5.0, out.str(), z};
}

Verdict CheckVariance(const Moments& m, double expected_variance, double expected_fourth) {
  const double n = m.n, s4 = expected_variance * expected_variance;
  const double var_s2 = (expected_fourth - s4 * (n - 3) / (n - 1)) / n;
  const double z = (m.variance - expected_variance) / std::sqrt(var_s2);
  std::ostringstream out;
  out << "variance " << m.variance << " vs closed form " << expected_variance << ": z = " << z
      << " (bound 5, n = " << m.n << ")";
  return {std::fabs(z) <= 5.0, out.str(), z};
}

namespace {

// Regularised upper incomplete gamma Q(a, x) (series for x < a + 1, Lentz's
// continued fraction otherwise).
double GammaQ(double a, double x) {
  if (x <= 0) return 1.0;
  const double log_prefix = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 100000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-16) break;
    }
    return 1.0 - sum * std::exp(log_prefix);
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  return std::exp(log_prefix) * h;
}

}  // namespace

double ChiSquarePValue(double statistic, double df) { return GammaQ(df / 2, statistic / 2); }

Verdict CheckChiSquare(std::span<const std::uint64_t> observed, std::span<const double> probability,
                       double p_floor) {
  double n = 0;
  for (auto o : observed) n += static_cast<double>(o);
  for (std::size_t i = 0; i < observed.size(); ++i) {
    if (probability[i] <= 0 && observed[i] > 0) {
      std::ostringstream out;
      out << "category " << i << " has probability 0 but was observed " << observed[i] << " times";
      return {false, out.str(), 0.0};
    }
  }
  // Merge neighbours until every expected count is >= 5.
  std::vector<double> obs, expected;
  double o_acc = 0, e_acc = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    o_acc += static_cast<double>(observed[i]);
    e_acc += n * probability[i];
    if (e_acc >= 5) {
      obs.push_back(o_acc);
      expected.push_back(e_acc);
      o_acc = e_acc = 0;
    }
  }
  if (e_acc > 0 || o_acc > 0) {
    if (expected.empty()) {
      obs.push_back(o_acc);
      expected.push_back(e_acc);
    } else {
      obs.back() += o_acc;
      expected.back() += e_acc;
    }
  }
  double statistic = 0;
  for (std::size_t i = 0; i < obs.size(); ++i) {
    statistic += (obs[i] - expected[i]) * (obs[i] - expected[i]) / expected[i];
  }
  const double df = static_cast<double>(obs.size()) - 1;
  const double p = df >= 1 ? ChiSquarePValue(statistic, df) : 1.0;
  std::ostringstream out;
  out << "chi-square " << statistic << " on " << df << " df, p = " << p << " (floor " << p_floor
      << ", n = " << n << ")";
  return {p >= p_floor, out.str(), p};
}

double WorstRatio(const std::vector<std::vector<double>>& likelihood_by_input) {
  double worst = 1.0;
  for (const auto& a : likelihood_by_input) {
    for (const auto& b : likelihood_by_input) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i] == 0 && b[i] == 0) continue;
        if (b[i] == 0) return std::numeric_limits<double>::infinity();
        worst = std::fmax(worst, a[i] / b[i]);
      }
    }
  }
  return worst;
}

Verdict CheckRatio(double worst_ratio, double epsilon) {
  // The only slack is for rounding in the ratio itself.
  const double bound = std::exp(epsilon) * (1 + 1e-12);
  std::ostringstream out;
  out << "worst ratio " << worst_ratio << " = e^(" << std::log(worst_ratio) << ") vs e^" << epsilon;
  return {worst_ratio <= bound, out.str(), worst_ratio};
}

}  // namespace fedldp::audit
