// The rlimits a JailSpec asks for hold inside a real jail, each with a
// positive control (the same probe without the limit gets past the point the
// limit would stop it), and the jail's init reaps orphans. Runs as root and
// as an unprivileged user: neither rlimits nor a pid namespace needs root.
#include <signal.h>
#include <sys/stat.h>

#include <string>

#include "jail/launcher.h"
#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class LimitsTest : public JailTest {
 protected:
  // base_spec sets no limit: each test adds only the one under test.
  JailSpec spec() const { return base_spec(workspace_.path()); }
  // The size of a file in the workspace, -1 if it is missing.
  long long host_size(const std::string& name) const {
    struct stat st {};
    return ::stat((workspace_.path() + "/" + name).c_str(), &st) == 0 ? st.st_size : -1;
  }
};

TEST_F(LimitsTest, CpuTimeLimitEndsABusyLoop) {
  // Without the limit, the loop runs to the CPU time it asked for.
  const Ran free = run_jail(spec(), probe_request({"spin", "2"}));
  ASSERT_EQ(free.outcome.exit_status(), 0) << free.outcome.to_string() << free.err;
  EXPECT_EQ(free.out, "spun=2\n");

  JailSpec s = spec();
  s.limits.cpu_seconds = 1;
  const Ran limited = run_jail(s, probe_request({"spin", "10"}));
  // Soft and hard limits are equal: the kernel sends SIGKILL at the hard
  // limit, and SIGXCPU where it checks the soft one first.
  EXPECT_EQ(limited.outcome.kind, Outcome::Kind::signaled) << limited.outcome.to_string();
  EXPECT_THAT(limited.outcome.signal, AnyOf(SIGKILL, SIGXCPU)) << limited.outcome.to_string();
  EXPECT_EQ(limited.out, "");
}

TEST_F(LimitsTest, FileSizeLimitStopsWritesAtTheLimit) {
  const Ran free = run_jail(spec(), probe_request({"fill", workspace_.path() + "/free", "4"}));
  ASSERT_EQ(free.outcome.exit_status(), 0) << free.outcome.to_string() << free.err;
  EXPECT_EQ(free.out, "written=4\n");
  EXPECT_EQ(host_size("free"), 4 << 20);

  JailSpec s = spec();
  s.limits.file_size_bytes = 1 << 20;
  // The default disposition of SIGXFSZ ends the writer at its first write
  // past the limit; everything up to the limit was written.
  const Ran killed = run_jail(s, probe_request({"fill", workspace_.path() + "/killed", "4"}));
  EXPECT_EQ(killed.outcome.kind, Outcome::Kind::signaled) << killed.outcome.to_string();
  EXPECT_EQ(killed.outcome.signal, SIGXFSZ) << killed.outcome.to_string();
  EXPECT_EQ(host_size("killed"), 1 << 20);

  // A writer that ignores SIGXFSZ gets EFBIG instead, and still no more.
  const Ran refused = run_jail(s, probe_request({"ignoring", std::to_string(SIGXFSZ), "fill",
                                                 workspace_.path() + "/refused", "4"}));
  ASSERT_EQ(refused.outcome.exit_status(), 0) << refused.outcome.to_string() << refused.err;
  EXPECT_EQ(refused.out, "written=1 err=EFBIG\n");
  EXPECT_EQ(host_size("refused"), 1 << 20);
}

TEST_F(LimitsTest, OpenFilesLimitRefusesMoreDescriptors) {
  const Ran free = run_jail(spec(), probe_request({"open-files", "64"}));
  ASSERT_EQ(free.outcome.exit_status(), 0) << free.outcome.to_string() << free.err;
  EXPECT_EQ(free.out, "opened=64\n");

  JailSpec s = spec();
  s.limits.open_files = 16;
  const Ran limited = run_jail(s, probe_request({"open-files", "64"}));
  ASSERT_EQ(limited.outcome.exit_status(), 0) << limited.outcome.to_string() << limited.err;
  // The command holds only stdio (the rest is closed), so 13 more fit.
  EXPECT_EQ(limited.out, "opened=13 err=EMFILE\n");
}

TEST_F(LimitsTest, InitReapsOrphans) {
  const Ran ran = run_jail(spec(), probe_request({"orphan", marker()}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.out << ran.err;
  // own_zombie_seen: the probe's count does see a zombie (its own child,
  // unreaped for a moment). orphan_ppid: the orphan was adopted by the
  // jail's pid 1, which must then reap it: no zombie is left in the jail.
  EXPECT_THAT(lines(ran.out),
              ElementsAre("own_zombie_seen=1", "orphan_ppid=1", "orphan=reaped", "zombies=0"));
  EXPECT_THAT(ran.out, Not(HasSubstr("err=")));
}

}  // namespace
}  // namespace brig::jail::test
