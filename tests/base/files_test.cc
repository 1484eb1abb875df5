#include "fedldp/base/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/temp_dir.h"

namespace fedldp {
namespace {

class FilesTest : public testing::TempDirTest {
 protected:
  std::string Read(const std::string& path) {
    std::ifstream f(path);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
  }
  unsigned Mode(const std::string& path) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return st.st_mode & 0777;
  }
};

TEST_F(FilesTest, AtomicWritesNeverReplaceDevicesOrUnaskedFiles) {
  // Before: `enrol --out /dev/full` replaced the device node with a file.
  const std::string device = "/dev/full";
  if (std::filesystem::is_character_file(device)) {
    EXPECT_NE(WriteFileAtomically(device, "x", 0600, true).error().find("not a regular file"),
              std::string::npos);
    EXPECT_TRUE(std::filesystem::is_character_file(device));
    EXPECT_NE(AppendToFile(device, "x").error().find("not a regular file"), std::string::npos);
    EXPECT_NE(CheckOutputFile(device).error().find("not a regular file"), std::string::npos);
  }
  EXPECT_NE(WriteFileAtomically(dir_.string(), "x").error().find("is a folder"), std::string::npos);
  EXPECT_EQ(WriteFileAtomically(dir_.string(), "x").code(), ErrorCode::kInvalidArgument);
  const std::string tokens = Path("tokens");
  ASSERT_TRUE(WriteFileAtomically(tokens, "first\n", 0600).ok());
  EXPECT_EQ(Mode(tokens), 0600u);  // created so, never 0644 first
  const Status kept = WriteFileAtomically(tokens, "second\n", 0600);
  EXPECT_NE(kept.error().find("not overwritten unless asked"), std::string::npos);
  EXPECT_EQ(kept.code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(Read(tokens), "first\n");
  ASSERT_TRUE(WriteFileAtomically(tokens, "second\n", 0600, /*overwrite=*/true).ok());
  EXPECT_EQ(Read(tokens), "second\n");
  EXPECT_EQ(Mode(tokens), 0600u);
  ASSERT_TRUE(WriteFileAtomically(Path("public"), "p").ok());
  EXPECT_EQ(Mode(Path("public")), 0644u);
  // No temporary file is left behind, whatever happened.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);
}

TEST_F(FilesTest, OutputsAreCheckedBeforeAnyWorkAndAppendsAreWhole) {
  EXPECT_TRUE(CheckOutputFile(Path("runs.jsonl")).ok());
  EXPECT_NE(CheckOutputFile(Path("missing/runs.jsonl")).error().find("does not exist"),
            std::string::npos);
  EXPECT_NE(CheckOutputFile(dir_.string()).error().find("is a folder"), std::string::npos);
  ASSERT_TRUE(AppendToFile(Path("runs.jsonl"), "{\"a\":1}\n").ok());
  ASSERT_TRUE(AppendToFile(Path("runs.jsonl"), "{\"a\":2}\n").ok());
  EXPECT_EQ(Read(Path("runs.jsonl")), "{\"a\":1}\n{\"a\":2}\n");
  EXPECT_TRUE(CheckOutputFile(Path("runs.jsonl")).ok());
  const Status missing = AppendToFile(Path("missing/runs.jsonl"), "x");
  EXPECT_NE(missing.error().find("cannot open"), std::string::npos);
  EXPECT_EQ(missing.code(), ErrorCode::kIo);
}

}  // namespace
}  // namespace fedldp
