// The one formatting rule: its thresholds and decimals, as every front end prints them.
#include "base/format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dps {
namespace {

TEST(FormatNumber, DropsTrailingZerosAndNegativeZero)
{
    EXPECT_EQ(formatNumber(66.0), "66");
    EXPECT_EQ(formatNumber(2.5), "2.5");
    EXPECT_EQ(formatNumber(0.0909, 3), "0.091");
    EXPECT_EQ(formatNumber(-0.0001, 3), "0");
    EXPECT_EQ(formatNumber(1.996, 2), "2");
    EXPECT_EQ(formatNumber(NAN), "n/a");
}

TEST(FormatTime, SwitchesUnitAtOneMillisecondAndOneSecond)
{
    EXPECT_EQ(formatTime(0.0), "0 µs");
    EXPECT_EQ(formatTime(66.0), "66 µs");
    EXPECT_EQ(formatTime(850.5), "850.5 µs");
    EXPECT_EQ(formatTime(999.9994), "999.999 µs");
    EXPECT_EQ(formatTime(1000.0), "1 ms");
    EXPECT_EQ(formatTime(12345.0), "12.35 ms");
    EXPECT_EQ(formatTime(999999.0), "1000 ms");
    EXPECT_EQ(formatTime(1e6), "1 s");
    EXPECT_EQ(formatTime(2365000.0), "2.365 s");
    EXPECT_EQ(formatTime(-1500.0), "-1.5 ms");
    EXPECT_EQ(formatTime(INFINITY), "n/a");
}

TEST(FormatBytes, BinaryUnitsWithTwoDecimals)
{
    EXPECT_EQ(formatBytes(0), "0 B");
    EXPECT_EQ(formatBytes(512), "512 B");
    EXPECT_EQ(formatBytes(1023), "1023 B");
    EXPECT_EQ(formatBytes(1024), "1 KiB");
    EXPECT_EQ(formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(formatBytes(45.5 * 1024 * 1024), "45.5 MiB");
    EXPECT_EQ(formatBytes(80.0 * 1024 * 1024 * 1024), "80 GiB");
    EXPECT_EQ(formatBytes(3.0 * 1024 * 1024 * 1024 * 1024), "3 TiB");
}

TEST(FormatPercent, PlainAndSigned)
{
    EXPECT_EQ(formatPercent(0.0909), "9.09 %");
    EXPECT_EQ(formatPercent(0.0), "0 %");
    EXPECT_EQ(formatSignedPercent(0.125), "+12.5 %");
    EXPECT_EQ(formatSignedPercent(-0.03), "-3 %");
    EXPECT_EQ(formatSignedPercent(0.00001), "0 %");
    EXPECT_EQ(formatSignedPercent(7.63), "+763 %");
}

TEST(FormatCount, DecimalPrefixes)
{
    EXPECT_EQ(formatCount(512), "512");
    EXPECT_EQ(formatCount(33600), "33.6 k");
    EXPECT_EQ(formatCount(1.05e6), "1.05 M");
    EXPECT_EQ(formatCount(671.03e9), "671.03 G");
}

TEST(FormatElapsed, SecondsThenClock)
{
    EXPECT_EQ(formatElapsed(800), "0.8 s");
    EXPECT_EQ(formatElapsed(9999), "9.9 s");
    EXPECT_EQ(formatElapsed(42000), "42 s");
    EXPECT_EQ(formatElapsed(723000), "12:03");
    EXPECT_EQ(formatElapsed(3723000), "1:02:03");
    EXPECT_EQ(formatElapsed(-5), "0 s");
}

TEST(FormatTable, AlignsByDisplayWidth)
{
    const std::string text = formatTable({ { "rank", "busy" }, { "0", "66 µs" }, { "10", "1.5 ms" } });
    EXPECT_EQ(text, "rank    busy\n0      66 µs\n10    1.5 ms\n");
    EXPECT_EQ(displayWidth("µs"), 2u);
    EXPECT_EQ(padded("µs", 4, true), "  µs");
    EXPECT_EQ(formatTable({ { "a", "b" }, { "long", "" } }, 2), "a     b\nlong\n");
}

} // namespace
} // namespace dps

TEST(Format, CountsWithTheirNoun)
{
    EXPECT_EQ(dps::formatCountOf(1, "step"), "1 step");
    EXPECT_EQ(dps::formatCountOf(0, "step"), "0 steps");
    EXPECT_EQ(dps::formatCountOf(3, "measured step"), "3 measured steps");
    EXPECT_EQ(dps::formatCountOf(2, "process", "processes"), "2 processes");
    EXPECT_EQ(dps::formatCountOf(1, "process", "processes"), "1 process");
}

TEST(Format, SignedTimes)
{
    EXPECT_EQ(dps::formatSignedTime(66), "+66 µs");
    EXPECT_EQ(dps::formatSignedTime(-1500), "-1.5 ms");
    EXPECT_EQ(dps::formatSignedTime(0), "+0 µs");
    EXPECT_EQ(dps::formatSignedTime(-2.5e6), "-2.5 s");
}

TEST(Format, SignificantDigits)
{
    EXPECT_EQ(dps::formatSignificant(0.031234), "0.0312");
    EXPECT_EQ(dps::formatSignificant(1.5e-7), "1.5e-07");
    EXPECT_EQ(dps::formatSignificant(1e-4, 1), "0.0001");
    EXPECT_EQ(dps::formatSignificant(1e-5, 1), "1e-05");
    EXPECT_EQ(dps::formatSignificant(2.0), "2");
}
