#include "jail/outcome.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>

namespace brig::jail {
namespace {

Outcome exited(int code) {
  Outcome o;
  o.exit_code = code;
  return o;
}

TEST(OutcomeTest, ExitStatusFollowsTheShellConventions) {
  EXPECT_EQ(exited(0).exit_status(), 0);
  EXPECT_EQ(exited(3).exit_status(), 3);
  Outcome sig;
  sig.kind = Outcome::Kind::signaled;
  sig.signal = SIGKILL;
  EXPECT_EQ(sig.exit_status(), 137);
  Outcome timeout;
  timeout.kind = Outcome::Kind::timed_out;
  EXPECT_EQ(timeout.exit_status(), 124);
  EXPECT_EQ(setup_failed_outcome(SetupStep::mount, ENOENT, "bind").exit_status(), 125);
  EXPECT_EQ(setup_failed_outcome(SetupStep::exec, ENOENT, "execve").exit_status(), 127);
  EXPECT_EQ(setup_failed_outcome(SetupStep::exec, ENOTDIR, "execve").exit_status(), 127);
  EXPECT_EQ(setup_failed_outcome(SetupStep::exec, EACCES, "execve").exit_status(), 126);
  EXPECT_EQ(setup_failed_outcome(SetupStep::exec, ENOEXEC, "execve").exit_status(), 126);
}

TEST(OutcomeTest, ToStringSaysWhatHappened) {
  EXPECT_EQ(exited(3).to_string(), "exited 3");
  EXPECT_EQ(
      setup_failed_outcome(SetupStep::mount, ENOENT, "bind /x on /x: No such file or directory")
          .to_string(),
      "setup failed at step mount: bind /x on /x: No such file or directory");
}

TEST(LayerReportTest, FindsLayersAndPrintsOneLineEach) {
  LayerReport r;
  r.layers = {{Layer::namespaces, LayerState::enforced, ""},
              {Layer::cgroups, LayerState::degraded, "no v2"}};
  r.limits_tier = LimitsTier::rlimits;
  ASSERT_NE(r.find(Layer::cgroups), nullptr);
  EXPECT_EQ(r.find(Layer::cgroups)->detail, "no v2");
  EXPECT_EQ(r.find(Layer::seccomp), nullptr);
  EXPECT_EQ(r.to_string(), "namespaces: enforced\ncgroups: degraded (no v2)\nlimits: rlimits\n");
}

}  // namespace
}  // namespace brig::jail
