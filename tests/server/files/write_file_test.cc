#include "server/files/write_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "server/files/atomic_write.h"
#include "tests/server/files/temp_dir.h"

namespace brig::files {
namespace {

using protocol::Json;
using testing::context_for;
using testing::TempDir;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(WriteFile, CreatesANewFile) {
  TempDir dir;
  auto r = write_file_op(Json{{"path", "new.txt"}, {"content", "hello\n"}}, context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(dir.read("new.txt"), "hello\n");
  EXPECT_EQ(r->header["created"], true);
  EXPECT_EQ(r->header["bytes"], 6);
  EXPECT_EQ(dir.names(), std::vector<std::string>{"new.txt"});
}

TEST(WriteFile, ReplacesAndKeepsTheMode) {
  TempDir dir;
  dir.write("run.sh", "old\n", 0751);
  auto r = write_file_op(Json{{"path", "run.sh"}, {"content", "#!/bin/sh\n"}}, context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(dir.read("run.sh"), "#!/bin/sh\n");
  EXPECT_EQ(mode_of(dir.at("run.sh")), 0751u);
  EXPECT_EQ(r->header["created"], false);
  EXPECT_EQ(r->header["mode"], "0751");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"run.sh"});
}

TEST(WriteFile, MissingParentNeedsCreateParents) {
  TempDir dir;
  auto r = write_file_op(Json{{"path", "a/b/c.txt"}, {"content", "x"}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ENOENT);
  EXPECT_NE(r.error().why.find("create_parents"), std::string::npos) << r.error().why;

  auto made = write_file_op(Json{{"path", "a/b/c.txt"}, {"content", "x"}, {"create_parents", true}},
                            context_for(dir));
  ASSERT_TRUE(made) << made.error().to_string();
  EXPECT_EQ(dir.read("a/b/c.txt"), "x");
}

TEST(WriteFile, RefusesASymlinkAsTheLastComponent) {
  TempDir dir;
  dir.write("target.txt", "keep\n");
  ASSERT_EQ(::symlink("target.txt", dir.at("link").c_str()), 0);
  auto r = write_file_op(Json{{"path", "link"}, {"content", "new\n"}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("symlink to target.txt"), std::string::npos) << r.error().why;
  EXPECT_EQ(dir.read("target.txt"), "keep\n");
  struct stat st {};
  ASSERT_EQ(::lstat(dir.at("link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"link", "target.txt"}));
}

TEST(WriteFile, RefusesADirectory) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.at("d").c_str(), 0755), 0);
  auto r = write_file_op(Json{{"path", "d"}, {"content", "x"}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, EISDIR);
}

// A write that fails half-way (here: RLIMIT_FSIZE, which binds root too)
// leaves the old contents and no temporary file.
TEST(WriteFile, FailedWriteLeavesOldFileAndNoTemporary) {
  TempDir dir;
  dir.write("f.txt", "old\n");
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto r =
      write_file_op(Json{{"path", "f.txt"}, {"content", std::string(100, 'x')}}, context_for(dir));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, EFBIG);
  EXPECT_EQ(dir.read("f.txt"), "old\n");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"f.txt"});
}

// Issue 15: a write that failed after create_parents made directories left
// them behind.
TEST(WriteFile, AFailedWriteRemovesTheDirectoriesItCreated) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.at("a").c_str(), 0755), 0);
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto r = write_file_op(
      Json{{"path", "a/b/c/f.txt"}, {"content", std::string(100, 'x')}, {"create_parents", true}},
      context_for(dir));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, EFBIG);
  // "a" was there before and stays; "a/b" and "a/b/c" were the write's.
  EXPECT_EQ(dir.names(), std::vector<std::string>{"a"});
  EXPECT_EQ(dir.names("a"), std::vector<std::string>{});
}

TEST(WriteFile, ReadOnlyDirectoryLeavesNothingBehind) {
  if (testing::running_as_root()) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.at("ro").c_str(), 0755), 0);
  dir.write("ro/f.txt", "old\n");
  ASSERT_EQ(::chmod(dir.at("ro").c_str(), 0555), 0);
  auto r = write_file_op(Json{{"path", "ro/f.txt"}, {"content", "new\n"}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, EACCES);
  EXPECT_EQ(dir.read("ro/f.txt"), "old\n");
  EXPECT_EQ(dir.names("ro"), std::vector<std::string>{"f.txt"});
}

TEST(WriteFile, RespectsAReadOnlyFileMode) {
  if (testing::running_as_root()) GTEST_SKIP() << "root may write any file";
  TempDir dir;
  dir.write("ro.txt", "keep\n", 0444);
  auto r = write_file_op(Json{{"path", "ro.txt"}, {"content", "new\n"}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, EACCES);
  EXPECT_EQ(dir.read("ro.txt"), "keep\n");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"ro.txt"});
}

TEST(AtomicWrite, TempNamesAreExactlyBrigs) {
  EXPECT_TRUE(is_temp_name(".a.txt.brig-0123456789abcdef"));
  EXPECT_TRUE(is_temp_name(".x.brig-ffffffffffffffff"));
  EXPECT_FALSE(is_temp_name("a.txt.brig-0123456789abcdef"));    // not hidden
  EXPECT_FALSE(is_temp_name(".a.txt.brig-0123456789ABCDEF"));   // upper case
  EXPECT_FALSE(is_temp_name(".a.txt.brig-0123456789abcde"));    // 15 digits
  EXPECT_FALSE(is_temp_name(".a.txt.brig-0123456789abcdef0"));  // 17 digits
  EXPECT_FALSE(is_temp_name(".brig-0123456789abcdef"));         // no name
  EXPECT_FALSE(is_temp_name(".a.txt.brig_0123456789abcdef"));
}

// Issue 15: a write_file killed midway (a cancelled call kills the worker)
// left its temporary file, 35 MB of it, in the workspace. The server names
// each write's temporary file (temp_suffix) and later removes exactly that
// name; a file that merely looks like one (names in the workspace are the
// jail's to choose) is never touched, by a write or by the removal.
TEST(AtomicWrite, OnlyTheNamedLeftoverIsRemovedAndNothingThatLooksLikeOne) {
  TempDir dir;
  TempDir outside;
  outside.write("precious", "keep\n");
  const std::string left = ".big.bin.brig-0123456789abcdef";
  dir.write(left, std::string(1 << 20, 'x'));
  // Decoys with brig's pattern that no write of brig's left.
  ASSERT_EQ(::symlink(outside.at("precious").c_str(), dir.at(".l.brig-0123456789abcdef").c_str()),
            0);
  ASSERT_EQ(::mkdir(dir.at(".d.brig-0123456789abcdef").c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo(dir.at(".f.brig-0123456789abcdef").c_str(), 0600), 0);
  dir.write(".other.brig-1111111111111111", "a user's file with brig's pattern");
  // A write in progress holds its temporary file locked.
  dir.write(".busy.brig-fedcba9876543210", "partial");
  const int busy = ::open(dir.at(".busy.brig-fedcba9876543210").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(busy, 0);
  ASSERT_EQ(::flock(busy, LOCK_EX), 0);

  // A write sweeps nothing.
  auto r = write_file_op(
      Json{{"path", "next.txt"}, {"content", "new\n"}, {"temp_suffix", "00000000000000aa"}},
      context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(dir.names().size(), 7u);

  // The named leftover goes; the same suffix names nothing else.
  using enum TempRemoval;
  EXPECT_EQ(remove_temp(dir.at("big.bin"), "0123456789abcdef"), gone);
  EXPECT_EQ(remove_temp(dir.at("big.bin"), "0123456789abcdef"), gone);   // gone already
  EXPECT_EQ(remove_temp(dir.at("l"), "0123456789abcdef"), refused);      // a symlink
  EXPECT_EQ(remove_temp(dir.at("d"), "0123456789abcdef"), refused);      // a directory
  EXPECT_EQ(remove_temp(dir.at("f"), "0123456789abcdef"), refused);      // a FIFO
  EXPECT_EQ(remove_temp(dir.at("busy"), "fedcba9876543210"), held);      // a write's
  EXPECT_EQ(remove_temp(dir.at("x/../other"), "../../precious"), gone);  // not a suffix
  ::close(busy);
  EXPECT_EQ(dir.names(),
            (std::vector<std::string>{".busy.brig-fedcba9876543210", ".d.brig-0123456789abcdef",
                                      ".f.brig-0123456789abcdef", ".l.brig-0123456789abcdef",
                                      ".other.brig-1111111111111111", "next.txt"}));
  EXPECT_EQ(outside.read("precious"), "keep\n");
}

// The server's suffix is the only name a write uses: one attempt, and a
// malformed suffix is refused.
TEST(AtomicWrite, TheServersSuffixNamesTheTemporaryFile) {
  TempDir dir;
  dir.write(".t.txt.brig-00000000000000bb", "planted");
  WriteOptions options;
  options.temp_suffix = "00000000000000bb";
  auto taken = atomic_write(dir.at("t.txt"), "x", options);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().sys_errno, EEXIST);
  EXPECT_EQ(dir.read(".t.txt.brig-00000000000000bb"), "planted");
  options.temp_suffix = "../../x";
  EXPECT_FALSE(atomic_write(dir.at("t.txt"), "x", options));
  options.temp_suffix = "00000000000000cc";
  ASSERT_TRUE(atomic_write(dir.at("t.txt"), "x", options));
  EXPECT_EQ(dir.read("t.txt"), "x");
}

TEST(AtomicWrite, ExpectedStampMismatchFailsBeforeRename) {
  TempDir dir;
  dir.write("f.txt", "one\n");
  struct stat st {};
  ASSERT_EQ(::stat(dir.at("f.txt").c_str(), &st), 0);
  const FileStamp stamp = FileStamp::of(st);
  dir.write("f.txt", "changed by someone else\n");
  WriteOptions options;
  options.expect = stamp;
  auto r = atomic_write(dir.at("f.txt"), "mine\n", options);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("changed after it was read"), std::string::npos);
  EXPECT_EQ(dir.read("f.txt"), "changed by someone else\n");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"f.txt"});
}

TEST(AtomicWrite, KeepsTheOwnerWhenAllowed) {
  if (!testing::running_as_root()) GTEST_SKIP() << "only root can give a file to another user";
  TempDir dir;
  dir.write("f.txt", "x", 0640);
  ASSERT_EQ(::chown(dir.at("f.txt").c_str(), 65534, 65534), 0);
  ASSERT_TRUE(atomic_write(dir.at("f.txt"), "y"));
  struct stat st {};
  ASSERT_EQ(::stat(dir.at("f.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_gid, 65534u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

}  // namespace
}  // namespace brig::files
