// LdpFlConfig's options described once (fl/ldpfl_options.h): every row
// reads back what it sets, names are unique, a choice takes its words only,
// and the rules refuse with the sentences the CLI and Python both show.
#include "fedldp/fl/ldpfl_options.h"

#include <gtest/gtest.h>

#include <set>

namespace fedldp {
namespace {

using Given = std::vector<std::pair<std::string, OptionValue>>;

LdpFlConfig With(const Given& given) { return LdpFlConfigWith({}, given).value(); }
std::string Refusal(const Given& given) { return LdpFlConfigWith({}, given).error(); }

TEST(LdpFlOptions, NamesAreUniqueAndEveryFieldReadsBackWhatItSets) {
  std::set<std::string_view> keys, flags, records;
  for (const LdpFlOption& o : LdpFlOptions()) {
    EXPECT_TRUE(keys.insert(o.key).second) << o.key;
    if (!o.flag.empty()) {
      EXPECT_TRUE(flags.insert(o.flag).second) << o.flag;
    }
    if (!o.record.empty()) {
      EXPECT_TRUE(records.insert(o.record).second) << o.record;
    }
    EXPECT_FALSE(o.help.empty()) << o.key;
  }
  LdpFlConfig vector;
  vector.vector = VectorMechanism::kGaussian;
  LdpFlConfig script;
  script.arch = "nets/mlp.pt";
  for (const LdpFlConfig& start : {LdpFlConfig{}, vector, script}) {
    for (const LdpFlOption& o : LdpFlOptions()) {
      LdpFlConfig typed = start, text = start;
      ASSERT_TRUE(o.set(typed, o.get(start)).ok()) << o.key;
      ASSERT_TRUE(o.set(text, OptionString(o.get(start))).ok()) << o.key;
      EXPECT_EQ(o.get(typed), o.get(start)) << o.key;
      EXPECT_EQ(o.get(text), o.get(start)) << o.key;
    }
  }
}

TEST(LdpFlOptions, ChoicesSetTheirFieldsAndTakeTheirWordsOnly) {
  const LdpFlConfig c = With({{"range", std::string("adaptive")},
                              {"schedule", std::string("delay")},
                              {"perturb", std::string("weights")}});
  EXPECT_TRUE(c.adaptive);
  EXPECT_EQ(c.schedule, ShuffleSchedule::kRandomDelay);
  EXPECT_TRUE(With({{"perturb", std::string("updates")}}).perturb_updates);
  EXPECT_EQ(With({{"randomizer", std::string("privunitg")}}).vector, VectorMechanism::kPrivUnitG);
  EXPECT_EQ(With({{"randomizer", std::string("twopoint")}}).vector, std::nullopt);
  EXPECT_EQ(Refusal({{"range", std::string("Fixed")}}),
            "range = Fixed: 'Fixed' is not fixed or adaptive");
  EXPECT_EQ(Refusal({{"range", true}}), "range = true: text is needed, not a flag");
  EXPECT_FALSE(LdpFlConfigWith({}, Given{{"randomizer", std::string("duchi")}}).ok());
  for (const LdpFlOption& o : LdpFlOptions()) {
    for (const std::string& word : o.choices) {
      LdpFlConfig c;
      ASSERT_TRUE(o.set(c, word).ok()) << o.key << " " << word;
      EXPECT_EQ(o.get(c), OptionValue(word)) << o.key;
    }
  }
}

TEST(LdpFlOptions, TheModelIsAFileAndTheInverseFlagKeepsItsField) {
  EXPECT_EQ(With({{"model", std::string("mlp.pt")}}).arch, "./mlp.pt");
  EXPECT_EQ(With({{"model", std::string("nets/mlp")}}).arch, "nets/mlp");
  EXPECT_EQ(With({{"standardize_inputs", false}}).standardize_inputs, false);
  EXPECT_EQ(With({{"center", 0.01}, {"radius", std::string("0.2")}}).fixed_range.radius, 0.2);
  EXPECT_EQ(With({{"learning_rate", 0.1}}).learning_rate, 0.1);
}

TEST(LdpFlOptions, AnOptionTheRandomizerIgnoresIsRefusedUnlessLeftAtItsDefault) {
  EXPECT_EQ(Refusal({{"clip", 0.5}}), "clip applies to the vector randomizers only");
  EXPECT_TRUE(LdpFlConfigWith({}, Given{{"clip", 1.0}}).ok());
  EXPECT_EQ(With({{"clip", 0.5}, {"randomizer", std::string("privunitg")}}).clip, 0.5);
  EXPECT_EQ(Refusal({{"radius", 0.2}, {"randomizer", std::string("privunitg")}}),
            "radius applies to the two-point randomizer only");
  EXPECT_EQ(Refusal({{"center", 0.1}, {"randomizer", std::string("privunitg")}}),
            "center applies to the two-point randomizer only");
  EXPECT_EQ(Refusal({{"vector_delta", 1e-5}, {"randomizer", std::string("privunitg")}}),
            "vector_delta applies to the gaussian randomizers only");
  EXPECT_TRUE(
      LdpFlConfigWith({}, Given{{"vector_delta", 1e-5}, {"randomizer", std::string("gaussian")}})
          .ok());
  // The server's settings apply to the optimisers and averaging that use them.
  EXPECT_EQ(Refusal({{"server_beta1", 0.5}}),
            "server_beta1 applies to momentum, adam and yogi only");
  EXPECT_EQ(
      With({{"server_beta1", 0.5}, {"server_optimizer", std::string("momentum")}}).server.beta1,
      0.5);
  EXPECT_EQ(Refusal({{"server_tau", 0.1}, {"server_optimizer", std::string("momentum")}}),
            "server_tau applies to adam and yogi only");
  EXPECT_EQ(With({{"server_beta2", 0.9}, {"server_optimizer", std::string("yogi")}}).server.beta2,
            0.9);
  EXPECT_EQ(Refusal({{"average_decay", 0.5}, {"average", std::string("tail")}}),
            "average_decay applies to average ema only");
  EXPECT_EQ(Refusal({{"average_tail", 0.2}}), "average_tail applies to average tail only");
  EXPECT_EQ(With({{"average_tail", 0.2}, {"average", std::string("tail")}}).averaging.tail, 0.2);
  EXPECT_EQ(Refusal({{"rounds", 2.5}}), "rounds = 2.5: an integer is needed, not a number");
  EXPECT_EQ(Refusal({{"clientz", std::int64_t{3}}}), "unknown option 'clientz'");
}

TEST(LdpFlOptions, ValidateHoldsTheRulesBetweenOptions) {
  EXPECT_EQ(With({{"radius", 0.0}}).Validate().error(), "radius must be > 0");
  EXPECT_EQ(With({{"range", std::string("adaptive")}, {"perturb", std::string("updates")}})
                .Validate()
                .error(),
            "perturbing updates takes a fixed range, not an adaptive one");
  EXPECT_EQ(With({{"range", std::string("adaptive")}, {"randomizer", std::string("privunitg")}})
                .Validate()
                .error(),
            "a vector randomizer privatises the update: no adaptive ranges");
  EXPECT_TRUE(LdpFlConfig{}.Validate().ok());
}

}  // namespace
}  // namespace fedldp
