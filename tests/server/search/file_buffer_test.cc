#include "server/search/file_buffer.h"

#include <fcntl.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "jail/base/unique_fd.h"
#include "tests/server/files/temp_dir.h"

namespace brig::search {
namespace {

using files::testing::TempDir;

// The kernel copies a file into an address 16 bytes off a 32-byte line at
// about half its speed (tests/bench/README.md): the buffer must start on a
// page, whatever size it grew to.
TEST(FileBuffer, ReadsWholeFilesIntoAPageAlignedBuffer) {
  TempDir dir;
  const std::string small = "needle\n";
  const std::string large(3 << 20, 'x');
  dir.write("small", small);
  dir.write("large", large);
  UniqueFd at(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(at);
  FileBuffer buffer;
  for (const auto& [name, bytes] :
       {std::pair{"small", &small}, std::pair{"large", &large}, std::pair{"small", &small}}) {
    ASSERT_EQ(buffer.read(at.get(), name, 64 << 20), FileBuffer::Status::ok) << name;
    EXPECT_EQ(buffer.data(), *bytes) << name;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data().data()) % 4096, 0u) << name;
  }
  EXPECT_EQ(buffer.read(at.get(), "large", (3 << 20) - 1), FileBuffer::Status::too_large);
  EXPECT_EQ(buffer.read(at.get(), "missing", 1 << 20), FileBuffer::Status::unreadable);
  EXPECT_FALSE(buffer.error().empty());
}

}  // namespace
}  // namespace brig::search
