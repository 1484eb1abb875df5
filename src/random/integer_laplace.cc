#include "fedldp/random/integer_laplace.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace fedldp {
namespace {

using Table = IntegerLaplace::Table;
constexpr std::uint64_t kPass = IntegerLaplace::kPass;
constexpr std::uint64_t kColumns = IntegerLaplace::kColumns;
constexpr std::uint64_t kTotal = IntegerLaplace::kTotal;

// a x <= b y for a, b < 2^128 and x, y < 2^64, compared in 192 bits.
bool ProductAtMost(Uint128 a, std::uint64_t x, Uint128 b, std::uint64_t y) {
  auto wide = [](Uint128 m, std::uint64_t n) {
    const Uint128 low = static_cast<Uint128>(static_cast<std::uint64_t>(m)) * n;
    return std::pair{(m >> 64) * n + (low >> 64), static_cast<std::uint64_t>(low)};
  };
  return wide(a, x) <= wide(b, y);
}

// v_h = ceil(x_h + D), x_h = scale R^-h, D = ceil(b / c) + 1, r = c / b: then
// v_{h-1} < R x_h + D + 1 <= R (x_h + D) - r <= R v_h - r. The room r covers
// the long double x_h: its relative error is below L 2^-64 = 2^-51, and
// x_0 <= V r = 2^50 r, so its absolute error is below r / 2. PassRatiosHold
// checks the result in integers all the same: that check is the proof.
// The offset D ~ 1 / r is why the weights must exceed 1 / r by far (rate
// >= 2^-19: x_0 ~ V r >= 2^10 D).
std::vector<std::uint64_t> PassWeights(const IntegerExpRatio& r, long double scale) {
  const Uint128 b = Uint128{1} << r.shift;
  const auto offset = static_cast<long double>((b + r.extra - 1) / r.extra + 1);
  const long double down = 1 / (1 + std::ldexp(static_cast<long double>(r.extra), -r.shift));
  std::vector<std::uint64_t> v(kPass);
  long double x = scale;
  for (std::uint64_t h = 0; h < kPass; ++h, x *= down) {
    v[h] = static_cast<std::uint64_t>(std::ceil(x + offset));
  }
  return v;
}

// Q(L - 1) / Q(L) = v_{L-1} V' / (v_T v_0) is at most R (lower) and its
// inverse at most R (upper), in integers.
bool BoundaryLowerHolds(const IntegerExpRatio& r, std::uint64_t last, std::uint64_t first,
                        std::uint64_t tail, std::uint64_t total) {
  const Uint128 b = Uint128{1} << r.shift, bc = b + r.extra;
  return ProductAtMost(last * b, total, first * bc, tail);
}
bool BoundaryUpperHolds(const IntegerExpRatio& r, std::uint64_t last, std::uint64_t first,
                        std::uint64_t tail, std::uint64_t total) {
  const Uint128 b = Uint128{1} << r.shift, bc = b + r.extra;
  return ProductAtMost(tail * b, first, last * bc, total);
}

// v_T: the smallest weight that meets the lower bound with V' = S + v_T,
// from the real solution v_{L-1} S / (R v_0 - v_{L-1}) two units down.
Result<std::uint64_t> TailWeight(const IntegerExpRatio& r, const std::vector<std::uint64_t>& v,
                                 std::uint64_t sum) {
  const long double ratio = 1 + std::ldexp(static_cast<long double>(r.extra), -r.shift);
  const auto last = static_cast<long double>(v[kPass - 1]), first = static_cast<long double>(v[0]);
  const long double real = last * static_cast<long double>(sum) / (ratio * first - last);
  auto tail = static_cast<std::uint64_t>(std::max(1.0L, std::floor(real) - 2));
  for (int step = 0; step < 64 && !BoundaryLowerHolds(r, v[kPass - 1], v[0], tail, sum + tail);
       ++step) {
    ++tail;
  }
  if (!BoundaryLowerHolds(r, v[kPass - 1], v[0], tail, sum + tail) ||
      !BoundaryUpperHolds(r, v[kPass - 1], v[0], tail, sum + tail)) {
    return Error{"no integer tail weight meets the ratio"};
  }
  return tail;
}

// Within a pass: positive, non-increasing, v_h <= R v_{h+1} (integers).
bool PassRatiosHold(const IntegerExpRatio& r, const std::vector<std::uint64_t>& v) {
  const Uint128 b = Uint128{1} << r.shift, bc = b + r.extra;
  for (std::uint64_t h = 0; h + 1 < kPass; ++h) {
    if (v[h + 1] == 0 || v[h + 1] > v[h] || v[h] * b > v[h + 1] * bc) return false;
  }
  return true;
}

// Walker's alias method in integers: column i holds 2^13 w_i of V-sized columns.
void BuildAlias(Table& t) {
  std::vector<std::uint64_t> scaled(kColumns);
  std::vector<std::uint16_t> small, large;
  for (std::uint64_t i = 0; i < kColumns; ++i) {
    scaled[i] = t.weight[i] * kColumns;  // <= 2^63
    (scaled[i] < kTotal ? small : large).push_back(static_cast<std::uint16_t>(i));
  }
  t.threshold.assign(kColumns, kTotal);
  t.alias.resize(kColumns);
  std::iota(t.alias.begin(), t.alias.end(), std::uint16_t{0});
  while (!small.empty() && !large.empty()) {
    const std::uint16_t s = small.back(), l = large.back();
    small.pop_back();
    t.threshold[s] = scaled[s];
    t.alias[s] = l;
    scaled[l] -= kTotal - scaled[s];
    if (scaled[l] < kTotal) large.pop_back(), small.push_back(l);
  }
  // The totals balance, so every column left holds exactly V of itself.
}

// The weights for R: the pass from v_0 ~ V (1 - 1/R) (1 - shrink), the tail
// weight, and what is left of V as the redraw weight; shrink from 2^-20 up
// until the pass and tail fit in V (the offsets D add about D / r).
Result<std::vector<std::uint64_t>> Weights(const IntegerExpRatio& r) {
  const long double fall = 1 - 1 / (1 + std::ldexp(static_cast<long double>(r.extra), -r.shift));
  for (int shrink = 20; shrink >= 4; --shrink) {
    const long double scale = std::ldexp(fall, IntegerLaplace::kTotalBits);
    auto w = PassWeights(r, scale * (1 - std::ldexp(1.0L, -shrink)));
    if (!PassRatiosHold(r, w)) return Error{"the integer Laplace's pass weights break the ratio"};
    const std::uint64_t sum = std::accumulate(w.begin(), w.end(), std::uint64_t{0});
    auto tail = TailWeight(r, w, sum);
    if (!tail.ok()) return Error{tail.error()};
    if (sum + *tail > kTotal) continue;
    w.push_back(*tail);
    w.push_back(kTotal - sum - *tail);
    return w;
  }
  return Error{"the integer Laplace's weights do not fit in 2^50"};
}

}  // namespace

Result<IntegerLaplace> IntegerLaplace::Create(double rate) {
  if (!(rate >= 0x1.0p-19 && rate <= 0x1.0p-10)) {
    return Error{"the integer Laplace's rate must be in [2^-19, 2^-10]"};
  }
  auto ratio = MakeIntegerExpRatio(rate, 32);
  if (!ratio.ok()) return Error{ratio.error()};
  auto weights = Weights(*ratio);
  if (!weights.ok()) return Error{weights.error()};
  auto table = std::make_shared<Table>();
  table->ratio = *ratio;
  table->weight = std::move(*weights);
  table->total = kTotal - table->weight[kRedraw];
  BuildAlias(*table);
  table->suffix.assign(kPass + 1, 0);
  std::uint64_t below = 0;
  for (std::uint64_t h = kPass + 1; h-- > 0;) table->suffix[h] = below += table->weight[h];
  return IntegerLaplace(std::move(table));
}

// One pass: h in [0, L) with weight v_h, or kTail with weight v_T; the
// redraw column (weight V - V') draws a fresh word.
std::uint64_t IntegerLaplace::DrawPass(std::uint64_t word, Rng& rng) const {
  const Table& t = *table_;
  while (true) {
    const std::uint64_t column = word >> (64 - kColumnBits);
    const std::uint64_t rest = (word >> 1) & (kTotal - 1);
    const std::uint64_t h = rest < t.threshold[column] ? column : t.alias[column];
    if (h != kRedraw) return h;
    word = rng();
  }
}

std::int64_t IntegerLaplace::Sample(Rng& rng) const {
  while (true) {
    std::uint64_t word = rng();
    const bool negative = (word & 1) != 0;  // bit 0: the sign, apart from the pass's bits
    std::uint64_t magnitude = 0, h;
    while ((h = DrawPass(word, rng)) == kTail) {
      magnitude += kPass;  // memoryless: another pass
      word = rng();
    }
    magnitude += h;
    if (negative && magnitude == 0) continue;  // +0 and -0 would count zero twice
    const auto y = static_cast<std::int64_t>(magnitude);
    return negative ? -y : y;
  }
}

// tau^c, the chance of c tails, for g = c L + h.
double IntegerLaplace::Passes(std::uint64_t g) const {
  const double tau =
      static_cast<double>(table_->weight[kTail]) / static_cast<double>(table_->total);
  return std::pow(tau, static_cast<double>(g / kPass));
}

double IntegerLaplace::PassTail(std::uint64_t g) const {
  return Passes(g) * static_cast<double>(table_->suffix[g % kPass]) /
         static_cast<double>(table_->total);
}

namespace {
std::uint64_t Magnitude(std::int64_t y) {
  return y < 0 ? 0 - static_cast<std::uint64_t>(y) : static_cast<std::uint64_t>(y);
}
}  // namespace

// P[Y = y] = Q(|y|) / (2 - Q(0)), Q(c L + h) = tau^c v_h / V'.
double IntegerLaplace::Mass(std::int64_t y) const {
  const std::uint64_t g = Magnitude(y);
  const double v = static_cast<double>(table_->weight[g % kPass]);
  const double v0 = static_cast<double>(table_->weight[0]);
  return Passes(g) * v / (2 * static_cast<double>(table_->total) - v0);
}

double IntegerLaplace::Cdf(std::int64_t y) const {
  const double q0 = static_cast<double>(table_->weight[0]) / static_cast<double>(table_->total);
  // P[Y <= -g] = Q[G >= g] / (2 - Q(0)), and P[Y <= y] = 1 - P[Y <= -y - 1].
  if (y < 0) return PassTail(Magnitude(y)) / (2 - q0);
  return 1 - PassTail(static_cast<std::uint64_t>(y) + 1) / (2 - q0);
}

double IntegerLaplace::Variance() const {
  // G = C L + H with C geometric (P[C = c] = tau^c (1 - tau)) and H
  // independent, P[H = h] = v_h / (V' - v_T); E[Y^2] = E[G^2] / Z.
  const Table& t = *table_;
  const auto total = static_cast<long double>(t.total);
  const long double tau = static_cast<long double>(t.weight[kTail]) / total;
  long double first = 0, second = 0;
  for (std::uint64_t h = 0; h < kPass; ++h) {
    const auto p = static_cast<long double>(t.weight[h]) / (total - t.weight[kTail]);
    first += p * h, second += p * h * h;
  }
  const long double c1 = tau / (1 - tau), c2 = tau * (1 + tau) / ((1 - tau) * (1 - tau));
  const auto pass = static_cast<long double>(kPass);
  const long double g2 = pass * pass * c2 + 2 * pass * c1 * first + second;
  return static_cast<double>(g2 / (1 - t.weight[0] / (2 * total)));
}

}  // namespace fedldp
