#include "fedldp/data/loaders.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fedldp/data/synthetic.h"

namespace fedldp {
namespace {

const std::string kShared = FEDLDP_DATASETS;

class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("fedldp_test_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string WriteGz(const std::string& name, const std::string& bytes) const {
    const auto p = (path_ / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return p;
  }

 private:
  std::filesystem::path path_;
};

void ExpectInUnitBox(const Dataset& d) {
  for (float v : d.features) ASSERT_TRUE(v >= -1 && v <= 1) << v;
}

// The registry of named datasets: data/README.md's table has every name,
// every name is found (a family by its members), and the unknown ones are
// refused with the registry's names.
TEST(NamedDatasets, TheRegistryIsTheReadmesTableAndFindsItsNames) {
  std::ifstream in(std::string(FEDLDP_DATASETS) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  for (const DatasetKind& k : DatasetKinds()) {
    EXPECT_NE(text.str().find("| `" + std::string(k.name) + "` |"), std::string::npos) << k.name;
    EXPECT_FALSE(k.summary.empty()) << k.name;
    EXPECT_EQ(k.load == nullptr, k.image()) << k.name;  // one loader each
  }
  EXPECT_EQ(FindDataset("syn-L-0.01-0.9")->name, "syn-{L,H}-C1-C2");
  EXPECT_TRUE(FindDataset("mnist")->image());
  EXPECT_EQ(FindDataset("adult-validation"), nullptr);
  const auto unknown = LoadNamed("nope", FEDLDP_DATASETS);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("unknown dataset 'nope' (adult, adult-train"), std::string::npos)
      << unknown.error();
  EXPECT_FALSE(LoadNamed("mnist", FEDLDP_DATASETS).ok());  // an image split, not a table
  const auto image = LoadImageSplit("adult", "");
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.error().find("(mnist, fmnist, cifar10)"), std::string::npos) << image.error();
}

TEST(Adult, RawCsvEncodesExactlyAsLibsvmA9a) {
  for (const auto& [csv, libsvm] : {std::pair<std::string, std::string>{"adult.data.gz", "a9a.gz"},
                                    {"adult.test.gz", "a9a.t.gz"}}) {
    auto adult = LoadAdult({kShared + "/" + csv});
    ASSERT_TRUE(adult.ok()) << adult.error();
    auto a9a = LoadLibsvm(kShared + "/" + libsvm, 123);
    ASSERT_TRUE(a9a.ok()) << a9a.error();
    ASSERT_EQ(adult->dimension, 123u);
    ASSERT_EQ(adult->size(), a9a->size());
    EXPECT_EQ(adult->labels, a9a->labels);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < adult->size(); ++i) {
      differing += !std::equal(adult->row(i).begin(), adult->row(i).end(), a9a->row(i).begin());
    }
    EXPECT_EQ(differing, 0u) << csv;
  }
  auto both = LoadNamed("adult", kShared);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 48842u);  // train + test, as in the paper
  EXPECT_NEAR(1 - both->MajorityRate(), (7841.0 + 3846) / 48842, 1e-9);
}

TEST(Bank, ThirtyTwoFeaturesInTheUnitBox) {
  auto bank = LoadNamed("bank", kShared);
  ASSERT_TRUE(bank.ok()) << bank.error();
  EXPECT_EQ(bank->dimension, 32u);
  EXPECT_EQ(bank->size(), 45211u);
  EXPECT_NEAR(1 - bank->MajorityRate(), 0.1170, 1e-4);
  ExpectInUnitBox(*bank);
}

TEST(Kdd, SeventyThousandReproducibleRows) {
  auto a = LoadNamed("kdd", kShared);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->size(), 70000u);
  EXPECT_EQ(a->dimension, 116u);
  ExpectInUnitBox(*a);
  // 19.69 % normal in the full file; a uniform subset of 70,000 is within a few SE.
  const double normal = a->MajorityLabel() == 1 ? a->MajorityRate() : 1 - a->MajorityRate();
  EXPECT_NEAR(1 - normal, 0.1969, 5 * std::sqrt(0.1969 * 0.8031 / 70000));
  auto b = LoadKdd({kShared + "/kddcup.data_10_percent.gz"}, 70000);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->features, b->features);
  auto c = LoadKdd({kShared + "/kddcup.data_10_percent.gz"}, 70000, /*seed=*/2);
  EXPECT_NE(a->features, c->features);
}

// A user's features far from unit scale are named with the fix; the
// repository's datasets and scaled columns say nothing.
TEST(FeatureScale, AColumnFarFromUnitScaleIsNamedWithTheFix) {
  Dataset d;
  d.dimension = 3;
  d.feature_names = {"age", "income", "flag"};
  d.Append(std::vector<float>{0.5f, 0.2f, 0.0f}, 0);
  d.Append(std::vector<float>{-1.0f, 0.9f, 0.0f}, 1);
  EXPECT_EQ(FeatureScaleWarning(d), "");  // an all-zero column is not off
  d.Append(std::vector<float>{3.0f, 52000.0f, 0.0f}, 1);
  const std::string w = FeatureScaleWarning(d);
  EXPECT_NE(w.find("1 of 3 feature columns are far from unit scale; column 1 ('income') reaches "
                   "|x| = 52000"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("scale every column first"), std::string::npos) << w;
  d.Append(std::vector<float>{10.0f, 0.0f, 0.0f}, 0);  // 10 is within the bound, 12 is not
  EXPECT_NE(FeatureScaleWarning(d).find("1 of 3"), std::string::npos);
  d.Append(std::vector<float>{12.0f, 0.0f, 0.0f}, 0);
  EXPECT_NE(FeatureScaleWarning(d).find("2 of 3"), std::string::npos);
  Dataset tiny;  // a column whose largest |x| is 1e-5: also off, and unnamed
  tiny.dimension = 2;
  tiny.Append(std::vector<float>{1e-5f, 1.0f}, 0);
  EXPECT_NE(FeatureScaleWarning(tiny).find("column 0 reaches |x| = 1e-05"), std::string::npos)
      << FeatureScaleWarning(tiny);
  EXPECT_EQ(FeatureScaleWarning(LoadNamed("bank", kShared).value()), "");
}

TEST(Libsvm, DimensionAndLabels) {
  TempDir dir;
  auto d = LoadLibsvm(dir.Write("ok.svm", "+1 1:0.5 3:-1\n-1 2:1\n\n0 3:0.25\n"));
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->dimension, 3u);
  EXPECT_EQ(d->labels, (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(d->features, (std::vector<float>{0.5f, 0, -1, 0, 1, 0, 0, 0, 0.25f}));
  auto multi = LoadLibsvm(dir.Write("multi.svm", "3 1:1\n7 1:2\n3 1:3\n"));
  ASSERT_TRUE(multi.ok());
  EXPECT_EQ(multi->classes, 2);
  EXPECT_EQ(multi->labels, (std::vector<int>{0, 1, 0}));
  auto one = LoadLibsvm(dir.Write("one.svm", "3 1:1\n3 1:2\n"));  // found by loader_fuzz
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->classes, 2);
  EXPECT_EQ(one->labels, (std::vector<int>{0, 0}));
  // A client's share of a 10-class task: its labels are class numbers.
  auto share = LoadLibsvm(dir.Write("share.svm", "3 1:1\n7 2:2\n3 1:3\n"), 784, FileLabels::kShare);
  ASSERT_TRUE(share.ok()) << share.error();
  EXPECT_EQ(share->dimension, 784u);
  EXPECT_EQ(share->classes, 8);
  EXPECT_EQ(share->labels, (std::vector<int>{3, 7, 3}));
  auto signs = LoadLibsvm(dir.Write("signs.svm", "-1 1:1\n+1 1:2\n"), 0, FileLabels::kShare);
  ASSERT_TRUE(signs.ok());
  EXPECT_EQ(signs->classes, 2);
  EXPECT_EQ(signs->labels, (std::vector<int>{0, 1}));
  auto negative = LoadLibsvm(dir.Write("neg.svm", "-2 1:1\n"), 0, FileLabels::kShare);
  EXPECT_NE(negative.error().find("neg.svm:1: label '-2' is not a class number"), std::string::npos)
      << negative.error();
}

TEST(Loaders, MalformedInputNamesFileLineAndReason) {
  TempDir dir;
  struct Case {
    std::string name, text, expected;
  };
  const std::string adult_ok =
      "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
      "Male, 2174, 0, 40, United-States, <=50K\n";
  const std::vector<Case> svm = {
      {"a.svm", "+1 1:1\n+1 2\n", ":2: '2' is not index:value"},
      {"b.svm", "+1 0:1\n", ":1: index in '0:1' must be an integer >= 1"},
      {"c.svm", "+1 2:1 1:1\n", ":1: indices must increase"},
      {"d.svm", "x 1:1\n", ":1: label 'x' is not an integer"},
      {"e.svm", "+1 1:nan\n", ":1: value in '1:nan' is not a finite number"},
  };
  for (const auto& c : svm) {
    auto d = LoadLibsvm(dir.Write(c.name, c.text));
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_NE(d.error().find(c.name + c.expected), std::string::npos) << d.error();
  }
  auto too_big = LoadLibsvm(dir.Write("f.svm", "+1 5:1\n"), 3);
  EXPECT_NE(too_big.error().find(":1: index 5 exceeds the dimension 3"), std::string::npos);
  const std::vector<Case> adult = {
      {"a.csv", adult_ok + "39, State-gov\n", ":2: expected 15 comma-separated fields, got 2"},
      {"b.csv",
       adult_ok + adult_ok.substr(0, adult_ok.find("State-gov")) + "Martian" +
           adult_ok.substr(adult_ok.find("State-gov") + 9),
       ":2: unknown workclass 'Martian'"},
      {"c.csv", "x" + adult_ok, ":1: age 'x39' is not a number"},
      {"d.csv", adult_ok.substr(0, adult_ok.find("<=50K")) + "rich\n", ":1: income must be"},
  };
  for (const auto& c : adult) {
    auto d = LoadAdult({dir.Write(c.name, c.text)});
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_NE(d.error().find(c.name + c.expected), std::string::npos) << d.error();
  }
  EXPECT_TRUE(LoadAdult({dir.Write("ok.csv", adult_ok)}).ok());
  auto gz = LoadAdult({dir.WriteGz("ok.csv.gz", adult_ok + adult_ok)});
  ASSERT_TRUE(gz.ok()) << gz.error();
  EXPECT_EQ(gz->size(), 2u);
  auto missing = LoadAdult({"/nonexistent/adult.data"});
  EXPECT_NE(missing.error().find("/nonexistent/adult.data: cannot open"), std::string::npos);
  auto bank = LoadBank(dir.Write("bank.csv", "age;job\n"));
  EXPECT_NE(bank.error().find("bank.csv:1: expected 17"), std::string::npos) << bank.error();
  auto kdd = LoadKdd({dir.Write("kdd.csv", "0,tcp,http,SF\n")});
  EXPECT_NE(kdd.error().find("kdd.csv:1: expected 42"), std::string::npos) << kdd.error();
  EXPECT_FALSE(LoadNamed("mnist-please", kShared).ok());
}

std::string IdxBytes(std::vector<std::uint32_t> shape, const std::vector<unsigned char>& data) {
  std::string s = {0, 0, 8, static_cast<char>(shape.size())};
  for (auto v : shape) {
    for (int b = 3; b >= 0; --b) s.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
  }
  s.append(data.begin(), data.end());
  return s;
}

// n CIFAR-10 records: label i % 10, pixel j of record i = (i + j) % 256.
std::string CifarBytes(std::size_t n, int bad_label_at = -1) {
  std::string bytes;
  for (std::size_t i = 0; i < n; ++i) {
    bytes.push_back(static_cast<char>(static_cast<int>(i) == bad_label_at ? 10 : i % 10));
    for (std::size_t j = 0; j < 3072; ++j) bytes.push_back(static_cast<char>((i + j) % 256));
  }
  return bytes;
}

// A file asks for what it likes; a loader holds at most LoadLimits of it and
// says which bound a file passed (before the bounds, the first two LIBSVM
// files crashed the loader or asked for 16 GB).
TEST(Loaders, RefuseWhatAFileAsksBeyondTheLimits) {
  TempDir dir;
  auto expect_refused = [](const Result<Dataset>& d, const std::string& expected) {
    ASSERT_FALSE(d.ok()) << "accepted; expected: " << expected;
    EXPECT_NE(d.error().find(expected), std::string::npos) << d.error();
  };
  const std::string largest = "exceeds the largest dimension a loader accepts (4194304)";
  expect_refused(LoadLibsvm(dir.Write("huge.svm", "-1 9223372036854775808:1\n")),
                 "huge.svm:1: index in '9223372036854775808:1' " + largest);
  expect_refused(LoadLibsvm(dir.Write("big.svm", "-1 2000000000:1\n")), largest);
  expect_refused(LoadLibsvm(dir.Write("wrap.svm", "-1 1:1 18446744073709551617:1\n")), largest);
  expect_refused(LoadLibsvm(dir.Write("ok.svm", "1 1:1\n"), std::size_t{1} << 40),
                 "dimension 1099511627776 exceeds the largest a loader accepts");
  expect_refused(LoadLibsvm(dir.Write("float.svm", "1 1:1e39\n")), "not a finite number a float");
  expect_refused(LoadLibsvm(dir.Write("label.svm", "1e300 1:1\n")), "is not an integer");
  expect_refused(
      LoadLibsvm(dir.Write("label2.svm", "-9223372036854775809 1:1\n"), 0, FileLabels::kShare),
      "is not an integer");
  // Smaller limits, to show each bound with small files.
  const LoadLimits small{.max_dimension = 8, .max_cells = 16, .max_line_bytes = 64};
  const std::string rows = "1 1:1 4:1\n0 2:1\n1 3:1\n0 1:1\n1 2:1\n";  // 5 x 4
  EXPECT_TRUE(LoadLibsvm(dir.Write("four.svm", rows.substr(0, 28)), 0, {}, small).ok());
  expect_refused(LoadLibsvm(dir.Write("five.svm", rows), 0, {}, small),
                 "five.svm:5: 5 rows of 4 features exceed the most a loader holds in memory (16 "
                 "features)");
  expect_refused(LoadLibsvm(dir.Write("wide.svm", "1 9:1\n"), 0, {}, small),
                 "exceeds the largest dimension a loader accepts (8)");
  expect_refused(
      LoadLibsvm(dir.Write("long.svm", "1 1:1" + std::string(100, ' ') + "\n"), 0, {}, small),
      "long.svm:1: line longer than 64 bytes");
  expect_refused(LoadLibsvm(dir.WriteGz("line.svm.gz", std::string(1 << 20, '1')), 0, {}, small),
                 "line longer than 64 bytes");
  // IDX: the header's shape is refused before anything is allocated.
  expect_refused(LoadIdx(dir.Write("giant", IdxBytes({0xffffffff, 0xffffffff, 0xffffffff}, {})),
                         dir.Write("labels", IdxBytes({1}, {1}))),
                 "giant: dimension");
  expect_refused(LoadIdx(dir.Write("many", IdxBytes({0xffffffff, 28, 28}, {})),
                         dir.Write("labels", IdxBytes({1}, {1}))),
                 "many: 4294967295 rows of 784 features exceed");
  expect_refused(LoadIdx(dir.Write("img", IdxBytes({5, 2, 2}, std::vector<unsigned char>(20))),
                         dir.Write("labels5", IdxBytes({5}, {1, 2, 3, 4, 5})), small),
                 "img: 5 rows of 4 features exceed");
  // CIFAR-10, Adult, Bank and KDD check every row as they read it.
  expect_refused(LoadCifar10({dir.Write("c.bin", CifarBytes(3))}, {.max_cells = 2 * 3072}),
                 "c.bin:3: 3 rows of 3072 features exceed");
  const std::string adult =
      "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
      "Male, 2174, 0, 40, United-States, <=50K\n";
  expect_refused(LoadAdult({dir.Write("adult.csv", adult + adult)}, {.max_cells = 123}),
                 "adult.csv:2: 2 rows of 123 features exceed");
  const std::string bank_header =
      "age;job;marital;education;default;balance;housing;loan;contact;day;month;duration;"
      "campaign;pdays;previous;poutcome;y\n";
  const std::string bank_row =
      "58;management;married;tertiary;no;2143;yes;no;unknown;5;may;261;1;-1;0;unknown;no\n";
  EXPECT_TRUE(LoadBank(dir.Write("bank.csv", bank_header + bank_row)).ok());
  expect_refused(
      LoadBank(dir.Write("bank2.csv", bank_header + bank_row + bank_row), {.max_cells = 32}),
      "bank2.csv:3: 2 rows of 32 features exceed");
  std::string bank_big = bank_row;
  bank_big.replace(bank_big.find("2143"), 4, "1e39");
  expect_refused(LoadBank(dir.Write("bank3.csv", bank_header + bank_big)),
                 "balance '1e39' is not a number a float holds");
  std::string kdd;  // a new service on every line: the dimension grows
  for (int i = 0; i < 20; ++i) {
    kdd += "0,tcp,service" + std::to_string(i) + ",SF";
    for (int c = 0; c < 37; ++c) kdd += ",0";
    kdd += ",normal.\n";
  }
  EXPECT_TRUE(LoadKdd({dir.Write("kdd.csv", kdd)}).ok());
  expect_refused(LoadKdd({dir.Write("kdd2.csv", kdd)}, std::nullopt, 1, {.max_dimension = 50}),
                 "kdd2.csv:11: dimension 51 exceeds the largest a loader accepts (50)");
}

TEST(Idx, ReadsImagesAndLabelsPlainOrGzip) {
  TempDir dir;
  const std::vector<unsigned char> pixels = {0, 255, 51, 102, 0, 0, 0, 255};  // 2 images 2x2
  const auto images = dir.WriteGz("img.gz", IdxBytes({2, 2, 2}, pixels));
  const auto labels = dir.Write("lab", IdxBytes({2}, {7, 3}));
  auto d = LoadIdx(images, labels);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->dimension, 4u);
  EXPECT_EQ(d->labels, (std::vector<int>{7, 3}));
  EXPECT_FLOAT_EQ(d->features[2], 0.2f);
  EXPECT_NE(
      LoadIdx(dir.Write("short", IdxBytes({2, 2, 2}, {1, 2, 3})), labels).error().find("truncated"),
      std::string::npos);
  EXPECT_NE(
      LoadIdx(images, dir.Write("three", IdxBytes({3}, {1, 2, 3}))).error().find("2 images but"),
      std::string::npos);
  EXPECT_NE(LoadIdx(images, dir.Write("bad", IdxBytes({2}, {1, 12}))).error().find("not a digit"),
            std::string::npos);
  EXPECT_NE(LoadIdx(labels, labels).error().find("not an IDX file"), std::string::npos);
}

TEST(Cifar10, ReadsBinaryBatchesChannelMajor) {
  TempDir dir;
  const auto a = dir.Write("a.bin", CifarBytes(3));
  const auto b = dir.Write("b.bin", CifarBytes(2));
  auto d = LoadCifar10({a, b});
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->size(), 5u);
  EXPECT_EQ(d->dimension, 3072u);
  EXPECT_EQ(d->classes, 10);
  EXPECT_EQ(d->labels, (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_FLOAT_EQ(d->row(1)[0], 1 / 255.0f);
  EXPECT_FLOAT_EQ(d->row(2)[1024], ((2 + 1024) % 256) / 255.0f);  // first green pixel
  EXPECT_FLOAT_EQ(d->row(4)[3071], ((1 + 3071) % 256) / 255.0f);
}

TEST(Cifar10, MalformedBatchesNameFileRecordAndReason) {
  TempDir dir;
  const auto truncated = dir.Write("t.bin", CifarBytes(2).substr(0, 3073 + 100));
  EXPECT_NE(LoadCifar10({truncated}).error().find("t.bin:2: truncated record"), std::string::npos);
  const auto bad = dir.Write("l.bin", CifarBytes(3, 1));
  EXPECT_NE(LoadCifar10({bad}).error().find("l.bin:2: label 10"), std::string::npos);
  EXPECT_NE(LoadCifar10({dir.Write("e.bin", "")}).error().find("no record"), std::string::npos);
  EXPECT_NE(LoadCifar10({"/nonexistent/x.bin"}).error().find("cannot open"), std::string::npos);
}

TEST(Cifar10, ImageSplitReadsTheSixStandardBatches) {
  TempDir dir;
  for (int i = 1; i <= 5; ++i) dir.Write("data_batch_" + std::to_string(i) + ".bin", CifarBytes(2));
  dir.Write("test_batch.bin", CifarBytes(3));
  auto split = LoadImageSplit("cifar10", dir.path());
  ASSERT_TRUE(split.ok()) << split.error();
  EXPECT_EQ(split->train.size(), 10u);
  EXPECT_EQ(split->test.size(), 3u);
  EXPECT_FALSE(LoadImageSplit("cifar10", "").ok());
  EXPECT_FALSE(LoadImageSplit("imagenet", "").ok());
}

TEST(ImageSplit, MnistAndFashionMnistAsSetupInstallsThem) {
  for (const char* name : {"mnist", "fmnist"}) {
    auto split = LoadImageSplit(name, "");
    ASSERT_TRUE(split.ok()) << name << ": " << split.error();
    EXPECT_EQ(split->train.size(), 60000u) << name;
    EXPECT_EQ(split->test.size(), 10000u) << name;
    EXPECT_EQ(split->train.dimension, 784u) << name;
    EXPECT_EQ(split->train.classes, 10) << name;
  }
}

TEST(AveragePool, AveragesEachBlockRowMajor) {
  // One 4 x 4 image, pixels 0..15 row-major: 2 x 2 blocks average to
  // (0+1+4+5)/4 = 2.5, 4.5, 10.5, 12.5.
  Dataset images;
  images.name = "tiny";
  images.dimension = 16;
  images.classes = 10;
  std::vector<float> pixels(16);
  for (std::size_t i = 0; i < 16; ++i) pixels[i] = static_cast<float>(i);
  images.Append(pixels, 7);
  images.Append(std::vector<float>(16, 1.0f), 3);
  const Dataset pooled = AveragePool(images, 2).value();
  ASSERT_EQ(pooled.dimension, 4u);
  ASSERT_EQ(pooled.size(), 2u);
  EXPECT_EQ(pooled.classes, 10);
  EXPECT_EQ(pooled.labels, (std::vector<int>{7, 3}));
  EXPECT_EQ(std::vector<float>(pooled.row(0).begin(), pooled.row(0).end()),
            (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));
  for (float v : pooled.row(1)) EXPECT_EQ(v, 1.0f);
  EXPECT_EQ(AveragePool(images, 4).value().row(0)[0], 7.5f);
  EXPECT_EQ(AveragePool(images, 1).value().features, images.features);
  // Refused: a side not a multiple of the factor, features that are no square.
  EXPECT_NE(AveragePool(images, 3).error().find("not a multiple"), std::string::npos);
  images.dimension = 15;
  images.features.resize(30);
  EXPECT_NE(AveragePool(images, 2).error().find("not one square image"), std::string::npos);
}

TEST(CenterFeatures, SubtractsTheCentreFromEveryFeatureOrRefusesIt) {
  Dataset d;
  d.dimension = 3;
  d.Append(std::vector<float>{0.0f, 0.5f, 1.0f}, 1);
  d.Append(std::vector<float>{0.25f, -1.0f, 0.125f}, 0);
  const std::vector<float> before = d.features;
  ASSERT_TRUE(CenterFeatures(d, 0.25).ok());
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(d.features[i], before[i] - 0.25f);
  EXPECT_EQ(d.labels, (std::vector<int>{1, 0}));
  ASSERT_TRUE(CenterFeatures(d, -0.25).ok());
  EXPECT_EQ(d.features, before);
  // Outside the features' scale, or no number: refused, the rows untouched.
  for (double wrong : {1.5, -1.0001, std::nan(""), HUGE_VAL}) {
    const Status s = CenterFeatures(d, wrong);
    ASSERT_FALSE(s.ok()) << wrong;
    EXPECT_NE(s.error().find("the features' centre must be a number in [-1, 1]"), std::string::npos)
        << s.error();
  }
  EXPECT_EQ(d.features, before);
  EXPECT_TRUE(CheckFeatureCenter(1).ok());
  EXPECT_TRUE(CheckFeatureCenter(-1).ok());
}

TEST(Synthetic, PerEntryReadingShrinksEachValueIndependently) {
  auto o = ParseSyntheticName("syn-L-0.01-0.9-entry");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->dimension, 100u);
  EXPECT_EQ(o->sparsity, SyntheticSparsity::kPerEntry);
  o.value().rows = 20000;
  auto d = MakeSynthetic(*o);
  ASSERT_TRUE(d.ok());
  ExpectInUnitBox(*d);
  // A coordinate is small (|x| <= 0.01) w.p. C2 + (1 - C2) * 0.01.
  std::size_t small = 0;
  for (float v : d->features) small += std::fabs(v) <= 0.01f;
  const double p = 0.9 + 0.1 * 0.01, n = static_cast<double>(d->features.size());
  EXPECT_NEAR(small / n, p, 5 * std::sqrt(p * (1 - p) / n));
  // Every column has both small and large values.
  for (std::size_t j = 0; j < d->dimension; ++j) {
    float largest = 0;
    for (std::size_t i = 0; i < d->size(); ++i)
      largest = std::max(largest, std::fabs(d->row(i)[j]));
    EXPECT_GT(largest, 0.5f) << "column " << j;
  }
  auto again = MakeSynthetic(*o);
  EXPECT_EQ(d->features, again->features);
}

TEST(Synthetic, RowsSuffixSetsTheRowsAndKeepsTheFirstOnes) {
  EXPECT_EQ(ParseSyntheticName("syn-L-0.01-0.9")->rows, 60000u);
  auto o = ParseSyntheticName("syn-H-0.01-0.9-entry-n1500");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->rows, 1500u);
  EXPECT_EQ(o->dimension, 300u);
  EXPECT_EQ(o->sparsity, SyntheticSparsity::kPerEntry);
  EXPECT_EQ(ParseSyntheticName("syn-L-0.01-0.9-n2000000")->rows, 2000000u);
  for (const char* bad : {"syn-L-0.01-0.9-n", "syn-L-0.01-0.9-n0", "syn-L-0.01-0.9-n12x",
                          "syn-L-0.01-0.9-n99999999999"}) {
    EXPECT_FALSE(ParseSyntheticName(bad).ok()) << bad;
  }
  // More rows extend the same stream: the first rows are the default's.
  auto small = ParseSyntheticName("syn-L-0.01-0.9-n50").value();
  auto large = ParseSyntheticName("syn-L-0.01-0.9-n80").value();
  const Dataset a = MakeSynthetic(small).value(), b = MakeSynthetic(large).value();
  EXPECT_TRUE(std::equal(a.features.begin(), a.features.end(), b.features.begin()));
  EXPECT_TRUE(std::equal(a.labels.begin(), a.labels.end(), b.labels.begin()));
}

TEST(Synthetic, PerFeatureReadingShrinksWholeColumns) {
  auto o = ParseSyntheticName("syn-L-0.01-0.9");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->sparsity, SyntheticSparsity::kPerFeature);
  EXPECT_EQ(ParseSyntheticName("syn-L-0.01-0.9-feature")->sparsity, SyntheticSparsity::kPerFeature);
  o.value().rows = 20000;
  auto d = MakeSynthetic(*o);
  ASSERT_TRUE(d.ok());
  ExpectInUnitBox(*d);
  // A column is either shrunk in every record (max |x| <= C1) or not at all
  // (max |x| of 20000 uniforms > 0.5); shrunk columns ~ Binomial(100, 0.9).
  std::size_t shrunk = 0;
  for (std::size_t j = 0; j < d->dimension; ++j) {
    float largest = 0;
    for (std::size_t i = 0; i < d->size(); ++i)
      largest = std::max(largest, std::fabs(d->row(i)[j]));
    EXPECT_TRUE(largest <= 0.01f || largest > 0.5f) << "column " << j << ": " << largest;
    shrunk += largest <= 0.01f;
  }
  EXPECT_NEAR(static_cast<double>(shrunk), 90.0, 5 * std::sqrt(100 * 0.9 * 0.1));
  EXPECT_GT(shrunk, 0u);
  EXPECT_LT(shrunk, 100u);
  auto again = MakeSynthetic(*o);
  EXPECT_EQ(d->features, again->features);
}

TEST(Synthetic, NamesAreParsedStrictly) {
  EXPECT_FALSE(ParseSyntheticName("syn-X-1-2").ok());
  EXPECT_FALSE(ParseSyntheticName("syn-L-0.01-entry").ok());
  EXPECT_FALSE(ParseSyntheticName("syn-L-0.01-0.9-other").ok());
  EXPECT_EQ(ParseSyntheticName("syn-H-0.1-0.6")->dimension, 300u);
}

TEST(Csv, HeaderLabelColumnAndClasses) {
  TempDir dir;
  // A header (non-numeric fields), text labels: classes in text order.
  auto d =
      LoadCsv(dir.Write("h.csv", "x1, label ,x2\n0.5,yes,-1\n\n1,no,0.25\n\"2\",yes,3\n"), "label");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->dimension, 2u);
  EXPECT_EQ(d->feature_names, (std::vector<std::string>{"x1", "x2"}));
  EXPECT_EQ(d->features, (std::vector<float>{0.5f, -1, 1, 0.25f, 2, 3}));
  EXPECT_EQ(d->labels, (std::vector<int>{1, 0, 1}));  // no < yes
  EXPECT_EQ(d->classes, 2);
  // No header, label last by default; numeric labels sort numerically.
  auto n = LoadCsv(dir.Write("n.csv", "0.1,0.2,10\n0.3,0.4,-1\n0.5,0.6,2\n"));
  ASSERT_TRUE(n.ok()) << n.error();
  EXPECT_TRUE(n->feature_names.empty());
  EXPECT_EQ(n->labels, (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(n->classes, 3);
  // By 0-based index; -1 / +1 give 0 / 1.
  auto i = LoadCsv(dir.Write("i.csv", "+1,0.5\n-1,0.25\n"), "0");
  ASSERT_TRUE(i.ok()) << i.error();
  EXPECT_EQ(i->labels, (std::vector<int>{1, 0}));
  EXPECT_EQ(i->features, (std::vector<float>{0.5f, 0.25f}));
}

// A CSV file means what it says (issue 41): the first row is a header or
// data for a reason, and a label column that cannot be one is refused with
// the fix. (Before: pandas' header 0,1,2,... was read as a data row, adding
// a row and a class; a BOM joined the first name; one class, fractional or
// thousands of labels trained without a word.)
TEST(Csv, HeadersAndLabelColumnsMeanWhatTheySay) {
  TempDir dir;
  struct Case {
    std::string text, label_column;
    std::string expected;  // in the error; "" = loads
  };
  const std::vector<Case> cases = {
      {"0,1,2\n0.5,0.5,0\n0.1,0.2,1\n", "", "the first row is the column numbers, 0, 1, ..."},
      {"1,2,3\n0.5,0.5,0\n0.1,0.2,1\n", "", "the first row is the column numbers, 1, 2, ..."},
      {"0,1,2,3\n0.5,0.5,0.1,0\n0.1,0.2,0.1,1\n", "0", "the first row is the column numbers"},
      {",a,label\n0,0.5,0\n1,0.1,1\n", "", "column 0 of the header has no name (an index"},
      {"a,a,label\n0.5,0.5,0\n0.1,0.1,1\n", "", "columns 0 and 1 of the header are both named 'a'"},
      {"1,2,income\n0.5,0.5,0\n0.1,0.1,1\n", "", "the labels mix numbers and text ('income'"},
      {"a,label\n0.5,3\n0.1,3\n", "", "one class: nothing to learn"},
      {"a,label\n0.5,0.25\n0.1,1\n", "", "the label 0.25 is not a whole number"},
      {"a,b\n1,2\n", "", "one class"},
      {"\xFF\xFE"
       "a,b\n",
       "", "UTF-16"},
      // Loads: a header with a numeric name, a missing value on line 1 is
      // data (and refused as such), a BOM, a named label column.
      {"x,2020,label\n0.5,0.5,0\n0.1,0.1,1\n", "", ""},
      {"0.5,,0\n0.1,0.1,1\n", "", "column 1: '' is not a finite number"},
      {"\xEF\xBB\xBF"
       "age,label\n0.5,0\n0.1,1\n",
       "label", ""},
      {"0,1\n0.5,0\n0.1,1\n", "", ""},  // 2 columns: 0,1 is data
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    auto d = LoadCsv(dir.Write("c" + std::to_string(i) + ".csv", c.text), c.label_column);
    if (c.expected.empty()) {
      EXPECT_TRUE(d.ok()) << c.text << ": " << d.error();
    } else {
      ASSERT_FALSE(d.ok()) << c.text;
      EXPECT_NE(d.error().find(c.expected), std::string::npos) << c.text << ": " << d.error();
    }
  }
  // The BOM is not part of the first name; the label is found by it.
  auto bom = LoadCsv(dir.Write("bom.csv",
                               "\xEF\xBB\xBF"
                               "age,label\n0.5,0\n0.1,1\n"),
                     "label");
  ASSERT_TRUE(bom.ok()) << bom.error();
  EXPECT_EQ(bom->feature_names, (std::vector<std::string>{"age"}));
  // Too many classes for the rows: 150 labels among 300 rows; 101 classes
  // among 1,010 rows load.
  std::string many = "a,label\n", enough = "a,label\n";
  for (int r = 0; r < 300; ++r) many += "0.5," + std::to_string(r % 150) + "\n";
  for (int r = 0; r < 1010; ++r) enough += "0.5," + std::to_string(r % 101) + "\n";
  auto refused = LoadCsv(dir.Write("many.csv", many));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("150 distinct labels among 300 rows"), std::string::npos)
      << refused.error();
  EXPECT_EQ(LoadCsv(dir.Write("enough.csv", enough)).value().classes, 101);
}

TEST(Csv, ErrorsNameFileLineAndReason) {
  TempDir dir;
  const auto error = [&](const std::string& text, const std::string& label = "") {
    auto d = LoadCsv(dir.Write("bad.csv", text), label);
    EXPECT_FALSE(d.ok()) << text;
    return d.ok() ? std::string() : d.error();
  };
  EXPECT_NE(error("a,b\n1,2\n3\n").find("bad.csv:3: has 1 fields, the first row 2"),
            std::string::npos);
  EXPECT_NE(error("1,red,0\n2,blue,1\n").find("bad.csv:2: column 1: 'blue' is not a finite"),
            std::string::npos);
  EXPECT_NE(error("a,b\n1,2\n", "c").find("no column is named 'c'"), std::string::npos);
  EXPECT_NE(error("1,2\n", "5").find("label column 5 is past the last column (1)"),
            std::string::npos);
  EXPECT_NE(error("1,2\n1,\n").find("bad.csv:2: the label is empty"), std::string::npos);
  EXPECT_NE(error("5\n").find("needs a label and at least one feature"), std::string::npos);
  EXPECT_NE(error("a,b\n").find("no rows"), std::string::npos);
  EXPECT_NE(error("1,nan,0\n").find("not a finite number"), std::string::npos);
}

TEST(DataFile, PicksCsvOrLibsvmByName) {
  TempDir dir;
  auto csv = LoadDataFile(dir.Write("a.csv", "1,0\n2,1\n"));
  ASSERT_TRUE(csv.ok()) << csv.error();
  EXPECT_EQ(csv->dimension, 1u);
  auto svm = LoadDataFile(dir.Write("a.svm", "1 1:2\n0 2:1\n"));
  ASSERT_TRUE(svm.ok()) << svm.error();
  EXPECT_EQ(svm->dimension, 2u);
  auto refused = LoadDataFile(dir.path() + "/a.svm", "label");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("applies to CSV files"), std::string::npos);
}

// A LIBSVM file given as the data to learn from is held to CSV's rules:
// one label value is nothing to learn (it trained, and only the reference
// check stopped it); a share for a client, or LoadLibsvm itself (a test
// split), still takes one.
TEST(DataFile, ALibsvmFileOfOneLabelIsNothingToLearn) {
  TempDir dir;
  const std::string path = dir.Write("one.svm", "1 1:0.5\n1 2:0.3\n1 1:0.1\n");
  auto one = LoadDataFile(path);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().find("every row has the same label, one class: nothing to learn (LIBSVM's "
                             "label is each line's first field)"),
            std::string::npos)
      << one.error();
  EXPECT_TRUE(LoadLibsvm(path).ok());
  EXPECT_TRUE(LoadDataFile(path, "", FileLabels::kShare).ok());
  auto many = LoadDataFile(dir.Write("many.svm", [] {
    std::string text;
    for (int i = 0; i < 200; ++i) text += std::to_string(i) + " 1:0.5\n";
    return text;
  }()));
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().find("200 distinct labels among 200 rows"), std::string::npos)
      << many.error();
}

// Issue 44, item 5: a client's own file is a share of the task, which may
// hold one class; its labels become the task's classes by name, as the
// server's file wrote them, not by their rank in the share.
TEST(TaskData, AClientsShareTakesTheTasksClassesByName) {
  TempDir dir;
  auto whole = LoadCsv(dir.Write("w.csv", "x,y\n0.5,yes\n1,no\n0,yes\n"), "y");
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_EQ(whole->class_names, (std::vector<std::string>{"no", "yes"}));
  auto signs = LoadCsv(dir.Write("s.csv", "1,+1\n2,-1\n3,+1\n"));
  EXPECT_EQ(signs.value().class_names, (std::vector<std::string>{"-1", "+1"}));
  EXPECT_EQ(LoadCsv(dir.path() + "/s.csv").value().Subset(std::vector<std::size_t>{0}).class_names,
            signs->class_names);
  // One class is refused in a whole dataset, taken in a share.
  const std::string yes = dir.Write("yes.csv", "x,y\n0.5,yes\n0.25,yes\n");
  EXPECT_NE(LoadCsv(yes, "y").error().find("one class"), std::string::npos);
  auto share = LoadCsv(yes, "y", {}, FileLabels::kShare);
  ASSERT_TRUE(share.ok()) << share.error();
  EXPECT_EQ(share->classes, 1);
  EXPECT_EQ(share->labels, (std::vector<int>{0, 0}));
  // Ranked in the share, "yes" is class 0; in the task it is class 1.
  auto labelled = TaskData::Of(*share, whole->class_names);
  ASSERT_TRUE(labelled.ok()) << labelled.error();
  EXPECT_EQ(labelled->get().labels, (std::vector<int>{1, 1}));
  EXPECT_EQ(labelled->get().classes, 2);
  EXPECT_EQ(labelled->get().features, share->features);
  auto unknown = TaskData::Of(*share, std::vector<std::string>{"no", "maybe"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("the label 'yes' is none of the task's classes ('no', 'maybe')"),
            std::string::npos)
      << unknown.error();
  // Numbers are equal as numbers; -1 and 0 are one class of a numbered binary task.
  auto numbers = LoadCsv(dir.Write("n.csv", "1,1.0\n2,0\n3,-1\n"), "", {}, FileLabels::kShare);
  ASSERT_TRUE(numbers.ok()) << numbers.error();
  EXPECT_EQ(TaskData::Of(*numbers, std::vector<std::string>{"-1", "+1"}).value().get().labels,
            (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(TaskData::Of(*numbers, std::vector<std::string>{"0", "1"}).value().get().labels,
            (std::vector<int>{1, 0, 0}));
  EXPECT_FALSE(TaskData::Of(*numbers, std::vector<std::string>{"1", "2"}).ok());
  // A task that names none (a built-in dataset's) numbers its classes.
  EXPECT_EQ(TaskData::Of(*numbers, {}).value().get().labels, (std::vector<int>{1, 0, 0}));
  EXPECT_NE(TaskData::Of(*share, {}).error().find("'yes' is not a class number"),
            std::string::npos);
  // A LIBSVM share names every class number below its largest; only those
  // its rows hold must be the task's.
  auto digits = LoadLibsvm(dir.Write("d.svm", "7 1:1\n9 1:2\n"), 0, FileLabels::kShare).value();
  const std::vector<std::string> task = {"7", "8", "9"};
  EXPECT_EQ(TaskData::Of(digits, task).value().get().labels, (std::vector<int>{0, 2}));
  EXPECT_EQ(TaskData::Of(digits, task).value().get().classes, 3);
  // Data without names (a built-in dataset's) is the data itself.
  Dataset builtin = *share;
  builtin.class_names.clear();
  EXPECT_EQ(&TaskData::Of(builtin, task).value().get(), &builtin);
}

}  // namespace
}  // namespace fedldp
