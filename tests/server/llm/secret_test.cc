// Real keys: from brig's environment or an owner-only file, refused with
// the route and the variable or file named (never a byte of the key), and
// held in pages excluded from core dumps.
#include "server/llm/secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace brig::llm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

policy::LlmRoute env_route(std::string var) {
  policy::LlmRoute r;
  r.prefix = "anthropic";
  r.key_env = std::move(var);
  return r;
}

class KeyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/brig-llm-key-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir).c_str()); }
  policy::LlmRoute file_route(const std::string& text, mode_t mode) {
    const std::string path = dir + "/key";
    ::unlink(path.c_str());
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    policy::LlmRoute r;
    r.prefix = "local";
    r.key_file = path;
    return r;
  }
  std::string dir;
};

TEST(Secret, FromTheEnvironment) {
  auto key = load_key(env_route("MY_KEY"), {{"MY_KEY", "  sk-ant-123\n"}});
  ASSERT_TRUE(key);
  EXPECT_EQ(key->reveal(), "sk-ant-123");
  auto missing = load_key(env_route("MY_KEY"), {});
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().to_string(), HasSubstr("llm route \"anthropic\""));
  EXPECT_THAT(missing.error().to_string(), HasSubstr("MY_KEY is not set"));
  EXPECT_FALSE(load_key(env_route("MY_KEY"), {{"MY_KEY", " \n"}}));
  auto split = load_key(env_route("MY_KEY"), {{"MY_KEY", "sk-secret\r\nX-Evil: 1"}});
  ASSERT_FALSE(split);
  EXPECT_THAT(split.error().to_string(), HasSubstr("control character"));
  EXPECT_THAT(split.error().to_string(), Not(HasSubstr("sk-secret")));
  EXPECT_EQ(key_status(env_route("MY_KEY"), {{"MY_KEY", "x"}}), "present (MY_KEY)");
  EXPECT_THAT(key_status(env_route("MY_KEY"), {}), HasSubstr("MISSING"));
}

TEST_F(KeyFile, OwnerOnly) {
  auto ok = load_key(file_route("sk-file-key\n", 0600), {});
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(ok->reveal(), "sk-file-key");
  auto readable = load_key(file_route("sk-file-key\n", 0640), {});
  ASSERT_FALSE(readable);
  EXPECT_THAT(readable.error().to_string(), HasSubstr("lets others read it; chmod 600"));
  EXPECT_THAT(readable.error().to_string(), Not(HasSubstr("sk-file-key")));
  const std::string link = dir + "/link";
  ASSERT_EQ(::symlink((dir + "/key").c_str(), link.c_str()), 0);
  auto r = file_route("sk-file-key", 0600);
  r.key_file = link;
  EXPECT_FALSE(load_key(r, {}));  // not followed
  r.key_file = dir + "/absent";
  EXPECT_THAT(key_status(r, {}), HasSubstr("MISSING"));
}

// The key's page carries the "dd" (do not dump) VmFlag in smaps.
TEST(Secret, ExcludedFromCoreDumps) {
  auto key = Secret::hold("sk-dump-test");
  ASSERT_TRUE(key);
  const auto address = reinterpret_cast<std::uintptr_t>(key->reveal().data());
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false;
  bool found = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> from >> dash >> to && dash == '-' && line.find(':') > 8) {
      in_mapping = address >= from && address < to;
      continue;
    }
    if (in_mapping && line.starts_with("VmFlags:")) {
      EXPECT_THAT(line, HasSubstr(" dd"));
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace brig::llm
