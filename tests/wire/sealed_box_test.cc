#include "fedldp/wire/sealed_box.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fedldp {
namespace {

TEST(SealedBox, OnlyTheServerOpensAndAnyAlterationIsDetected) {
  const ServerKeys server = ServerKeys::Generate(), other = ServerKeys::Generate();
  const std::string report("\x08\x07\x1a\x03\x10\x01\x00", 7);
  const std::string sealed = Seal(report, server.public_key);
  EXPECT_EQ(sealed.size(), report.size() + kSealedBoxOverhead);
  EXPECT_EQ(sealed.find(report), std::string::npos);  // not in clear
  EXPECT_EQ(Unseal(sealed, server).value(), report);
  EXPECT_FALSE(Unseal(sealed, other).ok());
  for (std::size_t i = 0; i < sealed.size(); ++i) {  // every byte, one bit flipped
    std::string altered = sealed;
    altered[i] = static_cast<char>(altered[i] ^ 1);
    EXPECT_FALSE(Unseal(altered, server).ok()) << "byte " << i;
  }
  EXPECT_FALSE(Unseal(sealed.substr(0, 40), server).ok());
  // Two seals of the same report differ (fresh ephemeral key each time), so
  // equal reports cannot be linked by their ciphertexts.
  EXPECT_NE(Seal(report, server.public_key), sealed);
  EXPECT_THROW(Seal(report, "short"), std::invalid_argument);
}

TEST(SealedBox, KeysSurviveFilesAndASecretKeyFileIsPrivate) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("fedldp_sealed_box_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string pub = (dir / "server.pub").string(), sec = (dir / "server.key").string();
  const ServerKeys keys = ServerKeys::Generate();
  ASSERT_TRUE(keys.Save(pub, sec).ok());
  struct stat st {};
  ASSERT_EQ(::stat(sec.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto loaded = ServerKeys::Load(pub, sec);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(Unseal(Seal("x", loaded->public_key), keys).value(), "x");
  // A public key that does not belong to the secret one, and a short file.
  ASSERT_TRUE(
      ServerKeys::Generate().Save((dir / "other.pub").string(), (dir / "other.key").string()).ok());
  EXPECT_NE(ServerKeys::Load((dir / "other.pub").string(), sec).error().find("not the public key"),
            std::string::npos);
  std::ofstream((dir / "short").string()) << "abc";
  EXPECT_NE(ServerKeys::Load((dir / "short").string(), sec).error().find("32"), std::string::npos);
  EXPECT_FALSE(ServerKeys::Load((dir / "missing").string(), sec).ok());
  std::filesystem::remove_all(dir);
}

TEST(SealedBox, WipingTheKeysZeroesTheSecretBeforeItGoes) {
  ServerKeys keys = ServerKeys::Generate();
  const std::string sealed = Seal("report", keys.public_key);
  ServerKeys copy = keys;
  const char* bytes = keys.secret_key.data();
  keys.Wipe();
  EXPECT_TRUE(keys.secret_key.empty());
  // clear() keeps the buffer: its bytes are zero now.
  for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(bytes[i], 0) << i;
  EXPECT_FALSE(Unseal(sealed, keys).ok());
  // A copy is its own, and still opens.
  EXPECT_EQ(Unseal(sealed, copy).value(), "report");
}

}  // namespace
}  // namespace fedldp
