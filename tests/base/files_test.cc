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
    EXPECT_NE(WriteFileAtomically(device, "x", 0600, true).find("not a regular file"),
              std::string::npos);
    EXPECT_TRUE(std::filesystem::is_character_file(device));
    EXPECT_NE(AppendToFile(device, "x").find("not a regular file"), std::string::npos);
    EXPECT_NE(CheckOutputFile(device).find("not a regular file"), std::string::npos);
  }
  EXPECT_NE(WriteFileAtomically(dir_.string(), "x").find("is a folder"), std::string::npos);
  const std::string tokens = Path("tokens");
  ASSERT_EQ(WriteFileAtomically(tokens, "first\n", 0600), "");
  EXPECT_EQ(Mode(tokens), 0600u);  // created so, never 0644 first
  EXPECT_NE(WriteFileAtomically(tokens, "second\n", 0600).find("not overwritten unless asked"),
            std::string::npos);
  EXPECT_EQ(Read(tokens), "first\n");
  ASSERT_EQ(WriteFileAtomically(tokens, "second\n", 0600, /*overwrite=*/true), "");
  EXPECT_EQ(Read(tokens), "second\n");
  EXPECT_EQ(Mode(tokens), 0600u);
  ASSERT_EQ(WriteFileAtomically(Path("public"), "p"), "");
  EXPECT_EQ(Mode(Path("public")), 0644u);
  // No temporary file is left behind, whatever happened.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 2u);
}

TEST_F(FilesTest, OutputsAreCheckedBeforeAnyWorkAndAppendsAreWhole) {
  EXPECT_EQ(CheckOutputFile(Path("runs.jsonl")), "");
  EXPECT_NE(CheckOutputFile(Path("missing/runs.jsonl")).find("does not exist"), std::string::npos);
  EXPECT_NE(CheckOutputFile(dir_.string()).find("is a folder"), std::string::npos);
  ASSERT_EQ(AppendToFile(Path("runs.jsonl"), "{\"a\":1}\n"), "");
  ASSERT_EQ(AppendToFile(Path("runs.jsonl"), "{\"a\":2}\n"), "");
  EXPECT_EQ(Read(Path("runs.jsonl")), "{\"a\":1}\n{\"a\":2}\n");
  EXPECT_EQ(CheckOutputFile(Path("runs.jsonl")), "");
  EXPECT_NE(AppendToFile(Path("missing/runs.jsonl"), "x").find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace fedldp
