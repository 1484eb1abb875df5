// Subcommands of `fedldp`. Each has an options struct, a Setup that binds its
// flags on a CLI11 subcommand, and a Run.
#ifndef FEDLDP_APPS_FEDLDP_COMMANDS_H_
#define FEDLDP_APPS_FEDLDP_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "fedldp/net/load_test.h"
#include "fedldp/net/services.h"
#include "fedldp/privacy/central_participation.h"
#include "fedldp/sim/shuffle_curves.h"

namespace fedldp {
struct FedSelReproductionConfig;
struct FrontierReproductionConfig;
struct CnnFrontierConfig;
struct LdpFlReproductionConfig;
}  // namespace fedldp

namespace fedldp::cli {

struct SampleOptions {
  std::string mechanism;
  std::string selector;
  std::string vector_mechanism;
  double epsilon = 0;
  std::optional<double> delta;       // vector mechanisms: the Gaussians' delta
  std::optional<double> clip;        // vector mechanisms: the l2 clip norm C
  std::optional<std::string> input;  // x, or v1,v2,... for a vector mechanism
  std::optional<double> center;
  std::optional<double> radius;
  std::optional<std::string> vector;  // v1,v2,... parsed strictly by the command
  std::optional<std::size_t> k;
  std::uint64_t count = 1;
  std::optional<std::uint64_t> seed;
  bool secure = false;
};
void SetupSample(CLI::App& app, SampleOptions& options);
int RunSample(const SampleOptions& options, std::ostream& out, std::ostream& err);

struct AuditOptions {
  std::vector<double> epsilons = {0.1, 0.5, 1, 2, 4, 8};
  std::size_t draws = 200000;
  std::uint64_t seed = 1;
  std::size_t d = 123;
  std::size_t k = 12;
  std::size_t timing_calls = 1000000;  // per end of the input domain; 0 skips
  bool json = false;
};
void SetupAudit(CLI::App& app, AuditOptions& options);
int RunAudit(const AuditOptions& options, std::ostream& out, std::ostream& err);

struct TrainOptions {
  std::string dataset = "adult";
  std::string data_dir;       // default: $FEDLDP_DATA_DIR, else the repository's data/
  int pool = 1;               // image datasets: average-pool pool x pool pixel blocks
  double feature_center = 0;  // subtracted from every feature
  std::string data;           // the user's own file (CSV or LIBSVM) instead of --dataset
  std::string label_column;   // CSV: the label's column name or index (default: the last)
  std::string variant{kDefaultFedSelVariant};
  // The FedSelConfig options given (fl/fedsel_options.h), as typed; the
  // rest keep the variant's defaults (DefaultFedSelConfig).
  std::map<std::string, std::string> config;
  double reference_lr = 1.0;  // the non-private reference's learning rate
  // Its m / N (nullopt: np's own default, whatever the private run's).
  std::optional<double> reference_batch_fraction;
  bool allow_weak_reference = false;      // a reference below the majority class still exits 0
  double central_delta = 1e-6;            // with shuffle: the total delta per client
  std::optional<double> central_epsilon;  // with shuffle: the target that sets the local eps
  bool tune = false;                      // nested: hyper-parameters chosen per fold
  double validation_fraction = 0.2;
  int tuning_splits = 3;
  // With tune: lists replacing DefaultGrid's (empty: its own).
  std::vector<double> grid_lr, grid_batch_fraction, grid_clip, grid_server_lr, grid_server_beta1;
  std::vector<int> grid_epochs;
  int repeats = 10;
  int folds = 5;
  std::uint64_t seed = 1;
  std::size_t threads = 0;
  bool no_reference = false;
  std::string out;  // JSON lines, appended
};
void SetupTrain(CLI::App& app, TrainOptions& options);
// On a cluster every process trains alike; only rank 0 writes --out.
int RunTrain(const TrainOptions& options, std::ostream& out, std::ostream& err,
             Cluster& cluster = OneProcess());
void SetupTune(CLI::App& app, TrainOptions& options);
int RunTune(const TrainOptions& options, std::ostream& out, std::ostream& err);

struct LdpFlRunOptions {
  std::string dataset = "mnist";  // mnist, fmnist, cifar10
  std::string data_dir;           // default: where setup put it (loaders.h)
  // LdpFlConfig's options given (fl/ldpfl_options.h), as typed; the rest
  // keep the dataset's defaults (DefaultLdpFlExperiment).
  std::map<std::string, std::string> config;
  bool no_reference = false;
  int threads = 0;
  std::uint64_t seed = 1;
  std::string out;                            // JSON lines, appended
  std::size_t train_rows = 0, test_rows = 0;  // the first rows only; 0: all
  std::size_t validation_rows = 0;            // held out of the training rows, scored instead
};
void SetupLdpFl(CLI::App& app, LdpFlRunOptions& options);
// On a cluster every process trains alike; only rank 0 writes --out.
int RunLdpFl(const LdpFlRunOptions& options, std::ostream& out, std::ostream& err,
             Cluster& cluster = OneProcess());

// `reproduce` and its `fedsel` subcommand (reproduce_command.cc): the
// options are the fields of the library's config, and the run is
// ReproduceFedSel's (sim/fedsel_reproduction.h).
void SetupReproduce(CLI::App& app, FedSelReproductionConfig& config);
int RunReproduceFedSel(const FedSelReproductionConfig& config, std::ostream& out,
                       std::ostream& err);

// Adds `ldpfl` under the `reproduce` subcommand (reproduce_ldpfl.cc): its
// options are the fields of the library's config, and the run is
// ReproduceLdpFl's (sim/ldpfl_reproduction.h).
void SetupReproduceLdpFl(CLI::App& reproduce, LdpFlReproductionConfig& config);
int RunReproduceLdpFl(const LdpFlReproductionConfig& config, std::ostream& out, std::ostream& err);

// `reproduce frontier` (reproduce_frontier.cc): the linear frontier
// (sim/frontier_reproduction.h) or, with --model cnn, the CNN's
// (sim/cnn_frontier.h). The options shared by both are bound to `linear`.
struct FrontierOptions {
  FrontierOptions();
  ~FrontierOptions();
  std::string model = "linear";
  std::optional<std::string> dataset;  // default: adult (linear), mnist (cnn)
  std::optional<double> delta;         // default: 1e-6 (linear), 1e-5 (cnn)
  std::vector<std::string> grid;       // cnn: points "optimizer:lr:clip:per_round:epochs"
  std::unique_ptr<FrontierReproductionConfig> linear;
  std::unique_ptr<CnnFrontierConfig> cnn;
};

// Adds `frontier` under the `reproduce` subcommand.
void SetupReproduceFrontier(CLI::App& reproduce, FrontierOptions& options);
int RunReproduceFrontier(const FrontierOptions& options, std::ostream& out, std::ostream& err);

// The deployment (deploy_command.cc).
struct AccountShuffleOptions {
  double local_epsilon = 0;
  std::uint64_t reports = 0;
  double delta = 0;
  std::string mechanism;  // for the floating-point line; empty: every one
  std::string bound;      // the claim's (empty: the tightest proven)
  bool json = false;
};
void SetupAccountShuffle(CLI::App& app, AccountShuffleOptions& options);
int RunAccountShuffle(const AccountShuffleOptions& options, std::ostream& out, std::ostream& err);

struct AccountRunOptions {
  std::string bound;  // a shuffled round's (empty: the tightest proven)
  double local_epsilon = 0;
  double local_delta = 0;
  std::uint64_t rounds = 1;
  bool shuffle = false;
  std::uint64_t reports_per_round = 0;
  double delta = 1e-6;
  double sampling_rate = 1;
  bool poisson = false;
  bool allocation = false;
  double report_deviation = 0;
  std::string mechanism;  // for the floating-point line; empty: every one
  bool json = false;
};
void SetupAccountRun(CLI::App& app, AccountRunOptions& options);
int RunAccountRun(const AccountRunOptions& options, std::ostream& out, std::ostream& err);

// `account gaussian` (privacy/central_participation.h): DP-SGD's Gaussian
// steps, composed, Poisson-sampled or randomly allocated.
struct AccountGaussianOptions {
  GaussianStepsConfig config;
  bool json = false;
};
void SetupAccountGaussian(CLI::App& app, AccountGaussianOptions& options);
int RunAccountGaussian(const AccountGaussianOptions& options, std::ostream& out, std::ostream& err);

// `account curves` (sim/shuffle_curves.h): the shuffle bounds against n.
struct AccountCurvesOptions {
  ShuffleCurvesConfig config;
  std::string out;  // a folder
};
void SetupAccountCurves(CLI::App& app, AccountCurvesOptions& options);
int RunAccountCurves(const AccountCurvesOptions& options, std::ostream& out, std::ostream& err);

struct EnrolOptions {
  std::string state;
  std::size_t count = 1;
  std::optional<std::uint64_t> replace_user;  // a lost token's: the client hosting this user
  std::string out;
  std::string out_dir;  // one file per token
  bool force = false;
};
void SetupEnrol(CLI::App& app, EnrolOptions& options);
int RunEnrol(const EnrolOptions& options, std::ostream& out, std::ostream& err);

struct ExportOptions {
  std::string state;
  std::string out;
  std::string format;  // "" from --out's name
  bool force = false;
};
void SetupExport(CLI::App& app, ExportOptions& options);
int RunExport(const ExportOptions& options, std::ostream& out, std::ostream& err);

struct ServeOptions {
  std::string log_format = "text";  // or json (FormatLog)
  std::string protocol = "fedsel";
  std::string state;
  std::string address = "127.0.0.1:7070";
  int threads = 1;  // threads answering calls
  std::uint64_t users = 0;
  std::string dataset;  // adult (FedSel), mnist (LDP-FL)
  std::string data_dir;
  std::string data_file;     // the operator's own file (CSV or LIBSVM) instead of --dataset
  std::string label_column;  // its CSV label column (default: the last)
  std::string eval_rows;     // FedSel: 32561: (adult.test); LDP-FL: rows of the test split
  std::string task;
  std::string variant{kDefaultFedSelVariant};  // FedSel
  // FedSelConfig's or LdpFlConfig's deployed options given, by flag
  // (config_options.h: BindServedOptions); the rest keep the variant's or
  // the dataset's defaults.
  std::map<std::string, std::string> config;
  double central_delta = 1e-6;  // FedSel --shuffle: the statement's total delta
  std::size_t chunk = 256;      // LDP-FL: weights per sealed piece
  std::string train_rows;       // LDP-FL: rows of the training split for the input standardisation
  std::string shuffler_token_file;
  std::string key_file;  // default: STATE.key (secret) and STATE.key.pub
  int deadline_ms = 10000;
  int stale_ms = 2000;
  int poll_ms = 20;
  double min_participation = 0.5;
  std::uint64_t min_users = 0;  // start with this many joined (0: all)
  std::string monitor;          // host:port of the status page and metrics ("": none)
  std::string tls_cert, tls_key;
  std::string out;
  bool insecure = false;  // allow plaintext off loopback
};
void SetupServe(CLI::App& app, ServeOptions& options);
int RunServe(const ServeOptions& options, std::ostream& out, std::ostream& err);

struct ClientOptions {
  std::string log_format = "text";  // or json (FormatLog)
  std::string server = "127.0.0.1:7070";
  std::string protocol;   // fedsel or ldpfl; "": ldpfl with a shuffler, else fedsel
  std::string shuffler;   // LDP-FL, and FedSel tasks served with --shuffle
  std::size_t users = 1;  // LDP-FL: users hosted, each an equal share of the rows
  std::string shuffler_ca;
  int threads = 1;
  std::string token, token_file;
  std::string dataset = "adult";
  std::string data_dir;
  std::string data_file;     // set: the local data is this file (LIBSVM or CSV), not --dataset
  std::string label_column;  // its CSV label column (default: the last)
  std::size_t features = 0;  // with a LIBSVM data_file: 0, the file's largest index
  std::string rows;  // default: 0:32561 (adult.data within "adult"), the whole training split,
                     // or the whole file
  std::string part;
  std::string ledger = "fedldp-ledger.sqlite";
  std::optional<double> budget;
  std::string tls_ca;
  bool insecure = false;    // allow plaintext off loopback
  double give_up_seconds =  // how long an unreachable server is retried
      std::chrono::duration<double>(FedSelClientOptions{}.give_up).count();
};
void SetupClient(CLI::App& app, ClientOptions& options);
int RunClient(const ClientOptions& options, std::ostream& out, std::ostream& err);

struct LoadOptions {
  LoadTestConfig config;
  std::string driver = "callback";  // or threads
  std::string dataset = "adult";
  std::string data_dir;
  std::string rows = "0:32561";
  std::string out;  // JSON line, appended
};
void SetupLoad(CLI::App& app, LoadOptions& options);
int RunLoad(const LoadOptions& options, std::ostream& out, std::ostream& err);

struct ShuffleOptions {
  std::string log_format = "text";  // or json (FormatLog)
  std::string address = "127.0.0.1:7071";
  std::string server = "127.0.0.1:7070";
  std::string token_file;  // the shuffler's token (serve --shuffler-token-file)
  std::size_t min_batch = 10;
  int flush_before_ms = 2000;
  std::string tls_cert, tls_key, server_ca;
  bool insecure = false;  // allow plaintext off loopback
};
void SetupShuffle(CLI::App& app, ShuffleOptions& options);
int RunShuffle(const ShuffleOptions& options, std::ostream& out, std::ostream& err);

// LDP-FL's halves of serve and client (deploy_ldpfl.cc).
int RunServeLdpFl(const ServeOptions& options, std::ostream& out, std::ostream& err);
int RunClientLdpFl(const ClientOptions& options, const std::string& token, std::ostream& out,
                   std::ostream& err);

}  // namespace fedldp::cli

#endif  // FEDLDP_APPS_FEDLDP_COMMANDS_H_
