// `fedldp export` as the library runs it (net/model_export.h): a state file
// holding a task and its model, written out as npz, JSON and TorchScript.
#include "fedldp/net/model_export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "fedldp/fl/server_optimizer.h"
#include "fedldp/model/neural_net.h"
#include "fedldp/net/services.h"
#include "fedldp/random/counter_rng.h"
#include "fedldp/store/server_state.h"
#include "fedldp/wire/sealed_box.h"
#include "testing/synthetic.h"
#include "testing/temp_dir.h"

namespace fedldp {
namespace {

std::string Read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ModelExportTest : public testing::TempDirTest {
 protected:
  FedSelTaskSpec FedSelTask() const {
    FedSelTaskSpec spec;
    spec.id = "export-task";
    spec.config = DefaultFedSelConfig(ParseFedSelVariant("privunitg").value());
    spec.config.tail_average = 0;
    spec.users = 400;
    spec.dimension = 20;
    return spec;
  }
  // A state holding `task` and, after `rounds` closed rounds, `weights`.
  void MakeState(const std::string& task, std::uint64_t rounds, std::vector<double> weights,
                 std::vector<double> server = {}) {
    auto state = ServerState::Open(Path("s.sqlite")).value();
    ASSERT_TRUE(state.IssueTokens(1).ok());
    ASSERT_TRUE(state.BindTask(task).ok());
    ServerState::Snapshot snap;
    snap.round = rounds;
    snap.finished = true;
    snap.counted = 123;
    snap.weights = std::move(weights);
    snap.server = std::move(server);
    ASSERT_TRUE(state.Commit(snap).ok());
  }
  Result<ExportSummary> Export(const std::string& out, const std::string& format = "") {
    return ExportModel({.state = Path("s.sqlite"), .out = Path(out), .format = format});
  }
};

// The model, its shape and the statement the server states, in JSON and
// in an .npz whose arrays are the model's doubles bit for bit.
TEST_F(ModelExportTest, ALinearModelIsWrittenWithItsTaskRoundAndPrivacy) {
  const FedSelTaskSpec spec = FedSelTask();
  std::vector<double> w(20);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(static_cast<double>(i)) / 3;
  MakeState(EncodeTask(spec), 7, w);
  const auto e = Export("m.json");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->protocol, "fedsel");
  EXPECT_EQ(e->format, ExportFormat::kJson);
  EXPECT_EQ(e->rounds_closed, 7u);
  const auto j = nlohmann::json::parse(Read(Path("m.json")));
  EXPECT_EQ(j["format"], "fedldp-model");
  EXPECT_EQ(j["task"], "export-task");
  EXPECT_EQ(j["rounds_closed"], 7);
  EXPECT_EQ(j["reports_counted"], 123);
  EXPECT_EQ(j["model"]["classes"], 2);
  EXPECT_EQ(j["model"]["loss"], "logistic");
  EXPECT_EQ(j["weights"]["weights"].get<std::vector<double>>(), w);
  const auto plan = PlanFedSel(spec.config, spec.users, spec.dimension).value();
  const auto stated = FedSelPrivacyRecordOf(plan, spec.config, spec.central_delta).value();
  EXPECT_EQ(j["privacy"]["mechanism"], "privunitg");
  EXPECT_EQ(j["privacy"]["total"]["epsilon"].get<double>(), stated.total.epsilon);

  ASSERT_TRUE(Export("m.npz").ok());
  const std::string npz = Read(Path("m.npz"));
  EXPECT_EQ(npz.substr(0, 4), std::string("PK\x03\x04", 4));
  const auto header = npz.find("{'descr': '<f8', 'fortran_order': False, 'shape': (20,), }");
  ASSERT_NE(header, std::string::npos);
  const auto data = npz.find('\n', header) + 1;
  EXPECT_EQ((data - header + 10) % 64, 0u);  // the .npy header is padded to 64 bytes
  std::vector<double> back(20);
  std::memcpy(back.data(), npz.data() + data, 20 * sizeof(double));
  EXPECT_EQ(back, w);
  EXPECT_NE(npz.find("metadata.npy"), std::string::npos);
}

// A multinomial model's weights are (classes, features).
TEST_F(ModelExportTest, AMulticlassModelKeepsItsShape) {
  FedSelTaskSpec spec = FedSelTask();
  MakeState(EncodeTask(spec), 1, std::vector<double>(3 * 20, 0.5));
  ASSERT_TRUE(Export("m.npz").ok());
  EXPECT_NE(Read(Path("m.npz")).find("'shape': (3, 20)"), std::string::npos);
  ASSERT_TRUE(Export("m.json").ok());
  EXPECT_EQ(nlohmann::json::parse(Read(Path("m.json")))["model"]["classes"], 3);
}

// What cannot be exported is refused with its reason, and nothing is written.
TEST_F(ModelExportTest, WhatCannotBeExportedIsRefusedAndNothingIsWritten) {
  const auto refused = [&](const Result<ExportSummary>& e, const char* words, ErrorCode code) {
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().find(words), std::string::npos) << e.error();
    EXPECT_EQ(e.code(), code) << e.error();
  };
  refused(Export("m.npz"), "no state file", ErrorCode::kInvalidArgument);
  {
    auto state = ServerState::Open(Path("s.sqlite")).value();  // enrolled, never served
    ASSERT_TRUE(state.IssueTokens(1).ok());
  }
  refused(Export("m.npz"), "no round has closed", ErrorCode::kFailedPrecondition);
  std::filesystem::remove(Path("s.sqlite"));
  MakeState(EncodeTask(FedSelTask()), 2, std::vector<double>(20, 1.0));
  refused(Export("m.pt"), "no TorchScript export", ErrorCode::kInvalidArgument);
  refused(Export("m.bin"), "cannot tell the format", ErrorCode::kInvalidArgument);
  refused(Export("m.bin", "hdf5"), "no export format", ErrorCode::kInvalidArgument);
  {
    const auto held = ServerState::Open(Path("s.sqlite")).value();  // a running server's
    refused(Export("m.npz"), "in use by a running server", ErrorCode::kAlreadyExists);
  }
  MakeState(EncodeTask(FedSelTask()), 2, std::vector<double>(7, 1.0));  // damaged: wrong size
  refused(Export("m.npz"), "does not fit", ErrorCode::kInvalidArgument);
  for (const char* f : {"m.npz", "m.pt", "m.bin", "m.json"}) {
    EXPECT_FALSE(std::filesystem::exists(Path(f))) << f;
  }
  MakeState(EncodeTask(FedSelTask()), 3, std::vector<double>(20, 1.0));
  EXPECT_TRUE(Export("m.bin", "json").ok());  // the format given wins over the name
}

// LDP-FL: the model released (here an average of the last two rounds'),
// as TorchScript that fedldp (like torch.jit.load) loads, standardising
// inside: the same weights and the same accuracy as the network the server
// evaluates.
TEST_F(ModelExportTest, ANetworkIsTheReleasedModelAsTorchScript) {
  const Dataset train = testing::Stripes(200, 1), test = testing::Stripes(100, 2);
  LdpFlConfig c;
  c.rounds = 2;
  c.perturb_updates = true;
  c.fixed_range = {0, 0.075};
  c.averaging.kind = IterateAveragingKind::kEma;
  c.averaging.decay = 0.5;
  std::vector<std::size_t> rows(train.size());
  std::iota(rows.begin(), rows.end(), 0);
  const auto keys = ServerKeys::Generate();
  const LdpFlTaskSpec spec = MakeLdpFlTask("net", c, 4, train, rows, keys.public_key).value();
  auto net = NeuralNet::Create("cnn", 3).value();
  net.SetInputStandardization(spec.input_mean, spec.input_sd);
  net.Train(train, rows, 3, 10, 0.1, 3);
  const std::vector<float> trained = net.GetWeights();
  std::vector<double> x(trained.begin(), trained.end()), second = x;
  CounterRng rng(5);
  for (double& v : second) v += 0.01 * (Uniform01(rng) - 0.5);
  ServerLearner learner(c.server, c.averaging, c.rounds, x.size());
  std::vector<double> model = x;
  learner.Step<double>(1, model, x);
  learner.Step<double>(2, model, second);
  std::vector<double> released(x.size());
  learner.Release<double>(model, released);
  ASSERT_NE(released, model);
  MakeState(EncodeLdpFlTask(spec), 2, model, learner.State());

  const auto e = Export("m.pt");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->protocol, "ldpfl");
  EXPECT_EQ(e->model, "cnn (21840 weights)");
  ASSERT_TRUE(e->privacy.has_value());
  auto loaded = NeuralNet::Create(Path("m.pt"), 0).value();
  EXPECT_EQ(loaded.layer_names(), net.layer_names());
  EXPECT_EQ(loaded.GetWeights(), std::vector<float>(released.begin(), released.end()));
  auto served = NeuralNet::Create("cnn", 0).value();
  served.SetWeights(std::vector<float>(released.begin(), released.end()));
  served.SetInputStandardization(spec.input_mean, spec.input_sd);
  const double accuracy = served.Accuracy(test);
  EXPECT_GT(accuracy, 0.5);  // it learned: an accuracy that a wrong forward would not match
  EXPECT_EQ(loaded.Accuracy(test), accuracy);

  ASSERT_TRUE(Export("m.json").ok());
  const auto j = nlohmann::json::parse(Read(Path("m.json")));
  EXPECT_EQ(j["model"]["architecture"], "cnn");
  EXPECT_EQ(j["model"]["input_sd"].get<double>(), spec.input_sd);
  const auto conv1 = j["weights"]["conv1.weight"].get<std::vector<double>>();
  ASSERT_EQ(conv1.size(), 250u);
  EXPECT_TRUE(std::equal(conv1.begin(), conv1.end(), released.begin()));
  EXPECT_EQ(j["privacy"]["rounds"], 2);
}

}  // namespace
}  // namespace fedldp
