#include "server/policy/units.h"

#include <gtest/gtest.h>

namespace brig::policy {
namespace {

using std::chrono::milliseconds;

TEST(Units, ParsesBinarySizes) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("1B"), 1u);
  EXPECT_EQ(parse_size("64K"), 64u << 10);
  EXPECT_EQ(parse_size("512MiB"), 512u << 20);
  EXPECT_EQ(parse_size("512mib"), 512u << 20);
  EXPECT_EQ(parse_size("2G"), uint64_t{2} << 30);
  EXPECT_EQ(parse_size("3TiB"), uint64_t{3} << 40);
}

TEST(Units, RefusesSizesWithAHint) {
  EXPECT_EQ(parse_size("2GB").error(),
            "\"2GB\" is ambiguous (decimal or binary?); write \"2GiB\" for binary units");
  EXPECT_EQ(parse_size("1.5GiB").error(),
            "\"1.5GiB\": fractions are not supported; write a whole number with a binary unit, "
            "like \"512MiB\" or \"2GiB\" (1.5GiB = \"1536MiB\")");
  EXPECT_EQ(parse_size("lots").error(),
            "\"lots\" is not a size; write a whole number with a binary unit, like \"512MiB\" or "
            "\"2GiB\"");
  EXPECT_EQ(parse_size("5 MiB").error(),
            "\"5 MiB\" has an unknown unit \" MiB\"; write a whole number with a binary unit, "
            "like \"512MiB\" or \"2GiB\" (units: B, KiB, MiB, GiB, TiB)");
  EXPECT_EQ(parse_size("99999999999999999999").error(),
            "\"99999999999999999999\" is not a size; write a whole number with a binary unit, "
            "like \"512MiB\" or \"2GiB\"");
  EXPECT_EQ(parse_size("17179869184TiB").error(), "\"17179869184TiB\" is too large");
}

TEST(Units, ParsesDurations) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("30s"), milliseconds(30'000));
  EXPECT_EQ(parse_duration("10m"), milliseconds(600'000));
  EXPECT_EQ(parse_duration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(parse_duration("2d"), milliseconds(172'800'000));
}

TEST(Units, RefusesDurationsWithAHint) {
  EXPECT_EQ(parse_duration("30").error(),
            "\"30\" has no unit; write a number with a unit, like \"30s\", \"10m\" or \"1h30m\"");
  EXPECT_EQ(parse_duration("5y").error(),
            "\"5y\" has an unknown unit \"y\"; write a number with a unit, like \"30s\", \"10m\" "
            "or \"1h30m\" (units: ms, s, m, h, d)");
  EXPECT_EQ(parse_duration("").error(),
            "an empty duration; write a number with a unit, like \"30s\", \"10m\" or \"1h30m\"");
  EXPECT_EQ(parse_duration("m").error(),
            "\"m\" is not a duration; write a number with a unit, like \"30s\", \"10m\" or "
            "\"1h30m\"");
}

TEST(Units, FormatsTheShortestExactForm) {
  EXPECT_EQ(format_size(512u << 20), "512MiB");
  EXPECT_EQ(format_size(1536u << 20), "1536MiB");
  EXPECT_EQ(format_size(uint64_t{4} << 30), "4GiB");
  EXPECT_EQ(format_size(1000), "1000B");
  EXPECT_EQ(format_duration(milliseconds(5'400'000)), "1h30m");
  EXPECT_EQ(format_duration(milliseconds(1'500)), "1s500ms");
  EXPECT_EQ(format_duration(milliseconds(0)), "0s");
}

TEST(Units, FormattedValuesParseBack) {
  for (uint64_t bytes : {uint64_t{1}, uint64_t{1024}, uint64_t{3} << 30, uint64_t{12345}}) {
    EXPECT_EQ(parse_size(format_size(bytes)), bytes);
  }
  for (long ms : {1L, 1000L, 90'061'001L, 3'600'000L}) {
    EXPECT_EQ(parse_duration(format_duration(milliseconds(ms))), milliseconds(ms));
  }
}

}  // namespace
}  // namespace brig::policy
