#include "tests/server/files/temp_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

namespace brig::files::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/brig-files-XXXXXX";
  const char* made = ::mkdtemp(tmpl);
  EXPECT_NE(made, nullptr);
  path_ = made ? made : "";
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  // Tests make directories read-only; give the owner access back first.
  ::nftw(
      path_.c_str(),
      [](const char* p, const struct stat* st, int type, FTW*) {
        if (type == FTW_D || type == FTW_DNR) ::chmod(p, (st->st_mode & 07777) | 0700);
        return 0;
      },
      16, FTW_PHYS);
  ::nftw(
      path_.c_str(), [](const char* p, const struct stat*, int, FTW*) { return ::remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

void TempDir::write(std::string_view rel, std::string_view bytes, mode_t mode) const {
  const std::string p = at(rel);
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << p;
  }
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
}

std::string TempDir::read(std::string_view rel) const {
  std::ifstream in(at(rel), std::ios::binary);
  EXPECT_TRUE(in.good()) << at(rel);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> TempDir::names(std::string_view rel) const {
  std::vector<std::string> out;
  const std::string p = rel.empty() ? path_ : at(rel);
  DIR* d = ::opendir(p.c_str());
  EXPECT_NE(d, nullptr) << p;
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

files::OpContext context_for(const TempDir& dir, std::size_t max_bytes) {
  files::OpContext ctx;
  ctx.workspace = dir.path();
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  ctx.max_bytes = max_bytes;
  return ctx;
}

bool running_as_root() {
  return ::geteuid() == 0;
}

}  // namespace brig::files::testing
