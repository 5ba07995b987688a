#include "server/search/dir_reader.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/server/files/temp_dir.h"

namespace brig::search {
namespace {

using files::testing::TempDir;

// The walk takes and drops its tickets while the threads read the same
// directories, and gives up waiting on a slow thread after a moment
// (reading the directory itself, the thread's listing then thrown away).
// Whoever lets go of a batch last frees it; a thread must not touch a batch
// after counting its job gone (ASan: a heap-use-after-free was seen when the
// walk freed the batch while the thread closed a discarded listing).
TEST(DirReadAhead, TakesAndDropsRacingTheThreadsNeverTouchAFreedBatch) {
  TempDir dir;
  std::vector<std::string> names;
  for (int i = 0; i < 48; ++i) {
    names.push_back("d" + std::to_string(100 + i));
    ASSERT_EQ(::mkdir(dir.at(names.back()).c_str(), 0755), 0);
    dir.write(names.back() + "/f", "");
  }
  auto parent = std::make_shared<const UniqueFd>(
      ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(*parent);
  std::size_t listed = 0;
  for (int round = 0; round < 400; ++round) {
    auto ahead = DirReadAhead::start(2);
    ASSERT_NE(ahead, nullptr);
    // Two batches, as a walk one level down has them.
    auto outer = ahead->queue(parent, names);
    auto inner = ahead->queue(parent, {names.begin(), names.begin() + 8});
    for (std::size_t i = 0; i < inner.size(); ++i) {
      if ((i + round) % 3 == 0) {
        ahead->drop(inner[i]);
      } else {
        const DirListing l = ahead->take(inner[i]);
        ASSERT_EQ(l.error, 0);
        ASSERT_EQ(l.entries.size(), 1u);
        ++listed;
      }
    }
    for (std::size_t i = 0; i < outer.size(); ++i) {
      if ((i + round) % 4 == 0) {
        ahead->drop(outer[i]);
      } else {
        const DirListing l = ahead->take(outer[i]);
        ASSERT_EQ(l.error, 0);
        ASSERT_EQ(l.entries.size(), 1u);
        ASSERT_EQ(l.entries[0].name, "f");
        ++listed;
      }
    }
  }
  EXPECT_GT(listed, 0u);
}

}  // namespace
}  // namespace brig::search
