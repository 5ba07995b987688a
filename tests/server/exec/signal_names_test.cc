#include "server/exec/signal_names.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace brig::exec {
namespace {

TEST(SignalNames, ParsesNamesAndNumbers) {
  EXPECT_EQ(parse_signal("TERM"), SIGTERM);
  EXPECT_EQ(parse_signal("SIGTERM"), SIGTERM);
  EXPECT_EQ(parse_signal("sigint"), SIGINT);
  EXPECT_EQ(parse_signal("kill"), SIGKILL);
  EXPECT_EQ(parse_signal("9"), SIGKILL);
  EXPECT_EQ(parse_signal("WINCH"), SIGWINCH);
}

TEST(SignalNames, RefusesWhatIsNotASignal) {
  EXPECT_EQ(parse_signal(""), std::nullopt);
  EXPECT_EQ(parse_signal("SIG"), std::nullopt);
  EXPECT_EQ(parse_signal("0"), std::nullopt);
  EXPECT_EQ(parse_signal("-9"), std::nullopt);
  EXPECT_EQ(parse_signal("999"), std::nullopt);
  EXPECT_EQ(parse_signal("TERMINATE"), std::nullopt);
  EXPECT_EQ(parse_signal("9x"), std::nullopt);
}

TEST(SignalNames, NamesSignals) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
}

}  // namespace
}  // namespace brig::exec
