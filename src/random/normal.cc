#include "fedldp/random/normal.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "fedldp/base/hot_loop.h"

namespace fedldp {
namespace {

constexpr int kLayers = 256;
constexpr double kR = 3.6541528853610088;  // Marsaglia & Tsang's r for 256 layers

double Gauss(double x) { return std::exp(-0.5 * x * x); }

// x[0] = v / f(r) is the base layer's pseudo-width (the rectangle [0, r] x
// [0, f(r)] and the tail together, area v); x[1] = r > x[2] > ... > x[256] = 0,
// layer i >= 1 the rectangle [0, x[i]] x [f(x[i]), f(x[i+1])] of area v.
struct Tables {
  std::array<double, kLayers + 1> x;
  std::array<double, kLayers + 1> f;
  Tables() {
    const double fr = Gauss(kR);
    const double v =
        kR * fr + std::sqrt(std::numbers::pi / 2) * std::erfc(kR / std::numbers::sqrt2);
    x[0] = v / fr;
    x[1] = kR;
    for (int i = 1; i < kLayers - 1; ++i)
      x[i + 1] = std::sqrt(-2 * std::log(v / x[i] + Gauss(x[i])));
    x[kLayers] = 0;
    for (int i = 0; i <= kLayers; ++i) f[i] = Gauss(x[i]);
    f[0] = 0;  // the base layer starts at the axis
  }
};

const Tables& ZigguratTables() {
  static const Tables tables;
  return tables;
}

// Marsaglia's tail beyond r: exact for N(0, 1) conditioned on |Z| > r, one side.
double Tail(Rng& rng) {
  double x, y;
  do {
    x = -std::log(UniformPositive01(rng)) / kR;
    y = -std::log(UniformPositive01(rng));
  } while (y + y < x * x);
  return kR + x;
}

// The ziggurat step for word w; when the fast path rejects, finishes with
// fresh words from rng.
inline double FromWord(std::uint64_t w, const Tables& t, Rng& rng) {
  while (true) {
    const int i = static_cast<int>(w & 0xff);
    const double sign = (w & 0x100) ? -1.0 : 1.0;
    const double z = static_cast<double>(static_cast<std::int64_t>(w >> 11)) * 0x1.0p-53 * t.x[i];
    if (z < t.x[i + 1]) return sign * z;
    if (i == 0) return sign * Tail(rng);
    // Wedge of layer i: a uniform height between f(x[i]) and f(x[i+1]).
    const double y = t.f[i] + Uniform01(rng) * (t.f[i + 1] - t.f[i]);
    if (y < Gauss(z)) return sign * z;
    w = rng();
  }
}

// The fast path for a block, without branches (so it vectorises, table
// lookups as gathers): dst[j] = +-U x[i], and slow[j] = 1 where U x[i] >= x[i+1]
// (the draw needs the wedge or tail: FromWord). Exact arithmetic only, so every
// vector width computes the same doubles. Returns the number of slow draws.
FEDLDP_HOT_LOOP
std::size_t FastBlock(const std::uint64_t* words, std::size_t n, const double* x, double* dst,
                      std::uint8_t* slow) {
  std::size_t rejected = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint64_t w = words[j];
    const std::size_t i = w & 0xff;
    const double u = static_cast<double>(static_cast<std::int64_t>(w >> 11)) * 0x1.0p-53;
    const double z = u * x[i];
    const double sign = 1.0 - 2.0 * static_cast<double>((w >> 8) & 1);
    dst[j] = sign * z;
    const bool reject = !(z < x[i + 1]);
    slow[j] = reject;
    rejected += reject;
  }
  return rejected;
}

}  // namespace

void FillStandardNormal(std::span<double> out, Rng& rng) {
  const Tables& t = ZigguratTables();
  constexpr std::size_t kBlock = 256;
  std::uint64_t words[kBlock];
  std::uint8_t slow[kBlock];
  for (std::size_t start = 0; start < out.size(); start += kBlock) {
    const std::size_t n = std::min(kBlock, out.size() - start);
    rng.Fill(std::span(words, n));
    double* dst = out.data() + start;
    if (FastBlock(words, n, t.x.data(), dst, slow) == 0) continue;
    for (std::size_t j = 0; j < n; ++j)
      if (slow[j]) dst[j] = FromWord(words[j], t, rng);
  }
}

double ZigguratNormal(Rng& rng) { return FromWord(rng(), ZigguratTables(), rng); }

double NormalAbove(double lo, Rng& rng) {
  if (lo < 0.5) {
    while (true) {
      const double z = ZigguratNormal(rng);
      if (z >= lo) return z;
    }
  }
  const double rate = 0.5 * (lo + std::sqrt(lo * lo + 4));
  while (true) {
    const double z = lo - std::log(UniformPositive01(rng)) / rate;
    const double d = z - rate;
    if (Uniform01(rng) < std::exp(-0.5 * d * d)) return z;
  }
}

double NormalBelow(double hi, Rng& rng) { return -NormalAbove(-hi, rng); }

double NormalCdf(double t) { return 0.5 * std::erfc(-t / std::numbers::sqrt2); }
double NormalUpperTail(double t) { return 0.5 * std::erfc(t / std::numbers::sqrt2); }
double NormalDensity(double t) { return Gauss(t) / std::sqrt(2 * std::numbers::pi); }

}  // namespace fedldp
