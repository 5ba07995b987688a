// WriteJournal: what a server records of its writes in flight, and what the
// next server takes over from a dead one (server/pool/write_journal.h).
#include "server/pool/write_journal.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/server/files/temp_dir.h"

namespace brig::pool {
namespace {

using files::testing::TempDir;

std::vector<std::string> suffixes(const std::vector<WriteJournal::Entry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.suffix + "=" + e.path);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WriteJournal, ALiveServersEntriesStayItsAndADeadOnesPassToTheNext) {
  TempDir tmp;
  const std::string root = tmp.at("state/brig/writes");
  auto first = WriteJournal::open(root, "/ws", 1000);
  ASSERT_TRUE(first) << first.error().to_string();
  ASSERT_TRUE((*first)->add({"0123456789abcdef", "big.txt"}));
  ASSERT_TRUE((*first)->add({"00000000000000aa", "sub/\xef\x9f\xbf.txt"}));
  ASSERT_TRUE((*first)->add({"00000000000000bb", "done.txt"}));
  (*first)->remove("00000000000000bb");
  EXPECT_FALSE((*first)->add({"../escape", "x"}));

  auto second = WriteJournal::open(root, "/ws", 1000);
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_TRUE((*second)->adopt_orphans(10).empty()) << "the first server is alive";

  // Another workspace, or another uid, is another journal.
  auto other = WriteJournal::open(root, "/other", 1000);
  ASSERT_TRUE(other);
  auto other_uid = WriteJournal::open(root, "/ws", 1001);
  ASSERT_TRUE(other_uid);

  // The first server ends with entries left (as a killed one would): its
  // lock is free and its entries stay.
  const std::string first_dir = (*first)->dir();
  first->reset();
  EXPECT_EQ(::access(first_dir.c_str(), F_OK), 0);
  EXPECT_TRUE((*other)->adopt_orphans(10).empty());
  EXPECT_TRUE((*other_uid)->adopt_orphans(10).empty());
  EXPECT_EQ(suffixes((*second)->adopt_orphans(10)),
            (std::vector<std::string>{"00000000000000aa=sub/\xef\x9f\xbf.txt",
                                      "0123456789abcdef=big.txt"}));
  EXPECT_NE(::access(first_dir.c_str(), F_OK), 0) << "the dead server's directory stays";
  // Adopted entries are the second server's now: a third takes them only
  // once the second is gone too.
  auto third = WriteJournal::open(root, "/ws", 1000);
  ASSERT_TRUE(third);
  EXPECT_TRUE((*third)->adopt_orphans(10).empty());
  (*second)->remove("00000000000000aa");
  second->reset();
  EXPECT_EQ(suffixes((*third)->adopt_orphans(10)),
            (std::vector<std::string>{"0123456789abcdef=big.txt"}));
  (*third)->remove("0123456789abcdef");
  const std::string third_dir = (*third)->dir();
  third->reset();
  EXPECT_NE(::access(third_dir.c_str(), F_OK), 0) << "an empty journal is removed at exit";
}

TEST(WriteJournal, ADeadServersEntriesPastTheLimitAreDropped) {
  TempDir tmp;
  const std::string root = tmp.at("writes");
  {
    auto dead = WriteJournal::open(root, "/ws", 1);
    ASSERT_TRUE(dead);
    for (const char* s : {"0000000000000001", "0000000000000002", "0000000000000003"})
      ASSERT_TRUE((*dead)->add({s, "f"}));
  }
  auto next = WriteJournal::open(root, "/ws", 1);
  ASSERT_TRUE(next);
  EXPECT_EQ((*next)->adopt_orphans(2).size(), 2u);
  auto after = WriteJournal::open(root, "/ws", 1);
  ASSERT_TRUE(after);
  EXPECT_TRUE((*after)->adopt_orphans(10).empty()) << "the third entry was dropped";
}

TEST(WriteJournal, ADirectoryOthersCouldWriteOrASymlinkIsRefused) {
  TempDir tmp;
  ASSERT_EQ(::mkdir(tmp.at("open").c_str(), 0777), 0);
  ASSERT_EQ(::chmod(tmp.at("open").c_str(), 0777), 0);
  auto open = WriteJournal::open(tmp.at("open"), "/ws", 1);
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().why.find("writable by its group or others"), std::string::npos)
      << open.error().to_string();

  ASSERT_EQ(::mkdir(tmp.at("real").c_str(), 0700), 0);
  ASSERT_EQ(::symlink(tmp.at("real").c_str(), tmp.at("link").c_str()), 0);
  auto linked = WriteJournal::open(tmp.at("link"), "/ws", 1);
  ASSERT_FALSE(linked);
  EXPECT_NE(linked.error().why.find("symlink"), std::string::npos) << linked.error().to_string();
  EXPECT_FALSE(WriteJournal::open("relative/path", "/ws", 1));
}

TEST(WriteJournal, DeadServersOfOtherWorkspacesLeaveNothingEmptyBehind) {
  TempDir tmp;
  const std::string root = tmp.at("writes");
  { ASSERT_TRUE(WriteJournal::open(root, "/once", 1)); }
  std::string kept_dir;
  {
    auto with_entry = WriteJournal::open(root, "/kept", 1);
    ASSERT_TRUE(with_entry);
    ASSERT_TRUE((*with_entry)->add({"0000000000000001", "f"}));
    kept_dir = (*with_entry)->dir();
  }
  auto now = WriteJournal::open(root, "/now", 1);
  ASSERT_TRUE(now);
  // /once's key left nothing; /kept's entry waits for a server of /kept.
  EXPECT_EQ(tmp.names("writes").size(), 2u);
  EXPECT_EQ(::access(kept_dir.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace brig::pool
