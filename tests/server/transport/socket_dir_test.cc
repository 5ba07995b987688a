// Issue 15: a socket in a directory others can change is accepted, but with
// a warning naming the directory and who can change it.
#include "server/transport/socket_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/test_support.h"

namespace brig::transport {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The risks found in `dir` and below it: the temporary directory's own
// ancestors are the machine's business, not this test's.
std::vector<std::string> risks_under(const std::string& dir, const std::string& socket) {
  std::vector<std::string> out;
  for (std::string& r : socket_dir_risks(socket, ::geteuid())) {
    if (r.find(dir) != std::string::npos) out.push_back(std::move(r));
  }
  return out;
}

class SocketDir : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::mkdir(sub_.c_str(), 0700), 0); }
  void TearDown() override { ::chmod(dir_.path().c_str(), 0700); }
  server::testing::TempDir dir_;
  std::string sub_ = dir_.file("run");
  std::string socket_ = sub_ + "/brig.sock";
};

TEST_F(SocketDir, OnlyTheOwnerCanWriteNoWarning) {
  EXPECT_THAT(risks_under(dir_.path(), socket_), IsEmpty());
}

TEST_F(SocketDir, WorldWritableWithoutStickyBitIsARisk) {
  ASSERT_EQ(::chmod(sub_.c_str(), 0777), 0);
  EXPECT_THAT(risks_under(dir_.path(), socket_),
              ElementsAre(AllOf(HasSubstr("the directory " + sub_),
                                HasSubstr("everyone may write it (mode 0777, no sticky bit)"),
                                HasSubstr("replace the socket"))));
  ASSERT_EQ(::chmod(sub_.c_str(), 01777), 0);  // as /tmp: only owners remove entries
  EXPECT_THAT(risks_under(dir_.path(), socket_), IsEmpty());
}

TEST_F(SocketDir, GroupWritableIsARisk) {
  ASSERT_EQ(::chmod(sub_.c_str(), 0770), 0);
  EXPECT_THAT(risks_under(dir_.path(), socket_),
              ElementsAre(HasSubstr("may write it (mode 0770, no sticky bit)")));
}

// Whoever may rename the directory above may swap the whole directory.
TEST_F(SocketDir, AnAncestorCounts) {
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  EXPECT_THAT(risks_under(dir_.path(), socket_),
              ElementsAre(HasSubstr("the directory " + dir_.path() + " on the socket's path")));
}

// A symlinked directory is judged by where it leads.
TEST_F(SocketDir, ASymlinkIsFollowedToItsTarget) {
  const std::string open_dir = dir_.file("open");
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(::symlink(open_dir.c_str(), dir_.file("link").c_str()), 0);
  EXPECT_THAT(risks_under(dir_.path(), dir_.file("link") + "/brig.sock"),
              ElementsAre(HasSubstr("the directory " + open_dir)));
}

TEST_F(SocketDir, AnotherUsersDirectoryIsARisk) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the directory away";
  ASSERT_EQ(::chown(sub_.c_str(), 65534, 65534), 0);
  EXPECT_THAT(risks_under(dir_.path(), socket_), ElementsAre(HasSubstr("it belongs to uid 65534")));
}

}  // namespace
}  // namespace brig::transport
