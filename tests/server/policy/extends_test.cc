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
