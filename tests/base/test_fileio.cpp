// Reading whole files and the one atomic write: replaced whole or not at all, errors naming the path.
#include "base/errors.h"
#include "base/fileio.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace dps {
namespace {

namespace fs = std::filesystem;

class FileIo : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_dir = fs::temp_directory_path() / ("dps-fileio-" + std::to_string(::getpid()));
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }
    fs::path m_dir;
};

TEST_F(FileIo, WritesThenReadsBackBytesExactly)
{
    const std::string text("line 1\r\nbinary \0 byte\n", 22);
    writeFileAtomic(m_dir / "a.txt", text);
    EXPECT_EQ(readTextFile(m_dir / "a.txt"), text);
    writeFileAtomic(m_dir / "a.txt", "replaced");
    EXPECT_EQ(readTextFile(m_dir / "a.txt"), "replaced");
}

TEST_F(FileIo, LeavesNoTemporaryBehind)
{
    writeFileAtomic(m_dir / "b.json", "{}");
    int files = 0;
    for (const auto& entry : fs::directory_iterator(m_dir)) {
        ++files;
        EXPECT_EQ(entry.path().filename(), "b.json");
    }
    EXPECT_EQ(files, 1);
}

TEST_F(FileIo, RefusesDirectoriesAndMissingFilesNamingThePath)
{
    try {
        readTextFile(m_dir / "missing.json");
        FAIL() << "no IoError";
    } catch (const IoError& e) {
        EXPECT_EQ(std::string(e.what()), (m_dir / "missing.json").string() + ": cannot read: No such file or directory");
    }
    EXPECT_THROW(readTextFile(m_dir), IoError);
    try {
        writeFileAtomic(m_dir, "x");
        FAIL() << "no IoError";
    } catch (const IoError& e) {
        EXPECT_EQ(std::string(e.what()), m_dir.string() + ": cannot write: is a directory");
    }
}

TEST_F(FileIo, FailedWriteKeepsTheOldFile)
{
    writeFileAtomic(m_dir / "keep.txt", "good data");
    // A folder that cannot be written into: the temporary cannot be created, the old file stays.
    const fs::path locked = m_dir / "locked";
    fs::create_directories(locked);
    writeFileAtomic(locked / "keep.txt", "good data");
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    if (::geteuid() == 0)
        GTEST_SKIP() << "runs as root: permissions do not stop root from writing";
    EXPECT_THROW(writeFileAtomic(locked / "keep.txt", "bad"), IoError);
    fs::permissions(locked, fs::perms::owner_all);
    EXPECT_EQ(readTextFile(locked / "keep.txt"), "good data");
}

TEST_F(FileIo, MissingFolderIsAnIoErrorNotACrash)
{
    EXPECT_THROW(writeFileAtomic(m_dir / "no" / "such" / "dir.txt", "x"), IoError);
    EXPECT_FALSE(fs::exists(m_dir / "no"));
}

} // namespace
} // namespace dps
