// FedSelConfig's options described once (fl/fedsel_options.h): every row
// reads back what it sets, names are unique, text is parsed strictly, and
// the cross-option rules refuse with the sentences both front ends show.
#include "fedldp/fl/fedsel_options.h"

#include <gtest/gtest.h>

#include <set>

namespace fedldp {
namespace {

using Given = std::vector<std::pair<std::string, OptionValue>>;

FedSelVariant Variant(const std::string& name) { return ParseFedSelVariant(name).value(); }

TEST(FedSelOptions, NamesAreUniqueAndEveryFieldReadsBackWhatItSets) {
  std::set<std::string_view> keys, flags, records;
  for (const FedSelOption& o : FedSelOptions()) {
    EXPECT_TRUE(keys.insert(o.key).second) << o.key;
    EXPECT_TRUE(flags.insert(o.flag).second) << o.flag;
    if (!o.record.empty()) {
      EXPECT_TRUE(records.insert(o.record).second) << o.record;
    }
    EXPECT_FALSE(o.help.empty()) << o.key;
  }
  for (const std::string name : {"ps-pm", "pm", "pe-hm-c", "privunitg", "gaussian"}) {
    const FedSelConfig defaults = DefaultFedSelConfig(Variant(name));
    for (const FedSelOption& o : FedSelOptions()) {
      // Given whole, as Python's config dict and as text, a config is itself.
      FedSelConfig typed = defaults, text = defaults;
      ASSERT_TRUE(o.set(typed, o.get(defaults)).ok()) << name << " " << o.key;
      ASSERT_TRUE(o.set(text, OptionString(o.get(defaults)) == "None"
                                  ? OptionValue(std::string("auto"))
                                  : OptionValue(OptionString(o.get(defaults))))
                      .ok())
          << name << " " << o.key;
      EXPECT_EQ(o.get(typed), o.get(defaults)) << name << " " << o.key;
      EXPECT_EQ(o.get(text), o.get(defaults)) << name << " " << o.key;
    }
  }
}

TEST(FedSelOptions, TextIsParsedWholeAndStrictly) {
  const FedSelVariant v = Variant("ps-pm");
  EXPECT_EQ(FedSelConfigWith(v, Given{{"lr", std::string("2")}}).error(), "unknown option 'lr'");
  const auto lr = FedSelConfigWith(v, Given{{"learning_rate", std::string("2.5")}});
  ASSERT_TRUE(lr.ok()) << lr.error();
  EXPECT_EQ(lr->learning_rate, 2.5);
  EXPECT_EQ(FedSelConfigWith(v, Given{{"learning_rate", std::string("2x")}}).error(),
            "learning_rate = 2x: '2x' is not a number");
  EXPECT_EQ(FedSelConfigWith(v, Given{{"epochs", 1.5}}).error(),
            "epochs = 1.5: an integer is needed, not a number");
  EXPECT_EQ(FedSelConfigWith(v, Given{{"clients", std::int64_t{-3}}}).error(),
            "clients = -3: a count cannot be negative");
  EXPECT_FALSE(FedSelConfigWith(v, Given{{"loss", std::string("probit")}}).ok());
  EXPECT_EQ(FedSelConfigWith(v, Given{{"mu", std::string("auto")}})->mu, std::nullopt);
  EXPECT_EQ(FedSelConfigWith(v, Given{{"mu", std::monostate{}}})->mu, std::nullopt);
  EXPECT_EQ(FedSelConfigWith(v, Given{{"mu", std::string("1")}}).error(),
            "mu = 1: mu must be in [0, 1), or auto");
  EXPECT_EQ(FedSelConfigWith(v, Given{{"shuffle", std::string("yes")}}).error(),
            "shuffle = yes: 'yes' is not true or false");
}

TEST(FedSelOptions, AnOptionTheVariantIgnoresIsRefusedUnlessLeftAtItsDefault) {
  EXPECT_EQ(FedSelConfigWith(Variant("ps-pm"), Given{{"clip", 0.5}}).error(),
            "clip applies to the vector variants only");
  EXPECT_TRUE(FedSelConfigWith(Variant("privunitg"), Given{{"clip", 0.5}}).ok());
  const double clip = DefaultFedSelConfig(Variant("ps-pm")).clip;
  EXPECT_TRUE(FedSelConfigWith(Variant("ps-pm"), Given{{"clip", clip}}).ok());
  EXPECT_EQ(FedSelConfigWith(Variant("privunitg"), Given{{"delta", 1e-5}}).error(),
            "delta applies to the gaussian variants only");
  EXPECT_TRUE(FedSelConfigWith(Variant("gaussian"), Given{{"delta", 1e-5}}).ok());
  EXPECT_EQ(FedSelConfigWith(Variant("ps-pm"), Given{{"dirichlet_alpha", 0.5}}).error(),
            "dirichlet_alpha needs clients (the rows are split among them)");
  EXPECT_TRUE(FedSelConfigWith(Variant("ps-pm"),
                               Given{{"dirichlet_alpha", 0.5}, {"clients", std::int64_t{10}}})
                  .ok());
  // The server optimiser's rows are LDP-FL's (fl/server_options.h).
  EXPECT_EQ(FedSelConfigWith(Variant("privunitg"), Given{{"server_beta1", 0.5}}).error(),
            "server_beta1 applies to momentum, adam and yogi only");
  const auto momentum =
      FedSelConfigWith(Variant("privunitg"),
                       Given{{"server_optimizer", std::string("momentum")}, {"server_beta1", 0.5}});
  ASSERT_TRUE(momentum.ok()) << momentum.error();
  EXPECT_EQ(momentum->server.kind, ServerOptimizerKind::kMomentum);
  EXPECT_EQ(momentum->server.beta1, 0.5);
}

}  // namespace
}  // namespace fedldp
