// Differential test against the independent reference, tests/tools/refsim.py: random valid schedules of
// every kind, random perturbations of them that the validator accepts, and the golden and case CSVs are
// written as CSV, simulated by both, and must give identical makespans and idle vectors (and agree on
// deadlock). Skipped when python3 is missing.
#include "base/fileio.h"
#include "simtest.h"

#include "schedule/csvio.h"
#include "base/errors.h"
#include "schedule/validator.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace dps;
using namespace dps::test;
namespace fs = std::filesystem;

namespace {

struct RefResult {
    bool deadlock = false;
    double makespan = 0.0;
    std::vector<double> idle;
};

std::string exact(double x)
{
    std::ostringstream out;
    out.precision(17);
    out << x;
    return out.str();
}

/// Runs a shell command and returns its standard output; fails the test on a non-zero exit.
std::string capture(const std::string& command)
{
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
        ADD_FAILURE() << "cannot run: " << command;
        return {};
    }
    std::string out;
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
        out.append(buffer, n);
    const int status = pclose(pipe);
    EXPECT_EQ(status, 0) << command << "\n" << out;
    return out;
}

RefResult parseRef(const std::string& text)
{
    RefResult r;
    const nlohmann::json j = nlohmann::json::parse(text);
    r.deadlock = j.at("deadlock").get<bool>();
    if (!r.deadlock) {
        r.makespan = j.at("makespan").get<double>();
        r.idle = j.at("idle_per_rank").get<std::vector<double>>();
    }
    return r;
}

const std::string& refsimPath()
{
    static const std::string path = std::string(DPS_SOURCE_DIR) + "/tests/tools/refsim.py";
    return path;
}

class RefsimDiff : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (std::system("python3 -c '' >/dev/null 2>&1") != 0)
            GTEST_SKIP() << "python3 is missing: the differential test against refsim.py is skipped";
        m_dir = fs::path(::testing::TempDir()) / ("dps_refsim_" + std::to_string(getpid()));
        fs::create_directories(m_dir);
    }

    void TearDown() override
    {
        std::error_code ec;
        if (!m_dir.empty())
            fs::remove_all(m_dir, ec);
    }

    fs::path writeSchedule(const Schedule& s)
    {
        const fs::path file = m_dir / ("case" + std::to_string(m_cases++) + ".csv");
        std::ofstream(file) << writeCsv(s);
        return file;
    }

    /// `python3 refsim.py FILE NUM_STAGES FB`, as the tool's command line runs it.
    RefResult reference(const fs::path& csv, int stages, double fb)
    {
        return parseRef(capture("python3 '" + refsimPath() + "' '" + csv.string() + "' " + std::to_string(stages) + " "
            + exact(fb) + " 2>&1"));
    }

    /// refsim.simulate with a latency (its command line has none), through python3 -c.
    RefResult referenceWithLatency(const fs::path& csv, int stages, double fb, double latency)
    {
        const std::string script = "import sys, json; sys.path.insert(0, sys.argv[1]); import refsim; "
                                   "t = open(sys.argv[2]).read(); "
                                   "c = {'F': 1, 'I': 1, 'W': 1, 'B': 2, 'FB': float(sys.argv[4])}; "
                                   "print(json.dumps(refsim.simulate(refsim.parse(t), int(sys.argv[3]), c, "
                                   "float(sys.argv[5]))))";
        const std::string dir = std::string(DPS_SOURCE_DIR) + "/tests/tools";
        return parseRef(capture("python3 -c \"" + script + "\" '" + dir + "' '" + csv.string() + "' "
            + std::to_string(stages) + " " + exact(fb) + " " + exact(latency) + " 2>&1"));
    }

    /// Simulates `s` here and in refsim.py (unit costs, typed F&B `fb`, `latency`) and compares.
    void compare(const Schedule& s, double fb, const std::string& label, double latency = 0.0)
    {
        SCOPED_TRACE(label + " F&B " + exact(fb) + " latency " + exact(latency));
        const fs::path csv = writeSchedule(s);
        const RefResult ref
            = latency == 0.0 ? reference(csv, s.stages, fb) : referenceWithLatency(csv, s.stages, fb, latency);
        UniformCosts u;
        u.fb = fb;
        u.latencyUs = latency;
        const SimResult ours = simulate(s, uniformCostModel(s.stages, u));
        ASSERT_EQ(ours.deadlocked, ref.deadlock) << ours.deadlockMessage;
        if (ref.deadlock) {
            ++m_deadlocks;
            return;
        }
        EXPECT_DOUBLE_EQ(ours.makespanUs, ref.makespan);
        const std::vector<double> idle = idleVector(ours);
        ASSERT_EQ(idle.size(), ref.idle.size());
        for (std::size_t r = 0; r < idle.size(); ++r)
            EXPECT_DOUBLE_EQ(idle[r], ref.idle[r]) << "rank " << r;
        ++m_compared;
    }

    fs::path m_dir;
    int m_cases = 0;
    int m_compared = 0;
    int m_deadlocks = 0;
};

int uniform(std::mt19937& rng, int lo, int hi)
{
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

/// A random valid size of `kind`, generated (retries sizes a constraint refuses).
Schedule randomSchedule(ScheduleKind kind, std::mt19937& rng)
{
    for (;;) {
        GenerateOptions o { kind, 0, 0, 0 };
        switch (kind) {
        case ScheduleKind::DualPipe:
            o.ranks = 2 * uniform(rng, 1, 4);
            o.microbatches = 2 * o.ranks + 2 * uniform(rng, 0, o.ranks);
            break;
        case ScheduleKind::DualPipeV:
            o.ranks = uniform(rng, 1, 6);
            o.microbatches = uniform(rng, 2 * o.ranks, 4 * o.ranks);
            break;
        case ScheduleKind::Interleaved1F1B:
            o.ranks = uniform(rng, 1, 5);
            o.stagesPerRank = uniform(rng, 1, 3);
            o.microbatches = uniform(rng, 1, 3 * o.ranks);
            break;
        default:
            o.ranks = uniform(rng, 1, 6);
            o.microbatches = uniform(rng, o.ranks, 3 * o.ranks);
            break;
        }
        try {
            return generate(o);
        } catch (const ConstraintError&) {
        }
    }
}

/// Swaps random adjacent slots of one rank; with `keepValid`, keeps only swaps the validator accepts.
Schedule perturb(Schedule s, std::mt19937& rng, int swaps, bool keepValid)
{
    s.kind = ScheduleKind::Custom;
    for (int attempt = 0, done = 0; attempt < 10 * swaps && done < swaps; ++attempt) {
        auto& row = s.order[static_cast<std::size_t>(uniform(rng, 0, static_cast<int>(s.order.size()) - 1))];
        if (row.size() < 2)
            continue;
        const auto i = static_cast<std::size_t>(uniform(rng, 0, static_cast<int>(row.size()) - 2));
        std::swap(row[i], row[i + 1]);
        if (keepValid && !validate(s).valid())
            std::swap(row[i], row[i + 1]);
        else
            ++done;
    }
    return s;
}

double randomFb(std::mt19937& rng)
{
    static constexpr double choices[] = { 2.0, 2.5, 3.0 };
    return choices[uniform(rng, 0, 2)];
}

} // namespace

TEST_F(RefsimDiff, GeneratedSchedulesOfEveryKind)
{
    std::mt19937 rng(20250306);
    for (ScheduleKind kind : generatedKinds())
        for (int i = 0; i < 6; ++i) {
            const Schedule s = randomSchedule(kind, rng);
            compare(s, randomFb(rng),
                std::string(kindName(kind)) + " " + std::to_string(s.ranks) + "x" + std::to_string(s.microbatches));
        }
    EXPECT_EQ(m_compared, 6 * static_cast<int>(generatedKinds().size()));
}

TEST_F(RefsimDiff, ValidPerturbations)
{
    std::mt19937 rng(233);
    int changed = 0;
    for (ScheduleKind kind : generatedKinds())
        for (int i = 0; i < 3; ++i) {
            const Schedule base = randomSchedule(kind, rng);
            const Schedule s = perturb(base, rng, 6, true);
            ASSERT_TRUE(validate(s).valid());
            changed += s.order != base.order;
            compare(s, randomFb(rng), "perturbed " + std::string(kindName(kind)));
        }
    EXPECT_GT(changed, 10); // most schedules really changed
}

TEST_F(RefsimDiff, UnvalidatedPerturbationsAgreeOnDeadlock)
{
    std::mt19937 rng(7);
    for (int i = 0; i < 10; ++i) {
        const ScheduleKind kind = generatedKinds()[static_cast<std::size_t>(i) % generatedKinds().size()];
        const Schedule s = perturb(randomSchedule(kind, rng), rng, 4, false);
        compare(s, randomFb(rng), "any-swap " + std::string(kindName(kind)));
    }
    EXPECT_GT(m_deadlocks, 0); // some swaps break a dependency and both simulators report it
    EXPECT_GT(m_compared, 0);
}

TEST_F(RefsimDiff, GoldenAndCaseCsvs)
{
    const fs::path data(DPS_TEST_DATA);
    for (const auto& entry : fs::directory_iterator(data / "golden")) {
        if (entry.path().extension() != ".csv")
            continue;
        const Schedule s = readCsv(readTextFile(entry.path())).schedule;
        for (double fb : { 3.0, 2.5 })
            compare(s, fb, entry.path().filename().string());
    }
    for (const char* name : { "deadlock_three_ranks.csv", "gpipe_with_blank_cells.csv" })
        compare(readCsv(readTextFile(data / "cases" / name)).schedule, 3.0, name);
    EXPECT_EQ(m_deadlocks, 1);
}

TEST_F(RefsimDiff, WithLatency)
{
    std::mt19937 rng(99);
    for (ScheduleKind kind : generatedKinds()) {
        const Schedule s = randomSchedule(kind, rng);
        compare(s, randomFb(rng), "latency " + std::string(kindName(kind)), 0.25 * uniform(rng, 1, 4));
    }
}
