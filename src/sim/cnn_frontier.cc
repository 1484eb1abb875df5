#include "fedldp/sim/cnn_frontier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <utility>

#include "fedldp/base/files.h"
#include "fedldp/base/format.h"
#include "fedldp/base/limits.h"
#include "fedldp/base/names.h"
#include "fedldp/base/options.h"
#include "fedldp/base/units.h"
#include "fedldp/data/loaders.h"
#include "fedldp/fl/fedsel.h"
#include "fedldp/fl/ldpfl.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/sim/records.h"
#include "fedldp/sim/thread_pool.h"

namespace fedldp {

namespace {

constexpr const char* kNoiseFree = "noise-free";
constexpr const char* kTwoPoint = "twopoint";
constexpr double kNone = std::numeric_limits<double>::infinity();

// Thrown inside this file only, and caught by ReproduceCnnFrontier.
struct Failed {
  Error error;
};
struct Stopped {};

void Check(const Status& s) {
  if (!s.ok()) throw Failed{{s.error(), s.code()}};
}

// The training rows split into the rows grid points train on (fit) and
// the rows that score them (validation); the whole training set and the
// test set for the chosen points.
struct Rows {
  Dataset fit, validation, train, test;
};

Result<Rows> LoadRows(const CnnFrontierConfig& c) {
  auto loaded = LoadImageSplit(std::string(ImageDatasetName(c.dataset)), c.data_dir);
  if (!loaded.ok()) return Error{loaded.error(), loaded.code()};
  Rows r;
  r.train = std::move(loaded->train).First(c.train_rows);
  r.test = std::move(loaded->test).First(c.test_rows);
  auto held = HoldOut(r.train, c.validation_rows, c.seed);
  if (!held.ok()) return Error{held.error()};
  r.fit = std::move(held->fit);
  r.validation = std::move(held->validation);
  return r;
}

// One run's outcome, trained now or found in the journal.
struct Outcome {
  double accuracy = 0;  // a fraction
  double local_epsilon = 0;
  DpGuarantee total{kNone, 0};
  double seconds = 0;
  nlohmann::json privacy;  // the run's record's (null: noise-free)
  int rounds = 0;
};

Outcome FromRecord(const nlohmann::json& j) {
  const auto number = [&](const char* key, double otherwise) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : otherwise;
  };
  return {number("accuracy", 0) / 100,
          number("local_epsilon", kNone),
          {number("total_epsilon", kNone), number("total_delta", 0)},
          number("seconds", 0),
          j.contains("privacy") ? j["privacy"] : nlohmann::json(),
          static_cast<int>(number("rounds", 0))};
}

// The averaging as the grid spells it ("ema=0.995"), "" for none.
std::string AveragingSpec(const IterateAveragingConfig& a) {
  switch (a.kind) {
    case IterateAveragingKind::kNone:
      return "";
    case IterateAveragingKind::kEma:
      return "ema=" + Significant(a.decay, 6);
    case IterateAveragingKind::kTail:
      return "tail=" + Significant(a.tail, 6);
  }
  return "";
}

// The frozen layers as the grid spells them ("fc1+conv1": a CSV field).
std::string FreezeSpec(std::string freeze) {
  std::replace(freeze.begin(), freeze.end(), ',', '+');
  return freeze;
}

// The journal's key of a point; the fields added since keys were first
// written appear only where set, so earlier journals still resume.
std::string PointKey(const CnnGridPoint& g) {
  const std::string averaging = AveragingSpec(g.averaging);
  return std::string(ServerOptimizerName(g.server.kind)) + ":" +
         Significant(g.server.learning_rate, 6) + " clip=" + Significant(g.clip, 6) +
         " m=" + std::to_string(g.per_round) + " epochs=" + std::to_string(g.epochs) +
         (g.rounds == CnnGridPoint::Rounds::kDisjoint ? "" : " " + g.RoundsName()) +
         (averaging.empty() ? "" : " " + averaging) +
         (g.freeze.empty() ? "" : " freeze=" + g.freeze);
}

// The optional fields after the fifth: "sampled" or "allocated", "ema=DECAY"
// or "tail=FRACTION", "freeze=LAYERS" ('+' between layers).
Status ParseGridExtras(std::span<const std::string> extras, CnnGridPoint& g) {
  for (const std::string& e : extras) {
    const std::size_t eq = e.find('=');
    const std::string name = e.substr(0, eq);
    if ((e == "sampled" || e == "allocated") && g.rounds == CnnGridPoint::Rounds::kDisjoint) {
      g.rounds = e == "sampled" ? CnnGridPoint::Rounds::kSampled : CnnGridPoint::Rounds::kAllocated;
      continue;
    }
    if (name == "freeze" && eq != std::string::npos && g.freeze.empty() && eq + 1 < e.size()) {
      g.freeze = e.substr(eq + 1);
      std::replace(g.freeze.begin(), g.freeze.end(), '+', ',');
      continue;
    }
    if (eq == std::string::npos || (name != "ema" && name != "tail") ||
        g.averaging.kind != IterateAveragingKind::kNone) {
      return Error{"'" + e +
                   "': after the fifth field give sampled or allocated, ema=DECAY or "
                   "tail=FRACTION, freeze=LAYERS, each at most once (one kind of rounds, one "
                   "averaging)"};
    }
    auto value = OptionNumber(e.substr(eq + 1));
    if (!value.ok()) return Error{"'" + e + "': " + name + " takes a number"};
    g.averaging.kind = name == "ema" ? IterateAveragingKind::kEma : IterateAveragingKind::kTail;
    (name == "ema" ? g.averaging.decay : g.averaging.tail) = *value;
  }
  return {};
}

}  // namespace

std::string CnnGridPoint::RoundsName() const {
  switch (rounds) {
    case Rounds::kSampled:
      return "sampled";
    case Rounds::kAllocated:
      return "allocated";
    case Rounds::kDisjoint:
      break;
  }
  return "disjoint";
}

std::string CnnGridPoint::Name() const {
  std::string averaged = AveragingSpec(averaging);
  if (!averaged.empty()) averaged[averaged.find('=')] = ' ';
  return std::string(ServerOptimizerName(server.kind)) + " lr " +
         Significant(server.learning_rate) + ", clip " + Significant(clip) + ", " +
         std::to_string(per_round) + " a round, " + std::to_string(epochs) +
         (epochs == 1 ? " epoch" : " epochs") +
         (rounds == Rounds::kDisjoint ? "" : ", " + RoundsName() + " in secret") +
         (averaged.empty() ? "" : ", " + averaged) +
         (freeze.empty() ? "" : ", " + freeze + " frozen");
}

Status CnnGridPoint::Validate() const {
  FEDLDP_RETURN_IF_ERROR(server.Validate());
  FEDLDP_RETURN_IF_ERROR(averaging.Validate());
  if (!(clip > 0 && std::isfinite(clip))) return Error{"clip must be a number > 0"};
  if (per_round == 0) return Error{"clients per round must be >= 1"};
  return CheckCount(kRounds, epochs);
}

Result<CnnGridPoint> ParseCnnGridPoint(std::string_view spec) {
  std::vector<std::string> parts(1);
  for (const char ch : spec) {
    if (ch == ':') {
      parts.emplace_back();
    } else {
      parts.back() += ch;
    }
  }
  const std::string quoted = "grid point '" + std::string(spec) + "'";
  if (parts.size() < 5) {
    return Error{quoted +
                 ": give "
                 "optimizer:lr:clip:per_round:epochs[:sampled|:allocated][:ema=DECAY|:tail="
                 "FRACTION][:freeze=LAYERS]"};
  }
  const auto& names = ServerOptimizerNames();
  const auto kind = std::find(names.begin(), names.end(), parts[0]);
  if (kind == names.end()) {
    return Error{quoted + ": the optimizer must be " + Listed(names, " or ")};
  }
  CnnGridPoint g;
  g.server.kind = static_cast<ServerOptimizerKind>(kind - names.begin());
  auto lr = OptionNumber(parts[1]);
  auto clip = OptionNumber(parts[2]);
  auto per_round = OptionInteger(parts[3]);
  auto epochs = OptionInteger(parts[4]);
  if (!lr.ok() || !clip.ok() || !per_round.ok() || !epochs.ok() || *per_round < 1 || *epochs < 1 ||
      *epochs > kRounds.max) {
    return Error{quoted + ": lr and clip must be numbers, per_round and epochs whole numbers >= 1"};
  }
  g.server.learning_rate = *lr;
  g.clip = *clip;
  g.per_round = static_cast<std::size_t>(*per_round);
  g.epochs = static_cast<int>(*epochs);
  if (Status s = ParseGridExtras(std::span(parts).subspan(5), g); !s.ok()) {
    return Error{quoted + ": " + s.error()};
  }
  if (Status s = g.Validate(); !s.ok()) return Error{quoted + ": " + s.error()};
  return g;
}

std::vector<CnnGridPoint> DefaultCnnGrid(bool quick) {
  std::vector<CnnGridPoint> grid;
  for (const ServerOptimizerKind kind :
       {ServerOptimizerKind::kMomentum, ServerOptimizerKind::kAdam}) {
    const bool adam = kind == ServerOptimizerKind::kAdam;
    for (const std::size_t m :
         quick ? std::vector<std::size_t>{250} : std::vector<std::size_t>{1000, 6000}) {
      CnnGridPoint g;
      g.server.kind = kind;
      g.server.learning_rate = quick ? (adam ? 0.005 : 0.5) : (adam ? 0.001 : 0.1);
      g.per_round = m;
      g.epochs = quick ? 1 : 3;
      grid.push_back(g);
    }
  }
  return grid;
}

std::vector<CnnGridPoint> CnnFrontierConfig::Grid() const {
  return grid.empty() ? DefaultCnnGrid(quick) : grid;
}

Status CnnFrontierConfig::Validate() const {
  if (dataset != ImageDataset::kMnist && dataset != ImageDataset::kFmnist) {
    return Error{"dataset must be mnist or fmnist (the paper's CNN)"};
  }
  if (out.empty()) return Error{"out must name a folder"};
  if (epsilons.empty()) return Error{"give at least one central epsilon"};
  for (const double e : epsilons) FEDLDP_RETURN_IF_ERROR(CheckEpsilon(e));
  FEDLDP_RETURN_IF_ERROR(CheckDelta(delta));
  if (randomizers.empty()) return Error{"give at least one randomizer"};
  for (const VectorMechanism& m : randomizers) {
    if (m.traits().needs_delta) {
      return Error{std::string(VectorMechanismName(m)) +
                   " reports are (eps, delta): no central target is proven for them"};
    }
  }
  if (validation_rows == 0) return Error{"validation rows must be >= 1"};
  for (const CnnGridPoint& g : Grid()) {
    FEDLDP_RETURN_IF_ERROR(g.Validate());
    if (g.freeze.empty()) continue;
    LdpFlConfig frozen;
    frozen.freeze = g.freeze;
    if (auto w = LdpFlTrainedWeights(frozen); !w.ok()) {
      return Error{"grid point " + g.Name() + ": " + w.error()};
    }
  }
  FEDLDP_RETURN_IF_ERROR(CheckLearningRate(client_lr));
  FEDLDP_RETURN_IF_ERROR(CheckEpsilon(twopoint_epsilon));
  if (threads < 0 || threads > 1024) return Error{"threads must be in [0, 1024]"};
  return Status::Ok();
}

namespace {

// Trains the frontier's runs, each once: a run found in the journal is
// taken from there.
class CnnRunner {
 public:
  CnnRunner(const CnnFrontierConfig& c, const Rows& rows, RunJournal& journal,
            const CnnFrontierObserver& observer, std::stop_token stop)
      : c_(c),
        rows_(rows),
        journal_(journal),
        observer_(observer),
        stop_(std::move(stop)),
        pool_(static_cast<std::size_t>(c.threads)) {}

  // The row of `method` at central target `eps` (kNone: noise-free): every
  // grid point on the fit rows, scored on the validation rows; the best
  // trained on the training rows and tested.
  CnnFrontierRow Row(const std::string& method, double eps) {
    CnnFrontierRow row;
    row.method = method;
    row.target_epsilon = eps;
    row.validation_accuracy = -1;
    for (const CnnGridPoint& g : c_.Grid()) {
      const Outcome tuned = Get(Tuning(method, eps, g));
      if (tuned.accuracy > row.validation_accuracy) {
        row.validation_accuracy = tuned.accuracy;
        row.chosen = g;
      }
    }
    const Outcome tested = Get(Final(method, eps, row.chosen));
    row.test_accuracy = tested.accuracy;
    row.local_epsilon = tested.local_epsilon;
    row.total = tested.total;
    row.privacy = tested.privacy;
    row.seconds = tested.seconds;
    row.rounds = tested.rounds;
    return row;
  }

  // LDP-FL's per-weight two-point in the paper's setting, with its honest
  // total.
  CnnFrontierRow TwoPointRow() {
    const Outcome o = Get(TwoPoint());
    CnnFrontierRow row;
    row.method = kTwoPoint;
    row.test_accuracy = o.accuracy;
    row.local_epsilon = o.local_epsilon;
    row.total = o.total;
    row.privacy = o.privacy;
    row.seconds = o.seconds;
    row.rounds = o.rounds;
    return row;
  }

  // The runs of the rows in `plan` (and the two-point's) that are not in
  // the journal: the progress counter's total. A row whose tuning is all in
  // the journal knows its final run; others count one.
  void Plan(const std::vector<std::pair<std::string, double>>& plan) {
    std::size_t missing = journal_.Find(TwoPoint().key) ? 0 : 1;
    for (const auto& [method, eps] : plan) {
      std::optional<CnnGridPoint> best;
      double best_accuracy = -1;
      bool complete = true;
      for (const CnnGridPoint& g : c_.Grid()) {
        const nlohmann::json* done = journal_.Find(Tuning(method, eps, g).key);
        if (!done) {
          ++missing, complete = false;
          continue;
        }
        if (const double a = FromRecord(*done).accuracy; a > best_accuracy)
          best_accuracy = a, best = g;
      }
      missing += !complete || !journal_.Find(Final(method, eps, *best).key);
    }
    planned_ = missing;
  }

  std::size_t trained() const { return trained_; }
  std::size_t threads() const { return pool_.size(); }

 private:
  // One run: what it trains, on which rows, under which key.
  struct Spec {
    std::string key, label;
    LdpFlConfig training;
    const Dataset* train = nullptr;
    const Dataset* test = nullptr;
    double target = kNone;
  };

  std::string Key(const std::string& phase, const std::string& rest) const {
    return "cnn-frontier " + std::string(ImageDatasetName(c_.dataset)) + " " + phase +
           " rows=" + std::to_string(rows_.train.size()) + "/" +
           std::to_string(rows_.validation.size()) + "/" + std::to_string(rows_.test.size()) +
           (c_.quick ? " quick" : "") + " " + rest + " seed=" + std::to_string(c_.seed);
  }

  // One-step clients of one row each, `method`'s reports calibrated to the
  // central target, in disjoint rounds, tested after the last.
  LdpFlConfig Training(const std::string& method, double eps, const CnnGridPoint& g,
                       std::size_t clients) const {
    LdpFlConfig t;
    t.arch = "cnn";
    t.clients = clients;
    t.local_epochs = 1;
    t.batch = 1;
    t.learning_rate = c_.client_lr;
    t.is_private = method != kNoiseFree;
    t.vector = t.is_private ? ParseVectorMechanism(method).value() : VectorMechanism::kPrivUnitG;
    t.clip = g.clip;
    t.server = g.server;
    t.averaging = g.averaging;
    t.freeze = g.freeze;
    t.disjoint_rounds = g.rounds != CnnGridPoint::Rounds::kSampled;
    t.secret_sampling = g.rounds != CnnGridPoint::Rounds::kDisjoint && t.is_private;
    t.fraction = static_cast<double>(g.per_round) / static_cast<double>(clients);
    t.rounds = g.epochs * static_cast<int>(std::max<std::size_t>(1, clients / g.per_round));
    t.evaluate_every = t.rounds;
    t.delta = c_.delta;
    t.central_epsilon = t.is_private ? eps : 0;
    return t;
  }

  std::string Target(const std::string& method, double eps) const {
    return method +
           (std::isfinite(eps)
                ? " eps=" + Significant(eps, 6) + " delta=" + Significant(c_.delta, 6)
                : "") +
           " clr=" + Significant(c_.client_lr, 6);
  }

  Spec Tuning(const std::string& method, double eps, const CnnGridPoint& g) const {
    return {
        Key("tune", Target(method, eps) + " " + PointKey(g)),
        "tune " + method + (std::isfinite(eps) ? " eps " + Significant(eps) : "") + ", " + g.Name(),
        Training(method, eps, g, rows_.fit.size()),
        &rows_.fit,
        &rows_.validation,
        eps};
  }

  Spec Final(const std::string& method, double eps, const CnnGridPoint& g) const {
    return {Key("final", Target(method, eps) + " " + PointKey(g)),
            "final " + method + (std::isfinite(eps) ? " eps " + Significant(eps) : "") + ", " +
                g.Name(),
            Training(method, eps, g, rows_.train.size()),
            &rows_.train,
            &rows_.test,
            eps};
  }

  Spec TwoPoint() const {
    LdpFlConfig t = DefaultLdpFlExperiment(c_.dataset).training;
    t.epsilon = c_.twopoint_epsilon;
    if (c_.quick) t.clients = 10, t.rounds = 2;
    return {Key("twopoint", "eps=" + Significant(t.epsilon, 6) + " n=" + std::to_string(t.clients) +
                                " rounds=" + std::to_string(t.rounds)),
            "two-point, the paper's setting, eps " + Significant(t.epsilon) + " per weight",
            t,
            &rows_.train,
            &rows_.test,
            kNone};
  }

  Outcome Get(const Spec& s) {
    if (const nlohmann::json* done = journal_.Find(s.key)) return FromRecord(*done);
    if (stop_.stop_requested()) throw Stopped{};
    JournaledRun progress{++index_, planned_, s.label, 0, 0};
    auto calibrated = ApplyCentralTarget(s.training);
    if (!calibrated.ok()) throw Failed{{s.label + ": " + calibrated.error(), calibrated.code()}};
    const LdpFlConfig& t = *calibrated;
    const auto start = std::chrono::steady_clock::now();
    auto run = TrainLdpFl(
        t, *s.train, *s.test, c_.seed,
        [&](const LdpFlRound& r) {
          if (observer_.round) observer_.round(progress, r.round, t.rounds);
        },
        stop_, pool_.AsParallelFor());
    if (!run.ok()) throw Failed{{s.label + ": " + run.error(), run.code()}};
    if (run->stopped) throw Stopped{};
    Outcome o{run->final_accuracy(),
              t.epsilon,
              run->total(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              PrivacyJson(LdpFlPrivacyRecord(t, run->privacy, run->vector_privacy)),
              t.rounds};
    if (!t.is_private) o.local_epsilon = kNone, o.total = {kNone, 0};
    Check(journal_.Append(Record(s, t, *run, o)));
    ++trained_;
    progress.accuracy = o.accuracy;
    progress.seconds = o.seconds;
    if (observer_.finished) observer_.finished(progress);
    return o;
  }

  nlohmann::ordered_json Record(const Spec& s, const LdpFlConfig& t, const LdpFlRun& run,
                                const Outcome& o) const {
    nlohmann::ordered_json j;
    j["key"] = s.key;
    StartRecord(j);
    j["dataset"] = ImageDatasetName(c_.dataset);
    j["run"] = s.label;
    j["train_rows"] = s.train->size();
    j["scored_rows"] = s.test->size();
    j["scored_on"] = s.test == &rows_.test ? "test" : "validation";
    j["randomizer"] = t.is_private ? LdpFlRandomizerName(t) : kNoiseFree;
    j["target_epsilon"] = FiniteOrNull(s.target);
    j["local_epsilon"] = FiniteOrNull(o.local_epsilon);
    j["total_epsilon"] = FiniteOrNull(o.total.epsilon);
    j["total_delta"] =
        t.is_private ? nlohmann::ordered_json(o.total.delta) : nlohmann::ordered_json();
    j["privacy"] = o.privacy;
    j["clients"] = t.clients;
    j["per_round"] = LdpFlClientsPerRound(t);
    j["rounds"] = t.rounds;
    j["server"] = DescribeServer(t.server, t.averaging, t.rounds);
    j["clip"] = t.clip;
    j["freeze"] = t.freeze;
    j["client_lr"] = t.learning_rate;
    j["seed"] = c_.seed;
    j["accuracy"] = Percent(o.accuracy);
    j["majority"] = Percent(run.majority);
    j["client_step"] = run.client_step;
    j["seconds"] = o.seconds;
    return j;
  }

  const CnnFrontierConfig& c_;
  const Rows& rows_;
  RunJournal& journal_;
  const CnnFrontierObserver& observer_;
  std::stop_token stop_;
  ThreadPool pool_;
  std::size_t index_ = 0, planned_ = 0, trained_ = 0;
};

// The rows every frontier has: the noise-free model, then each randomizer
// at each target.
std::vector<std::pair<std::string, double>> PlannedRows(const CnnFrontierConfig& c) {
  std::vector<std::pair<std::string, double>> plan = {{kNoiseFree, kNone}};
  for (const VectorMechanism& m : c.randomizers) {
    for (const double e : c.epsilons) plan.emplace_back(std::string(VectorMechanismName(m)), e);
  }
  return plan;
}

bool Learned(double accuracy, double majority, std::size_t test_rows) {
  const double se = std::sqrt(majority * (1 - majority) / static_cast<double>(test_rows));
  return accuracy > majority + 2 * se;
}

std::string Mode(const CnnFrontierRow& r) {
  return r.method == kNoiseFree  ? "noise-free"
         : r.method == kTwoPoint ? "local, per weight"
                                 : "shuffled";
}

std::string Chosen(const CnnFrontierRow& r) {
  return r.method == kTwoPoint ? "the paper's setting" : r.chosen.Name();
}

std::string Stated(const CnnFrontierRow& r) {
  if (r.method == kNoiseFree) return "none";
  return "(" + Significant(r.total.epsilon) + ", " + Significant(r.total.delta, 2) + ")";
}

nlohmann::ordered_json RowRecord(const CnnFrontierRow& r, const CnnFrontier& f) {
  nlohmann::ordered_json o;
  StartRecord(o);
  o["dataset"] = ImageDatasetName(f.config.dataset);
  o["seed"] = f.config.seed;
  o["method"] = r.method;
  o["mode"] = Mode(r);
  o["target_epsilon"] = FiniteOrNull(r.target_epsilon);
  o["total_epsilon"] =
      r.method == kNoiseFree ? nlohmann::ordered_json() : FiniteOrNull(r.total.epsilon);
  o["total_delta"] =
      r.method == kNoiseFree ? nlohmann::ordered_json() : FiniteOrNull(r.total.delta);
  o["local_epsilon"] =
      r.method == kNoiseFree ? nlohmann::ordered_json() : FiniteOrNull(r.local_epsilon);
  o["local_epsilon_is"] = r.method == kTwoPoint ? "per weight" : "per report";
  o["privacy"] = r.privacy;
  o["chosen"] = Chosen(r);
  o["validation_accuracy"] = r.method == kTwoPoint ? nlohmann::ordered_json()
                                                   : FiniteOrNull(Percent(r.validation_accuracy));
  o["rounds"] = r.rounds;
  o["accuracy"] = Percent(r.test_accuracy);
  o["learned"] = r.learned;
  o["majority"] = Percent(f.majority);
  o["noise_free"] = Percent(f.rows.front().test_accuracy);
  o["train_rows"] = f.train_rows;
  o["validation_rows"] = f.validation_rows;
  o["test_rows"] = f.test_rows;
  o["seconds"] = r.seconds;
  return o;
}

std::string CsvRow(const CnnFrontierRow& r, const CnnFrontier& f) {
  std::ostringstream csv;
  const bool tuned = r.method != kTwoPoint;
  csv << r.method << "," << Significant(r.target_epsilon, 6) << ","
      << (r.method == kNoiseFree
              ? ","
              : Significant(r.total.epsilon, 6) + "," + Significant(r.total.delta, 6))
      << "," << (r.method == kNoiseFree ? "" : Significant(r.local_epsilon, 6)) << ",";
  if (tuned) {
    csv << ServerOptimizerName(r.chosen.server.kind) << ","
        << Significant(r.chosen.server.learning_rate, 6) << "," << Significant(r.chosen.clip, 6)
        << "," << r.chosen.per_round << "," << r.chosen.epochs << "," << r.chosen.RoundsName()
        << "," << r.rounds << ","
        << (r.chosen.averaging.kind == IterateAveragingKind::kNone
                ? "none"
                : AveragingSpec(r.chosen.averaging))
        << "," << FreezeSpec(r.chosen.freeze) << "," << Fixed(Percent(r.validation_accuracy))
        << ",";
  } else {
    csv << ",,,,,," << r.rounds << ",,,,";
  }
  csv << Fixed(Percent(r.test_accuracy)) << "," << Fixed(Percent(f.majority)) << ","
      << Fixed(Percent(f.rows.front().test_accuracy)) << ","
      << (r.method == kNoiseFree ? ""
          : r.learned            ? "yes"
                                 : "no")
      << "," << Fixed(r.seconds, 1) << "\n";
  return csv.str();
}

std::string MarkdownRow(const CnnFrontierRow& r) {
  std::ostringstream md;
  md << "| " << r.method << " | " << Mode(r) << " | "
     << (std::isfinite(r.target_epsilon) ? Significant(r.target_epsilon) : "-") << " | "
     << Stated(r) << " | " << (r.method == kNoiseFree ? "-" : Significant(r.local_epsilon))
     << (r.method == kTwoPoint ? " per weight" : "") << " | " << Chosen(r) << " | "
     << (r.method == kTwoPoint ? "-" : PercentText(r.validation_accuracy)) << " | "
     << PercentText(r.test_accuracy) << " | "
     << (r.method == kNoiseFree ? ""
         : r.learned            ? "yes"
                                : "**no: learned nothing**")
     << " |\n";
  return md.str();
}

// The goals of issue 42, item 4, as this run measured them.
std::string Goals(const CnnFrontier& f) {
  const bool mnist = f.config.dataset == ImageDataset::kMnist;
  const CnnFrontierRow* best = nullptr;
  for (const CnnFrontierRow& r : f.rows) {
    if (r.method == kNoiseFree || r.method == kTwoPoint || r.target_epsilon > 3) continue;
    if (!best || r.test_accuracy > best->test_accuracy) best = &r;
  }
  std::ostringstream goals;
  const double goal = mnist ? 0.96 : 0.82;
  goals << "best private at central eps <= 3, delta " << Significant(f.config.delta, 2) << ": ";
  if (best) {
    goals << best->method << " " << PercentText(best->test_accuracy) << " % at eps "
          << Significant(best->target_epsilon) << " (goal >= " << PercentText(goal) << " %: "
          << (best->test_accuracy >= goal
                  ? "met"
                  : "missed by " + Fixed(Percent(goal - best->test_accuracy)) + " points")
          << ")\n";
  } else {
    goals << "none run (goal >= " << PercentText(goal) << " %)\n";
  }
  std::size_t nothing = 0;
  for (const CnnFrontierRow& r : f.rows) nothing += r.method != kNoiseFree && !r.learned;
  goals << nothing
        << " private row(s) learned nothing (not above the majority class by 2 standard errors)\n";
  return goals.str();
}

Figure FrontierFigure(const CnnFrontier& f) {
  double lo = f.config.epsilons.front(), hi = lo;
  for (const double e : f.config.epsilons) lo = std::min(lo, e), hi = std::max(hi, e);
  Figure fig;
  fig.id = "cnn-frontier-shuffled";
  fig.title = std::string(ImageDatasetName(f.config.dataset)) +
              ", the paper's CNN, shuffled: central (eps, " + Significant(f.config.delta, 2) +
              ") per client";
  fig.xlabel = "central eps per client, total";
  fig.ylabel = "test accuracy (%)";
  fig.log_x = true;
  for (const VectorMechanism& m : f.config.randomizers) {
    Series s{std::string(VectorMechanismName(m)), {}, false};
    for (const CnnFrontierRow& r : f.rows) {
      if (r.method == s.name) s.points.push_back({r.target_epsilon, Percent(r.test_accuracy), 0});
    }
    if (!s.points.empty()) fig.series.push_back(std::move(s));
  }
  const auto line = [&](std::string name, double accuracy) {
    fig.series.push_back(
        {std::move(name), {{lo / 2, Percent(accuracy), 0}, {hi, Percent(accuracy), 0}}, true});
  };
  line("noise-free (tuned the same way)", f.rows.front().test_accuracy);
  const CnnFrontierRow& two = f.rows.back();
  line("LDP-FL two-point (eps " + Significant(two.total.epsilon, 3) + " in total)",
       two.test_accuracy);
  line("majority class", f.majority);
  return fig;
}

Status WriteFiles(const CnnFrontierConfig& c, CnnFrontier& f) {
  std::ostringstream csv, jsonl, md;
  csv << "method,target_epsilon,total_epsilon,total_delta,local_epsilon,server_optimizer,server_lr,"
         "clip,per_round,epochs,schedule,rounds,averaging,freeze,validation_accuracy,accuracy,"
         "majority,"
         "noise_free,"
         "learned,seconds\n";
  md << "| method | mode | central target | stated (eps, delta) per client | eps per report | "
        "chosen on validation | validation % | test % | learned |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
  for (const CnnFrontierRow& r : f.rows) {
    jsonl << RowRecord(r, f).dump() << "\n";
    csv << CsvRow(r, f);
    md << MarkdownRow(r);
  }
  md << "\nmajority class: " << PercentText(f.majority) << " %. " << f.train_rows
     << " training rows, one client each (" << f.validation_rows << " of them held out to choose "
     << "each row's point), " << f.test_rows << " test rows; seed " << c.seed << ".\n\n"
     << Goals(f);
  f.summary = md.str();
  for (const auto& [name, text] :
       {std::pair<const char*, std::string>{"cnn-frontier.csv", csv.str()},
        {"cnn-frontier.jsonl", jsonl.str()},
        {"summary.md", f.summary}}) {
    FEDLDP_RETURN_IF_ERROR(WriteFileAtomically(c.out + "/" + name, text, 0644, true));
  }
  if (!c.figures) return Status::Ok();
  Figure fig = FrontierFigure(f);
  auto drawn = WriteFigure(fig, c.out);
  if (!drawn.ok()) return Error{drawn.error(), drawn.code()};
  if (!drawn->empty()) f.figure_notes.push_back(*drawn);
  f.figures.push_back(std::move(fig));
  return Status::Ok();
}

std::string StartLine(const CnnFrontier& f, std::size_t threads) {
  const CnnFrontierConfig& c = f.config;
  std::ostringstream s;
  s << ImageDatasetName(c.dataset) << ", the paper's CNN: " << f.train_rows
    << " single-image clients (" << f.validation_rows << " held out for tuning), " << f.test_rows
    << " test images; central eps {";
  for (std::size_t i = 0; i < c.epsilons.size(); ++i) {
    s << (i ? ", " : "") << Significant(c.epsilons[i]);
  }
  s << "} at delta " << Significant(c.delta, 2) << "; a " << c.Grid().size() << "-point grid; seed "
    << c.seed << ", " << threads << " threads; " << c.out;
  return s.str();
}

// Every row, in order; throws Failed or Stopped.
void RunRows(CnnFrontier& f, CnnRunner& runner, std::size_t test_rows) {
  for (const auto& [method, eps] : PlannedRows(f.config)) f.rows.push_back(runner.Row(method, eps));
  f.rows.push_back(runner.TwoPointRow());
  for (CnnFrontierRow& r : f.rows) {
    r.learned = r.method != kNoiseFree && Learned(r.test_accuracy, f.majority, test_rows);
  }
}

}  // namespace

Result<CnnFrontier> ReproduceCnnFrontier(const CnnFrontierConfig& config,
                                         const CnnFrontierObserver& observer,
                                         std::stop_token stop) {
  CnnFrontier f;
  f.config = config;
  if (config.quick) {
    if (config.train_rows == 0) f.config.train_rows = 1200;
    if (config.test_rows == 0) f.config.test_rows = 500;
    if (config.validation_rows == CnnFrontierConfig{}.validation_rows)
      f.config.validation_rows = 200;
    if (config.epsilons == CnnFrontierConfig{}.epsilons) f.config.epsilons = {2, 8};
    if (config.randomizers == CnnFrontierConfig{}.randomizers) {
      f.config.randomizers = {VectorMechanism::kPrivUnitG};
    }
  }
  f.config.grid = f.config.Grid();
  const CnnFrontierConfig& c = f.config;
  FEDLDP_RETURN_IF_ERROR(c.Validate());
  FEDLDP_ASSIGN_OR_RETURN(const Rows rows, LoadRows(c));
  for (const CnnGridPoint& g : c.grid) {
    if (g.per_round > rows.fit.size()) {
      return Error{"the grid's " + std::to_string(g.per_round) + " clients a round are more than " +
                   "the " + std::to_string(rows.fit.size()) + " clients tuning trains"};
    }
  }
  f.train_rows = rows.train.size();
  f.validation_rows = rows.validation.size();
  f.test_rows = rows.test.size();
  f.majority = rows.test.MajorityRate();
  std::error_code ec;
  std::filesystem::create_directories(c.out, ec);
  if (ec) return Error{"cannot create " + c.out + ": " + ec.message(), ErrorCode::kIo};
  FEDLDP_ASSIGN_OR_RETURN(RunJournal journal, RunJournal::Open(c.out + "/runs.jsonl", c.resume));
  f.resumed = journal.size();
  NeuralNet::SetThreads(1);  // a pass of clients per thread
  CnnRunner runner(c, rows, journal, observer, stop);
  runner.Plan(PlannedRows(c));
  if (observer.started) observer.started(StartLine(f, runner.threads()), f.resumed);
  try {
    RunRows(f, runner, rows.test.size());
  } catch (const Stopped&) {
    f.stopped = true;
  } catch (const Failed& e) {
    return e.error;
  }
  f.trained = runner.trained();
  if (f.stopped) return f;
  FEDLDP_RETURN_IF_ERROR(WriteFiles(c, f));
  return f;
}

}  // namespace fedldp
