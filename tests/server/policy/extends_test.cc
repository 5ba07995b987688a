// `extends`: merge rules, shipped and file parents, cycles.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/policy/loader.h"
#include "tests/server/policy/policy_test_util.h"

namespace brig::policy {
namespace {

using ::testing::ElementsAre;
using testing::messages;

// A scratch directory of policy files, removed afterwards.
class Extends : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/brig-policy-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
    ::mkdir((dir + "/sub").c_str(), 0755);
  }
  void TearDown() override {
    for (const std::string& f : files) ::unlink(f.c_str());
    ::rmdir((dir + "/sub").c_str());
    ::rmdir(dir.c_str());
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    files.push_back(path);
    return path;
  }
  LoadResult load(const std::string& path) { return load_policy(path, x); }

  std::string dir;
  std::vector<std::string> files;
  EnvMap env;
  Expansion x{"/home/ada", env};
};

TEST_F(Extends, ScalarsOverrideListsReplaceAddAppendsSetMerges) {
  write("base.toml", R"(description = "base"
[filesystem]
read_only = ["/usr", "/etc"]
read_write = ["/srv"]
hidden = ["~/.ssh"]
tmp_size = "1GiB"
[environment]
pass = ["TERM"]
set = { A = "1", B = "2" }
[limits]
pids = 10
memory = "1GiB"
)");
  const std::string child = write("child.toml", R"(extends = "./base.toml"
[filesystem]
read_only = ["/opt"]
read_write_add = ["/var/cache"]
hidden_add = ["~/.aws"]
[environment]
pass_add = ["LANG"]
set = { B = "two", C = "3" }
[limits]
pids = 20
)");
  auto r = load(child);
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  const Policy& p = r->policy;
  EXPECT_EQ(p.description, "base");
  EXPECT_EQ(p.filesystem.read_only, (std::vector<PathRule>{{"/opt", false}}));
  EXPECT_EQ(p.filesystem.read_write,
            (std::vector<PathRule>{{"/srv", false}, {"/var/cache", false}}));
  EXPECT_EQ(p.filesystem.hidden, (std::vector<std::string>{"/home/ada/.ssh", "/home/ada/.aws"}));
  EXPECT_EQ(p.filesystem.tmp_size, uint64_t{1} << 30);
  EXPECT_EQ(p.environment.pass, (std::vector<std::string>{"TERM", "LANG"}));
  EXPECT_EQ(p.environment.set,
            (std::map<std::string, std::string>{{"A", "1"}, {"B", "two"}, {"C", "3"}}));
  EXPECT_EQ(p.limits.pids, 20u);
  EXPECT_EQ(p.limits.memory_bytes, uint64_t{1} << 30);
  EXPECT_THAT(r->chain, ElementsAre(child, dir + "/base.toml"));
}

TEST_F(Extends, NetworkRulesAppendAndHostsMergeByName) {
  write("base.toml", R"([network]
mode = "proxy"
allow = ["pypi.org", "*.pythonhosted.org"]
deny = ["*.internal.example"]
hosts = { "db.test" = "10.1.2.7", "web.test" = "10.1.2.8" }
)");
  auto r = load(write("child.toml", R"(extends = "./base.toml"
[network]
allow_add = ["github.com:22", "PyPI.org"]
deny = ["10.1.2.9"]
hosts = { "DB.test" = "10.1.2.70", "cache.test" = "fd00::9" }
)"));
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  const NetRules& n = r->policy.network.rules;
  std::vector<std::string> allow, deny;
  for (const NetRule& a : n.allow) allow.push_back(a.text);
  for (const NetRule& d : n.deny) deny.push_back(d.text);
  EXPECT_THAT(allow, ElementsAre("pypi.org", "*.pythonhosted.org", "github.com:22"));
  EXPECT_THAT(deny, ElementsAre("10.1.2.9"));
  EXPECT_EQ(n.hosts, (std::vector<StaticHost>{{"cache.test", *parse_address("fd00::9")},
                                              {"db.test", *parse_address("10.1.2.70")},
                                              {"web.test", *parse_address("10.1.2.8")}}));
}

// A file that sets mode = "none" over a proxy base chose it knowingly: the
// inherited rules go (hosts could not be emptied otherwise); rules it
// writes itself are refused.
TEST_F(Extends, AnotherModeDropsInheritedRulesAndRefusesItsOwn) {
  write("base.toml", R"([network]
mode = "proxy"
allow = ["pypi.org"]
hosts = { "db.test" = "10.1.2.7" }
)");
  auto r = load(write("offline.toml", "extends = \"./base.toml\"\n[network]\nmode = \"none\"\n"));
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  EXPECT_EQ(r->policy.network.mode, NetworkMode::none);
  EXPECT_EQ(r->policy.network.rules, NetRules{});

  const std::string own =
      write("own.toml",
            "extends = \"./base.toml\"\n[network]\nmode = \"dangerously_host\"\n"
            "deny_add = [\"10.0.0.0/8\"]\n");
  EXPECT_THAT(
      messages(load(own)),
      ElementsAre(
          own +
          ":4:12: network.deny takes effect only with mode = \"proxy\" or \"filtered\", and "
          "mode is \"dangerously_host\" (set at " +
          own +
          ":3:8): the jail has the host's whole network, which no rule "
          "limits; write mode = \"proxy\" in [network], or remove "
          "network.deny"));

  // Rules added below a file that chose none are refused, too.
  write("none.toml", "[network]\nmode = \"none\"\n");
  const std::string below =
      write("below.toml", "extends = \"./none.toml\"\n[network]\nallow = [\"pypi.org\"]\n");
  EXPECT_THAT(
      messages(load(below)),
      ElementsAre(below +
                  ":3:9: network.allow takes effect only with mode = \"proxy\" or \"filtered\", "
                  "and mode is \"none\" (set at " +
                  dir +
                  "/none.toml:2:8): nothing outside the jail is reachable, whatever "
                  "the rules say; write mode = \"proxy\" in [network], or remove "
                  "network.allow"));
}

TEST_F(Extends, ReplaceThenAddInOneFile) {
  write("base.toml", "[filesystem]\nread_only = [\"/usr\"]\n");
  auto r = load(write("child.toml",
                      "extends = \"base.toml\"\n[filesystem]\nread_only_add = "
                      "[\"/b\"]\nread_only = [\"/a\"]\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->policy.filesystem.read_only, (std::vector<PathRule>{{"/a", false}, {"/b", false}}));
}

TEST_F(Extends, RelativePathsStartAtTheExtendingFile) {
  write("sub/base.toml", "description = \"sub base\"\n");
  write("sub/mid.toml", "extends = \"./base.toml\"\n");
  auto r = load(write("top.toml", "extends = \"sub/mid.toml\"\n"));
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  EXPECT_EQ(r->policy.description, "sub base");
  EXPECT_THAT(r->chain,
              ElementsAre(dir + "/top.toml", dir + "/sub/mid.toml", dir + "/sub/base.toml"));
}

TEST_F(Extends, ShippedParent) {
  auto r = load(write("mine.toml", "extends = \"strict\"\n[limits]\npids = 7\n"));
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  EXPECT_EQ(r->policy.filesystem.workspace, WorkspaceAccess::read_only);  // from strict
  EXPECT_FALSE(r->policy.filesystem.read_only.empty());                   // from default
  EXPECT_EQ(r->policy.limits.pids, 7u);
  EXPECT_THAT(r->chain,
              ElementsAre(dir + "/mine.toml", "<built-in>/strict.toml", "<built-in>/default.toml"));
}

TEST_F(Extends, CycleIsRefusedWhereItCloses) {
  write("a.toml", "extends = \"b.toml\"\n");
  write("b.toml", "description = \"b\"\n\nextends = \"./a.toml\"\n");
  EXPECT_THAT(messages(load(dir + "/a.toml")),
              ElementsAre(dir + "/b.toml:3:11: extends makes a cycle (" + dir + "/a.toml -> " +
                          dir + "/b.toml -> " + dir + "/a.toml); remove one of these extends"));
}

TEST_F(Extends, SelfCycle) {
  const std::string self = write("self.toml", "extends = \"self.toml\"\n");
  EXPECT_THAT(messages(load(self)),
              ElementsAre(self + ":1:11: extends makes a cycle (" + self + " -> " + dir +
                          "/self.toml); remove one of these extends"));
}

TEST_F(Extends, MissingParentAndBadValue) {
  const std::string a = write("a.toml", "extends = \"gone.toml\"\n");
  EXPECT_THAT(messages(load(a)), ElementsAre(a + ":1:11: read the policy (" + dir +
                                             "/gone.toml): No such file or directory"));
  const std::string b = write("b.toml", "extends = [\"default\"]\n");
  EXPECT_THAT(messages(load(b)),
              ElementsAre(b + ":1:11: extends must be a string: a shipped policy (\"default\", "
                              "\"strict\" or \"dev\") or a file like \"./base.toml\""));
  const std::string c = write("c.toml", "extends = \"defualt\"\n");
  EXPECT_THAT(messages(load(c)),
              ElementsAre(c + ":1:11: find the policy (defualt): no shipped policy is called "
                              "\"defualt\" (did you mean \"default\"?); the shipped ones are "
                              "\"default\", \"strict\" or \"dev\", and a file is named with a '/' "
                              "or a .toml suffix (\"./defualt.toml\")"));
}

TEST_F(Extends, ErrorsFromEveryFileOfTheChain) {
  write("base.toml", "[limits]\npids = -1\n");
  const std::string child =
      write("child.toml", "extends = \"base.toml\"\n[network]\nmod = \"none\"\n");
  EXPECT_THAT(
      messages(load(child)),
      ElementsAre(dir + "/base.toml:2:8: limits.pids = -1 is out of range; write a number "
                        "from 1 to 2147483647 or \"unlimited\"",
                  child + ":3:1: unknown key \"mod\" in [network]; did you mean \"mode\"?"));
}

TEST_F(Extends, ContradictionAcrossFilesPointsAtTheLaterSetting) {
  write("base.toml", "[filesystem]\nhidden = [\"/srv/secret\"]\n");
  const std::string child = write(
      "child.toml", "extends = \"base.toml\"\n[filesystem]\nread_write = [\"/srv/secret/x\"]\n");
  EXPECT_THAT(messages(load(child)),
              ElementsAre(child + ":3:15: \"/srv/secret/x\" in filesystem.read_write lies in the "
                                  "hidden path \"/srv/secret\"; remove it from one of "
                                  "filesystem.read_write and filesystem.hidden"));
}

}  // namespace
}  // namespace brig::policy
