// PyTorch CSV interchange (both dialects, blank cells, spaces, CRLF, placement inference, malformed cells)
// and the schedule's JSON form.
#include "base/errors.h"
#include "base/fileio.h"
#include "schedule/csvio.h"
#include "schedule/schedule_json.h"
#include "schedule/validator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace dps;

namespace {

std::filesystem::path dataDir()
{
    return std::filesystem::path(DPS_TEST_DATA);
}

std::vector<std::filesystem::path> goldenCsvs()
{
    std::vector<std::filesystem::path> out;
    for (const auto& entry : std::filesystem::directory_iterator(dataDir() / "golden"))
        if (entry.path().extension() == ".csv")
            out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

/// The same schedule: sizes, placement (rank of every stage and microbatch) and order.
void expectSameSchedule(const Schedule& a, const Schedule& b)
{
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.ranks, b.ranks);
    EXPECT_EQ(a.stages, b.stages);
    EXPECT_EQ(a.microbatches, b.microbatches);
    EXPECT_EQ(a.stagesPerRank, b.stagesPerRank);
    EXPECT_EQ(a.order, b.order);
    EXPECT_EQ(a.placement.isPerStage(), b.placement.isPerStage());
    for (int s = 0; s < a.stages; ++s)
        for (int m = 0; m < a.microbatches; ++m)
            EXPECT_EQ(a.placement.rankOf(s, m), b.placement.rankOf(s, m)) << "stage " << s << " mb " << m;
}

ParseError parseErrorOf(const std::string& text, CsvDialect dialect = CsvDialect::Auto)
{
    try {
        readCsv(text, dialect);
    } catch (const ParseError& e) {
        return e;
    }
    ADD_FAILURE() << "no ParseError for: " << text;
    return ParseError("none");
}

} // namespace

// ---- round trips ---------------------------------------------------------------------------------------------

TEST(CsvRoundTrip, EveryGoldenCsvIsByteIdentical)
{
    const auto files = goldenCsvs();
    ASSERT_GE(files.size(), 5u);
    for (const auto& path : files) {
        SCOPED_TRACE(path.filename().string());
        const std::string text = dps::readTextFile(path);
        const CsvImport imported = readCsv(text);
        EXPECT_EQ(imported.dialect, Dialect::Current);
        EXPECT_TRUE(imported.warnings.empty());
        EXPECT_EQ(writeCsv(imported.schedule), text);
    }
}

TEST(CsvRoundTrip, SpacesBlankCellsCrlfAndTrailingLinesParseTheSame)
{
    const std::string plain = "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n";
    const Schedule expected = readCsv(plain).schedule;
    for (const auto& variant : {
             std::string("0F0,0F1,0B0,0B1\r\n1F0,1F1,1B0,1B1\r\n"),
             std::string(" 0F0 , 0F1,0B0 ,\t0B1\n1F0,1F1,1B0,1B1"),
             std::string("0F0,,0F1,0B0,0B1,\n,1F0,1F1,,1B0,1B1\n\n  \n\r\n"),
             std::string("\xEF\xBB\xBF\"0F0\",0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n"),
         }) {
        SCOPED_TRACE(variant);
        const Schedule s = readCsv(variant).schedule;
        expectSameSchedule(s, expected);
        EXPECT_EQ(writeCsv(s), plain);
    }
}

TEST(CsvRoundTrip, OverlappedPairsWithSpacesInside)
{
    const Schedule s = readCsv("0F0, ( 0F1 ; 0B0 )OVERLAP_F_B ,0B1\n1F0,1F1,1B0,1B1\n").schedule;
    ASSERT_EQ(s.order[0].size(), 3u);
    EXPECT_TRUE(s.order[0][1].overlapped);
    EXPECT_EQ(writeCsv(s), "0F0,(0F1;0B0)OVERLAP_F_B,0B1\n1F0,1F1,1B0,1B1\n");
}

TEST(CsvWrite, EmptyRankIsAnEmptyLineAndNoCellIsEmpty)
{
    Schedule s;
    s.order = { { Action::single(0, OpKind::F, 0) }, {}, { Action::single(1, OpKind::B, 0) } };
    EXPECT_EQ(writeCsv(s), "0F0\n\n1B0\n");
    EXPECT_EQ(writeCsv(Schedule {}), "");
}

// ---- dialects ------------------------------------------------------------------------------------------------

TEST(CsvDialects, Legacy2024IsDetectedFromBFollowedByW)
{
    const std::string legacy = "0F0,0F1,0B0,0W0,0B1,0W1\n1F0,1B0,1W0,1F1,1B1,1W1\n";
    const CsvImport imported = readCsv(legacy);
    EXPECT_EQ(imported.dialect, Dialect::Legacy2024);
    ASSERT_EQ(imported.warnings.size(), 1u);
    EXPECT_NE(imported.warnings[0].find("2024"), std::string::npos);
    EXPECT_EQ(writeCsv(imported.schedule), "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n");
    EXPECT_TRUE(validate(imported.schedule).valid()) << toText(imported.schedule);
}

TEST(CsvDialects, Legacy2024IsDetectedFromAnyBW)
{
    const CsvImport imported = readCsv("0F0,0F1,0BW0,0B1,0W1\n1F0,1F1,1BW0,1BW1\n");
    EXPECT_EQ(imported.dialect, Dialect::Legacy2024);
    EXPECT_EQ(writeCsv(imported.schedule), "0F0,0F1,0B0,0I1,0W1\n1F0,1F1,1B0,1B1\n");
    EXPECT_TRUE(validate(imported.schedule).valid());
}

TEST(CsvDialects, CurrentWhenAnIExistsOrABHasNoW)
{
    EXPECT_EQ(readCsv("0F0,0I0,0W0,0F1,0B1\n").dialect, Dialect::Current);
    EXPECT_EQ(readCsv("0F0,0B0,0F1,0B1,0W1\n").dialect, Dialect::Current);
    EXPECT_EQ(readCsv("0F0,0B0\n").dialect, Dialect::Current);
    EXPECT_EQ(readCsv("").dialect, Dialect::Current);
}

TEST(CsvDialects, ExplicitChoiceWins)
{
    const std::string text = "0F0,0B0,0W0\n";
    const CsvImport current = readCsv(text, CsvDialect::Current);
    EXPECT_EQ(current.dialect, Dialect::Current);
    EXPECT_TRUE(current.warnings.empty());
    EXPECT_EQ(current.schedule.order[0][1].op.kind, OpKind::B);
    const CsvImport legacy = readCsv("0F0,0B0\n", CsvDialect::Legacy2024);
    EXPECT_EQ(legacy.dialect, Dialect::Legacy2024);
    EXPECT_TRUE(legacy.warnings.empty());
    EXPECT_EQ(legacy.schedule.order[0][1].op.kind, OpKind::I);
}

TEST(CsvDialects, CurrentLettersAreRefusedInThe2024Dialect)
{
    const ParseError e = parseErrorOf("0F0,0I0,0W0\n", CsvDialect::Legacy2024);
    EXPECT_EQ(e.row(), 1);
    EXPECT_EQ(e.column(), 2);
    EXPECT_NE(std::string(e.what()).find("2024"), std::string::npos) << e.what();
}

// ---- malformed cells -------------------------------------------------------------------------------------------

TEST(CsvErrors, MalformedCellNamesRowAndColumn)
{
    const ParseError e = parseErrorOf("0F0,0B0\n1F0,,,,1X0\n");
    EXPECT_EQ(e.row(), 2);
    EXPECT_EQ(e.column(), 5);
    EXPECT_EQ(std::string(e.what()).rfind("row 2, column 5: '1X0' is not an action: ", 0), 0u) << e.what();
}

TEST(CsvErrors, EveryKindOfBadCell)
{
    for (const std::string cell : { "F0", "0F", "0Q1", "0F1x", "(0B0;0F1)OVERLAP_F_B", "(0F0;0W0)OVERLAP_F_B",
             "(0F0;0B0)", "(0F0;0B0;0B1)OVERLAP_F_B", "99999999999F0" }) {
        SCOPED_TRACE(cell);
        const ParseError e = parseErrorOf("0F0\n0F1, " + cell + "\n");
        EXPECT_EQ(e.row(), 2);
        EXPECT_EQ(e.column(), 2);
        EXPECT_EQ(std::string(e.what()).rfind("row 2, column 2: '", 0), 0u) << e.what();
    }
}

TEST(CsvErrors, AbsurdNumbersAreRefusedAtTheirCell)
{
    const ParseError e = parseErrorOf("0F0,0B0\n1F0,1B0, 1F99999999 ,1B99999999\n");
    EXPECT_EQ(e.row(), 2);
    EXPECT_EQ(e.column(), 3);
    EXPECT_NE(std::string(e.what()).find("microbatch 99999999 is far beyond the 6 ops"), std::string::npos) << e.what();
    EXPECT_NO_THROW(readCsv("0F0,0B0,0F900,0B900\n")); // sparse but small: left to the validator
}

// ---- placement and sizes inferred from the rows ----------------------------------------------------------------

TEST(CsvPlacement, PerStageWhenEveryStageSitsOnOneRow)
{
    const Schedule s = readCsv(dps::readTextFile(dataDir() / "cases" / "gpipe_with_blank_cells.csv")).schedule;
    EXPECT_EQ(s.kind, ScheduleKind::Custom);
    EXPECT_EQ(s.ranks, 2);
    EXPECT_EQ(s.stages, 2);
    EXPECT_EQ(s.microbatches, 4);
    EXPECT_EQ(s.stagesPerRank, 1);
    ASSERT_TRUE(s.placement.isPerStage());
    EXPECT_EQ(s.placement.rankOfStage(), (std::vector<int> { 0, 1 }));
}

TEST(CsvPlacement, VShapeHoldsTwoStagesPerRank)
{
    const Schedule s = readCsv(dps::readTextFile(dataDir() / "golden" / "dualpipev_pp4_mb10.csv")).schedule;
    EXPECT_EQ(s.ranks, 4);
    EXPECT_EQ(s.stages, 8);
    EXPECT_EQ(s.microbatches, 10);
    EXPECT_EQ(s.stagesPerRank, 2);
    ASSERT_TRUE(s.placement.isPerStage());
    EXPECT_EQ(s.placement.rankOfStage(), (std::vector<int> { 0, 1, 2, 3, 3, 2, 1, 0 }));
    EXPECT_FALSE(csvNeedsExtension(s));
}

TEST(CsvPlacement, DualPipeReplicasGiveAPerStageMicrobatchTable)
{
    const Schedule s = readCsv(dps::readTextFile(dataDir() / "golden" / "dualpipe_pp8_mb20.csv")).schedule;
    EXPECT_EQ(s.ranks, 8);
    EXPECT_EQ(s.stages, 8);
    EXPECT_EQ(s.microbatches, 20);
    EXPECT_EQ(s.stagesPerRank, 2);
    EXPECT_FALSE(s.placement.isPerStage());
    const Placement mirrored = Placement::mirrored(8, 20);
    for (int stage = 0; stage < 8; ++stage)
        for (int m = 0; m < 20; ++m)
            EXPECT_EQ(s.placement.rankOf(stage, m), mirrored.rankOf(stage, m));
    EXPECT_TRUE(csvNeedsExtension(s));
}

TEST(CsvPlacement, ForwardRowDecidesWhenAStrayOpSitsElsewhere)
{
    const Schedule s = readCsv("0F0,0F1,0B1\n1F0,1F1,1B1,1B0,0B0\n").schedule;
    ASSERT_TRUE(s.placement.isPerStage());
    EXPECT_EQ(s.placement.rankOfStage(), (std::vector<int> { 0, 1 }));
}

TEST(CsvPlacement, EmptyTextAndInteriorEmptyRows)
{
    const Schedule empty = readCsv("").schedule;
    EXPECT_EQ(empty.ranks, 0);
    EXPECT_EQ(empty.stages, 0);
    EXPECT_TRUE(empty.order.empty());
    const Schedule gap = readCsv("0F0,0B0\n\n1F0,1B0\n").schedule;
    EXPECT_EQ(gap.ranks, 3);
    EXPECT_TRUE(gap.order[1].empty());
    EXPECT_EQ(gap.placement.rankOfStage(), (std::vector<int> { 0, 2 }));
}

// Found by fuzzing: " ," and "\n\"\"" read as empty ranks, written as empty lines, read back as no rank.
// Trailing rows without an action are dropped like blank lines, so writing and reading agree.
TEST(CsvPlacement, TrailingRowsWithoutAnActionAreNoRanks)
{
    EXPECT_EQ(readCsv(" ,").schedule.ranks, 0);
    EXPECT_EQ(readCsv("\n\"\"\n").schedule.ranks, 0);
    EXPECT_EQ(readCsv("0F0,0B0\n\"\", \n").schedule.ranks, 1);
    const Schedule s = readCsv("0F0,0B0\n , \n,,\n").schedule;
    EXPECT_EQ(s.ranks, 1);
    EXPECT_EQ(readCsv(writeCsv(s)).schedule.order, s.order);
    const Schedule gap = readCsv("0F0,0B0\n,\n1F0,1B0\n").schedule;
    EXPECT_EQ(gap.ranks, 3);
    EXPECT_EQ(readCsv(writeCsv(gap)).schedule.order, gap.order);
}

// ---- the JSON form ---------------------------------------------------------------------------------------------

// readScheduleCsv: the checked reading the CLI and the designer share. A file with no action is refused (readCsv
// alone gives a schedule of 0 ranks), every message names the source.
TEST(ReadScheduleCsv, RefusesAFileWithNoActionAndNamesTheSource)
{
    const auto why = [](std::string_view text) {
        try {
            readScheduleCsv("s.csv", text);
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    const std::string tail = ": a schedule CSV has one row of actions per rank, e.g. 0F0,0B0";
    EXPECT_EQ(why(""), "s.csv: empty" + tail);
    EXPECT_EQ(why(" , \r\n\n,,\n"), "s.csv: empty" + tail);
    EXPECT_EQ(why("\"\"\n"), "s.csv: no actions" + tail);
    EXPECT_EQ(why(std::string_view("0F0\0", 4)).rfind("s.csv: not a text file (a NUL byte at offset 3)", 0), 0u);
    EXPECT_EQ(why("0F0,0X0\n").rfind("s.csv: row 1, column 2: ", 0), 0u) << why("0F0,0X0\n");
    const CsvImport imported = readScheduleCsv("s.csv", "0F0,0B0\n");
    EXPECT_EQ(imported.schedule.ranks, 1);
    EXPECT_EQ(imported.schedule.opCount(), 2u);
}

TEST(ScheduleJson, RoundTripOfEveryPlacementMode)
{
    std::vector<Schedule> schedules;
    for (const auto& path : goldenCsvs())
        schedules.push_back(readCsv(dps::readTextFile(path)).schedule); // table (DualPipe) and per stage (DualPipeV)
    Schedule mirrored = schedules.front();
    mirrored.kind = ScheduleKind::DualPipe;
    mirrored.placement = Placement::mirrored(mirrored.ranks, mirrored.microbatches);
    schedules.push_back(mirrored);
    for (const Schedule& s : schedules) {
        SCOPED_TRACE(toText(s));
        const nlohmann::json j = toJson(s);
        const Schedule back = scheduleFromJson(nlohmann::json::parse(j.dump()));
        expectSameSchedule(back, s);
        EXPECT_EQ(back.placement.isMirrored(), s.placement.isMirrored());
        EXPECT_EQ(toJson(back), j);
    }
}

TEST(ScheduleJson, ShapeOfTheDocument)
{
    const Schedule s = readCsv("0F0,(0F1;0B0)OVERLAP_F_B,0B1\n1F0,1F1,1B0,1B1\n").schedule;
    const nlohmann::json j = toJson(s);
    EXPECT_EQ(j["kind"], "custom");
    EXPECT_EQ(j["ranks"], 2);
    EXPECT_EQ(j["microbatches"], 2);
    EXPECT_EQ(j["stages"], 2);
    EXPECT_EQ(j["stages_per_rank"], 1);
    EXPECT_EQ(j["placement"]["mode"], "per_stage");
    EXPECT_EQ(j["placement"]["rank_of_stage"], nlohmann::json::parse("[0,1]"));
    EXPECT_EQ(j["order"][0][1], "(0F1;0B0)OVERLAP_F_B");
    EXPECT_EQ(orderToJson(s.order), j["order"]);
    EXPECT_EQ(orderFromJson(j["order"], "order"), s.order);
}

TEST(ScheduleJson, ErrorsNameTheField)
{
    const nlohmann::json good = toJson(readCsv("0F0,0B0\n1F0,1B0\n").schedule);
    auto expectError = [&](nlohmann::json j, const std::string& part) {
        try {
            scheduleFromJson(j);
            ADD_FAILURE() << "no FormatError for " << j.dump();
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    nlohmann::json j = good;
    j.erase("ranks");
    expectError(j, "field 'ranks' is missing");
    j = good;
    j["microbatches"] = "two";
    expectError(j, "field 'microbatches': expected an integer");
    j = good;
    j["kind"] = "zigzag";
    expectError(j, "field 'kind'");
    j = good;
    j["placement"]["mode"] = "spiral";
    expectError(j, "field 'placement.mode'");
    j = good;
    j["placement"]["rank_of_stage"] = nlohmann::json::array({ 0 });
    expectError(j, "field 'placement.rank_of_stage'");
    j = good;
    j["order"][1][1] = "1X0";
    expectError(j, "field 'order', rank 1, position 1: '1X0' is not an action");
    j = good;
    j["order"][0][0] = 7;
    expectError(j, "field 'order', rank 0, position 0: expected an action string");
    expectError(nlohmann::json::array(), "expected a JSON object");
}
