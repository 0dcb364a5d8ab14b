// Atomic saves: a failed write leaves the old file as it was and no temporary file behind. Reading names the file
// in its errors, and a file of another of our kinds is named as such.
#include "base/errors.h"
#include "base/fileio.h"
#include "project/filekind.h"
#include "project/project.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

using namespace dps;
namespace fs = std::filesystem;

namespace {

/// A fresh empty folder per test, removed afterwards.
class SaveTest : public testing::Test {
protected:
    void SetUp() override
    {
        const auto* info = testing::UnitTest::GetInstance()->current_test_info();
        m_dir = fs::temp_directory_path() / ("dps_save_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override
    {
        fs::permissions(m_dir, fs::perms::owner_all);
        fs::remove_all(m_dir);
    }
    std::size_t entries() const
    {
        return static_cast<std::size_t>(std::distance(fs::directory_iterator(m_dir), fs::directory_iterator()));
    }
    fs::path m_dir;
};

} // namespace

TEST_F(SaveTest, SavesAndLoadsBack)
{
    const fs::path file = m_dir / "a.dpstudio.json";
    saveProject(defaultProject(), file);
    EXPECT_EQ(dps::readTextFile(file), serializeProject(defaultProject()));
    EXPECT_EQ(serializeProject(loadProject(file)), serializeProject(defaultProject()));
    EXPECT_EQ(entries(), 1u);
}

TEST_F(SaveTest, FailedWriteLeavesTheOldFileIntact)
{
    const fs::path file = m_dir / "a.dpstudio.json";
    const std::string old = "{\"old\": true}\n";
    std::ofstream(file) << old;

    // A file-size limit below the project's size makes the write itself fail (EFBIG), as a full disk would.
    rlimit saved {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    const auto previousHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = 64;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    bool threw = false;
    try {
        saveProject(defaultProject(), file);
    } catch (const IoError& e) {
        threw = true;
        EXPECT_NE(std::string(e.what()).find(file.string() + ": cannot write: "), std::string::npos) << e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previousHandler);

    EXPECT_TRUE(threw);
    EXPECT_EQ(dps::readTextFile(file), old);
    EXPECT_EQ(entries(), 1u) << "a temporary file was left behind";
}

TEST_F(SaveTest, RefusesADirectoryAsTarget)
{
    const fs::path target = m_dir / "folder";
    fs::create_directory(target);
    EXPECT_THROW(saveProject(defaultProject(), target), IoError);
    EXPECT_TRUE(fs::is_directory(target));
    EXPECT_EQ(entries(), 1u);
}

TEST_F(SaveTest, MissingFolderIsAnIoError)
{
    EXPECT_THROW(saveProject(defaultProject(), m_dir / "no" / "such" / "p.json"), IoError);
}

TEST_F(SaveTest, ReadOnlyFolderLeavesTheOldFileIntact)
{
    if (::geteuid() == 0)
        GTEST_SKIP() << "root ignores folder permissions";
    const fs::path file = m_dir / "a.dpstudio.json";
    std::ofstream(file) << "old\n";
    fs::permissions(m_dir, fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THROW(saveProject(defaultProject(), file), IoError);
    fs::permissions(m_dir, fs::perms::owner_all);
    EXPECT_EQ(dps::readTextFile(file), "old\n");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(SaveTest, LoadingAMissingFileIsAnIoErrorNamingIt)
{
    const fs::path file = m_dir / "missing.dpstudio.json";
    try {
        loadProject(file);
        FAIL() << "no error";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find(file.string() + ": cannot read"), std::string::npos) << e.what();
    }
}

TEST_F(SaveTest, LoadingNamesTheFileInFormatErrors)
{
    const fs::path file = m_dir / "bad.dpstudio.json";
    std::ofstream(file) << "{\"format_version\": 1, \"model\": 3}";
    try {
        loadProject(file);
        FAIL() << "no error";
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()), file.string() + ": model: must be an object, got 3");
    }
}

/// The message of the FormatError `read` throws, or "no error".
template <typename Read> std::string formatErrorOf(Read read)
{
    try {
        read();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "no error";
}

/// A cost file with only an overlap factor, as text.
std::string costsText()
{
    CostsFile costs;
    costs.overlapFactor = 0.9;
    return serializeCostsFile(costs);
}

TEST(FileKind, EachOfOurFilesIsRecognisedByItsFields)
{
    const nlohmann::json project = nlohmann::json::parse(serializeProject(defaultProject()));
    const nlohmann::json costs = nlohmann::json::parse(costsText());
    const nlohmann::json measured
        = nlohmann::json::parse(readTextFile(DPS_TEST_DATA "/measured/tiny-dualpipev.measured.json"));
    EXPECT_EQ(fileKindOf(project), FileKind::Project);
    EXPECT_EQ(fileKindOf(costs), FileKind::Costs);
    EXPECT_EQ(fileKindOf(measured), FileKind::Measured);
    EXPECT_EQ(fileKindOf({ { "format_version", 1 }, { "kind", "dpstudio-cpu-profile" } }), FileKind::CpuProfile);
    EXPECT_EQ(fileKindOf({ { "traceEvents", nlohmann::json::array() } }), FileKind::ChromeTrace);
    // Only cost fields make a cost file: one field of another kind, or none besides the version, does not.
    EXPECT_EQ(fileKindOf({ { "format_version", 1 }, { "overlap_factor", 1 }, { "seed", 2 } }), FileKind::Unknown);
    EXPECT_EQ(fileKindOf({ { "format_version", 1 } }), FileKind::Unknown);
    EXPECT_EQ(fileKindOf(nlohmann::json::array()), FileKind::Unknown);
}

TEST(FileKind, AReaderGivenAnotherOfOurFilesSaysWhichItIs)
{
    const std::string costs = costsText();
    EXPECT_EQ(formatErrorOf([&] { parseProject(costs, "c.json"); }),
        "c.json: this is a cost file (what `dpstudio calibrate` writes; give it with --costs), not a project");
    EXPECT_EQ(formatErrorOf([&] { parseCostsFile(serializeProject(defaultProject()), "p.json"); }),
        "p.json: this is a project (*.dpstudio.json), not a cost file");
    const std::string measured = readTextFile(DPS_TEST_DATA "/measured/tiny-dualpipev.measured.json");
    EXPECT_EQ(formatErrorOf([&] { parseProject(measured, "m.json"); }),
        "m.json: this is a measured run (what `dpstudio run` and `import-trace` write; `calibrate` and `analyze` read "
        "it), not a project");
    // A file of no known kind keeps the reader's own error, naming the field.
    EXPECT_EQ(formatErrorOf([&] { parseProject(R"({"format_version": 1, "bogus": 1})", "u.json"); }),
        "u.json: bogus: unknown field");
}
