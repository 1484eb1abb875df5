// fedldp sample: raw draws of one mechanism or selector, for external audits.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>

#include "cli.h"
#include "commands.h"
#include "fedldp/mechanism/value_mechanism.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/random/secure_rng.h"
#include "fedldp/select/selector.h"
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp::cli {

void SetupSample(CLI::App& app, SampleOptions& o) {
  app.description(
      "Draw COUNT outputs, one per line.\n"
      "  Mechanism: fedldp sample --mechanism pm --epsilon 1 --input 0.3 --count 5 --seed 7\n"
      "  Selector:  fedldp sample --selector pe --epsilon 1 --k 2 --vector 0.1,-3,2 --count 5\n"
      "  Vector:    fedldp sample --vector-mechanism privunitg --epsilon 4 --input 0.6,0.8 \\\n"
      "               --count 5 --seed 7\n"
      "Selectors print 0-based indices, and -1 for PE's empty outcome. Inputs outside a\n"
      "mechanism's input domain are clipped to it (reported on stderr). Vector mechanisms\n"
      "print one report per line, its d entries comma-separated (shortest round-trip form);\n"
      "an input longer than --clip is scaled onto the ball (reported on stderr).");
  auto* mech = app.add_option("--mechanism", o.mechanism, "Value mechanism")
                   ->check(CLI::IsMember(ValueMechanismNames()));
  auto* sel = app.add_option("--selector", o.selector, "Dimension selector")
                  ->check(CLI::IsMember(SelectorNames()));
  auto* vec = app.add_option("--vector-mechanism", o.vector_mechanism, "Vector randomizer")
                  ->check(CLI::IsMember(VectorMechanismNames()));
  mech->excludes(sel);
  vec->excludes(mech)->excludes(sel);
  app.add_option("--epsilon", o.epsilon, "Privacy budget eps > 0")->required();
  app.add_option("--delta", o.delta, "Vector gaussian*: delta in (0, 1)");
  app.add_option("--clip", o.clip, "Vector mechanisms: l2 clip norm C > 0 (default 1)");
  app.add_option("--input", o.input, "Mechanism input x, or v1,v2,... for a vector mechanism");
  app.add_option("--center", o.center,
                 "twopoint: centre c of the range [c - r, c + r] (default 0)");
  app.add_option("--radius", o.radius, "twopoint: radius r > 0 of the range (default 1)");
  app.add_option("--vector", o.vector, "Selector input v1,v2,... (finite numbers)");
  app.add_option("--k", o.k,
                 "Selector: size of the Top-k set, 1 <= k <= d (default 1); fastprojunit: "
                 "the projected dimension, 1 <= k <= d (default min(d, 1000))");
  app.add_option("--count", o.count, "Number of draws")
      ->capture_default_str()
      ->check(Within(kDraws));
  auto* seed = app.add_option("--seed", o.seed,
                              "Seed of the counter-based generator (default: a fresh one, "
                              "printed on stderr)");
  app.add_flag("--secure", o.secure, "Draw from the secure generator (libsodium) instead")
      ->excludes(seed);
}

namespace {

void Require(bool ok, const std::string& message) {
  if (!ok) throw UsageError(message);
}

// Buffered writer of one number per line.
class LineWriter {
 public:
  explicit LineWriter(std::ostream& out) : out_(out) { buffer_.reserve(1 << 16); }
  ~LineWriter() { out_ << buffer_; }
  template <typename T>
  void Write(T value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    buffer_.append(text, end);
    buffer_.push_back('\n');
    if (buffer_.size() > (1 << 16) - 64) {
      out_ << buffer_;
      buffer_.clear();
    }
  }

 private:
  std::ostream& out_;
  std::string buffer_;
};

std::unique_ptr<Rng> MakeRng(const SampleOptions& o, std::ostream& err) {
  if (o.secure) return std::make_unique<SecureRng>();
  std::uint64_t seed;
  if (o.seed) {
    seed = *o.seed;
  } else {
    SecureRng fresh;
    seed = fresh();
    err << "fedldp sample: seed " << seed << "\n";
  }
  return std::make_unique<CounterRng>(seed);
}

std::vector<double> ParseVector(const std::string& text, const char* option);

int SampleMechanism(const SampleOptions& o, std::ostream& out, std::ostream& err) {
  Require(o.input.has_value(), "--input is required with --mechanism");
  const std::vector<double> parsed = ParseVector(*o.input, "--input");
  Require(parsed.size() == 1, "--input must be one finite number with --mechanism");
  const double input = parsed[0];
  Require(!o.vector && !o.k, "--vector and --k apply to --selector only");
  Require(!o.delta && !o.clip, "--delta and --clip apply to --vector-mechanism only");
  const bool twopoint = o.mechanism == "twopoint";
  Require(twopoint || (!o.center && !o.radius),
          "--center and --radius apply to --mechanism twopoint only");
  auto made =
      MakeValueMechanism(o.mechanism, o.epsilon, o.center.value_or(0.0), o.radius.value_or(1.0));
  Require(made.ok(), made.ok() ? "" : made.error());
  const ValueMechanism& m = *made.value();
  const Interval domain = m.input_domain();
  if (!domain.Contains(input)) {
    err << "fedldp sample: input " << input << " clipped to [" << domain.lo << ", " << domain.hi
        << "]\n";
  }
  auto rng = MakeRng(o, err);
  LineWriter writer(out);
  for (std::uint64_t i = 0; i < o.count; ++i) writer.Write(m.Sample(input, *rng));
  return 0;
}

// "v1,v2,..." -> numbers; every entry must be a whole finite number.
std::vector<double> ParseVector(const std::string& text, const char* option) {
  std::vector<double> v;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string entry = text.substr(start, end - start);
    double value = 0;
    const auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), value);
    Require(!entry.empty() && ec == std::errc() && ptr == entry.data() + entry.size() &&
                std::isfinite(value),
            std::string(option) + " entry " + std::to_string(v.size() + 1) + " ('" + entry +
                "') is not a finite number");
    v.push_back(value);
    start = end + 1;
  }
  return v;
}

int SampleSelector(const SampleOptions& o, std::ostream& out, std::ostream& err) {
  Require(o.vector && !o.vector->empty(),
          "--vector is required with --selector and must not be empty");
  const std::vector<double> vector = ParseVector(*o.vector, "--vector");
  Require(!o.input && !o.center && !o.radius,
          "--input, --center and --radius apply to --mechanism only");
  Require(!o.delta && !o.clip, "--delta and --clip apply to --vector-mechanism only");
  auto made = MakeSelector(o.selector, o.epsilon, vector.size(), o.k.value_or(1));
  Require(made.ok(), made.ok() ? "" : made.error());
  const Selector& s = *made.value();
  auto rng = MakeRng(o, err);
  LineWriter writer(out);
  for (std::uint64_t i = 0; i < o.count; ++i) writer.Write(s.Select(vector, *rng));
  return 0;
}

int SampleVector(const SampleOptions& o, std::ostream& out, std::ostream& err) {
  Require(o.input.has_value(), "--input v1,v2,... is required with --vector-mechanism");
  const std::vector<double> x = ParseVector(*o.input, "--input");
  Require(!o.vector && !o.center && !o.radius,
          "--vector, --center and --radius do not apply to --vector-mechanism");
  VectorRandomizerConfig config;
  config.mechanism = ParseVectorMechanism(o.vector_mechanism).value();
  config.dimension = x.size();
  config.epsilon = o.epsilon;
  config.delta = o.delta.value_or(0.0);
  config.clip = o.clip.value_or(1.0);
  if (o.k) Require(*o.k >= 1, "--k must be in [1, d = " + std::to_string(x.size()) + "], got 0");
  config.k = o.k.value_or(0);
  config.public_seed = o.seed.value_or(0);
  auto made = MakeVectorRandomizer(config);
  Require(made.ok(), made.ok() ? "" : made.error());
  const VectorRandomizer& r = *made.value();
  double norm = 0;
  for (double v : x) norm += v * v;
  if (std::sqrt(norm) > r.clip()) {
    err << "fedldp sample: input of norm " << std::sqrt(norm) << " scaled onto the ball of radius "
        << r.clip() << "\n";
  }
  auto rng = MakeRng(o, err);
  std::vector<double> report(x.size());
  std::string line;
  for (std::uint64_t i = 0; i < o.count; ++i) {
    r.Randomize(x, report, *rng);
    line.clear();
    for (std::size_t j = 0; j < report.size(); ++j) {
      char text[32];
      const auto end = std::to_chars(text, text + sizeof text, report[j]).ptr;
      if (j) line.push_back(',');
      line.append(text, end);
    }
    line.push_back('\n');
    out << line;
  }
  return 0;
}

}  // namespace

int RunSample(const SampleOptions& o, std::ostream& out, std::ostream& err) {
  Require(!o.mechanism.empty() || !o.selector.empty() || !o.vector_mechanism.empty(),
          "give --mechanism, --selector or --vector-mechanism");
  // Validated for every choice, also for topk and uniform, which ignore it.
  const Status epsilon = CheckEpsilon(o.epsilon, "--epsilon");
  Require(epsilon.ok(), epsilon.error());
  if (!o.vector_mechanism.empty()) return SampleVector(o, out, err);
  return o.mechanism.empty() ? SampleSelector(o, out, err) : SampleMechanism(o, out, err);
}

}  // namespace fedldp::cli
