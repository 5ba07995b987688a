// A dev mount's extra devices end to end: a host device node the spec names
// is in the jail's /dev (bound, not made: a user namespace cannot mknod),
// and absent from a jail that does not name it. Runs as root and as an
// unprivileged user; /dev/net/tun is 0600 root, so only root opens it.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>

#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kTun = "/dev/net/tun";  // nested: its net/ is made in the jail

class DevicesTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    struct stat st;
    if (::stat(kTun, &st) != 0 || !S_ISCHR(st.st_mode))
      GTEST_SKIP() << kTun << " is not a character device on this host (no tun module)";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%x:%x", major(st.st_rdev), minor(st.st_rdev));
    rdev_ = buf;
  }
  // base_spec, with /dev writable under Landlock as the policy layer grants it
  // (a device is opened for writing; ABI >= 5 also needs it for ioctl).
  JailSpec spec(std::vector<Device> devices = {}) const {
    JailSpec s = base_spec(workspace_.path());
    std::erase(s.landlock.read_only, "/dev");
    s.landlock.read_write.push_back("/dev");
    for (Mount& m : s.mounts)
      if (m.kind == Mount::Kind::dev) m.devices = std::move(devices);
    return s;
  }
  static ExecRequest sh(const std::string& script) {
    ExecRequest r;
    r.argv = {"/bin/sh", "-c", script};
    r.env = {"PATH=/usr/bin:/bin", "LANG=C"};
    return r;
  }
  std::string rdev_;  // the host node's "major:minor" in hex, as stat -c %t:%T prints it
};

TEST_F(DevicesTest, DefaultJailHasOnlyTheMinimalSet) {
  const Ran ran = run_jail(spec(), probe_request({"ls", "/dev"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_THAT(lines(ran.out), Not(Contains("net")));
  EXPECT_THAT(lines(ran.out), Contains("null"));
  const Ran stat = run_jail(spec(), sh(std::string("stat ") + kTun));
  EXPECT_NE(stat.outcome.exit_status(), 0) << stat.out;
  EXPECT_THAT(stat.err, HasSubstr("No such file or directory"));
}

TEST_F(DevicesTest, NamedDeviceIsTheHostsNodeAndAMissingOptionalOneIsAbsent) {
  const Ran ran = run_jail(spec({{kTun, false}, {"/dev/brig-no-such-device", true}}),
                           sh(std::string("stat -c '%F %t:%T' ") + kTun + " && ls /dev /dev/net"));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  const auto l = lines(ran.out);
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(l[0], "character special file " + rdev_);
  EXPECT_THAT(l, Not(Contains("brig-no-such-device")));
  EXPECT_THAT(l, Contains("tun"));
}

TEST_F(DevicesTest, RootOpensTheDeviceAndItsIoctlsPassLandlock) {
  if (::getuid() != 0) GTEST_SKIP() << kTun << " is 0600 root: only root may open it";
  const Ran open =
      run_jail(spec({{kTun, false}}), sh(std::string("exec 3<>") + kTun + " && echo opened"));
  EXPECT_EQ(open.outcome.exit_status(), 0) << open.outcome.to_string() << open.err;
  EXPECT_THAT(lines(open.out), ElementsAre("opened"));
  // TUNGETFEATURES: an ioctl on a device, which Landlock ABI >= 5 denies
  // unless the rule on /dev grants it.
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3 for the ioctl";
  const Ran ioctl =
      run_jail(spec({{kTun, false}}),
               sh("python3 -c \"import fcntl, os; fd = os.open('/dev/net/tun', os.O_RDWR); "
                  "fcntl.ioctl(fd, 0x800454cf, bytes(4)); print('ioctl ok')\""));
  EXPECT_EQ(ioctl.outcome.exit_status(), 0) << ioctl.outcome.to_string() << ioctl.err;
  EXPECT_THAT(lines(ioctl.out), ElementsAre("ioctl ok"));
}

TEST_F(DevicesTest, MissingRequiredDeviceFailsTheMountStepNamingIt) {
  const Ran ran =
      run_jail(spec({{"/dev/brig-no-such-device", false}}), probe_request({"exit", "0"}));
  EXPECT_EQ(ran.outcome.kind, Outcome::Kind::setup_failed) << ran.outcome.to_string();
  EXPECT_EQ(ran.outcome.exit_status(), 125);
  EXPECT_EQ(ran.outcome.setup.step, SetupStep::mount);
  EXPECT_EQ(ran.outcome.setup.sys_errno, ENOENT);
  EXPECT_THAT(ran.outcome.setup.message, HasSubstr("bind device /dev/brig-no-such-device"));
}

}  // namespace
}  // namespace brig::jail::test
