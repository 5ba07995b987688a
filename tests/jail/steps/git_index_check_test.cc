// The git index check (jail/steps/git_index_check.h) on indexes the real git
// writes: clean ones pass; paths, flags and extensions the host's git would
// act on are refused; cut and corrupted files are refused without a crash
// (the asan preset checks every read). Unsafe paths are made by writing a
// harmless placeholder of the same length with git and patching its bytes,
// so the structure stays git's own; the trailer is left stale, since check()
// does not verify it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "jail/steps/git_index_check.h"
#include "tests/jail/host_shell.h"

namespace brig::jail::git_index {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

constexpr const char* kGit =
    "git -c user.name=brig -c user.email=brig@example.invalid -c init.defaultBranch=main";

// A copy of exactly `n` bytes on the heap, so that ASan sees any read past it.
Verdict check_bytes(const Bytes& b, size_t n) {
  Bytes copy(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
  return check(copy.data(), copy.size());
}
Verdict check_bytes(const Bytes& b) {
  return check_bytes(b, b.size());
}

uint32_t be32(const Bytes& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         b[at + 3];
}
void put_be32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<unsigned char>(v >> (24 - 8 * i));
}
void put_be16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<unsigned char>(v >> 8);
  b[at + 1] = static_cast<unsigned char>(v);
}
uint16_t be16(const Bytes& b, size_t at) {
  return static_cast<uint16_t>((b[at] << 8) | b[at + 1]);
}

// Where `what` starts in `b`; it must be there exactly once.
size_t find_once(const Bytes& b, const std::string& what) {
  auto it = std::search(b.begin(), b.end(), what.begin(), what.end());
  EXPECT_NE(it, b.end()) << what;
  if (it == b.end()) return 0;
  EXPECT_EQ(std::search(it + 1, b.end(), what.begin(), what.end()), b.end()) << what;
  return static_cast<size_t>(it - b.begin());
}

// Adds an extension before the trailer (a stale trailer of `hash` bytes).
Bytes with_extension(const Bytes& b, const std::string& name, const Bytes& data, size_t hash = 20) {
  Bytes out(b.begin(), b.end() - static_cast<std::ptrdiff_t>(hash));
  out.insert(out.end(), name.begin(), name.end());
  out.resize(out.size() + 4);
  put_be32(out, out.size() - 4, static_cast<uint32_t>(data.size()));
  out.insert(out.end(), data.begin(), data.end());
  out.resize(out.size() + hash);
  return out;
}

class GitIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/brig-git-index-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  // A new empty directory under the test's root.
  std::string fresh_dir() {
    const std::string dir = root_ + "/r" + std::to_string(next_++);
    fs::create_directories(dir);
    return dir;
  }

  // Runs `script` with sh in `dir`; its stdout without the final newline.
  std::string sh(const std::string& dir, const std::string& script) {
    std::string out = test::host_sh(dir, script);
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  static Bytes index_of(const std::string& dir) {
    const std::string bytes = test::read_file(dir + "/.git/index");
    return Bytes(bytes.begin(), bytes.end());
  }

  // A repository with files, a nested path, a symlink and a gitlink, added
  // and committed (so the index has a TREE extension), at index `version`.
  std::string clean_repo(int version, const std::string& init_args = "") {
    const std::string dir = fresh_dir();
    sh(dir, std::string(kGit) + " init -q " + init_args + " . && echo a > a && mkdir -p d/e && " +
                "echo b > d/e/f && echo c > d/g && chmod +x d/g && ln -s a link && git add . && " +
                "git update-index --add --cacheinfo 160000,$(git hash-object --stdin </dev/null)," +
                "sub && " + kGit + " commit -qm one && " +
                (version == 3 ? "echo n > n && git add -N n && " : "") +
                "git update-index --index-version " + std::to_string(version));
    return dir;
  }

  // An index whose first entry has the path `path` (of `mode`), followed by
  // "zzz/after"; written by git with a same-length placeholder, then patched.
  Bytes with_path(const std::string& path, int version, const char* mode = "100644") {
    const std::string dir = fresh_dir();
    const std::string placeholder(path.size(), 'q');
    sh(dir, std::string(kGit) + " init -q . && oid=$(echo x | git hash-object -w --stdin) && " +
                "git update-index --add --cacheinfo " + mode + ",$oid," + placeholder +
                " --cacheinfo 100644,$oid,zzz/after && git update-index --index-version " +
                std::to_string(version));
    Bytes b = index_of(dir);
    // The first entry's name: after the header, stat data, object id and
    // flags, and in v4 after its strip count (0).
    const size_t at = 12 + 40 + 20 + 2 + (version == 4 ? 1 : 0);
    EXPECT_EQ(std::string(b.begin() + at, b.begin() + at + path.size()), placeholder);
    std::copy(path.begin(), path.end(), b.begin() + at);
    return b;
  }

  // Rewrites the index with both offset tables, as git with index.threads does.
  void add_offset_tables(const std::string& dir) {
    sh(dir,
       "git -c index.threads=2 -c index.recordEndOfIndexEntries=true "
       "-c index.recordOffsetTable=true update-index --force-write-index");
  }

  std::string root_;
  int next_ = 0;
};

TEST_F(GitIndexTest, CleanIndexesOfEveryVersionPass) {
  for (int version : {2, 3, 4}) {
    const Bytes b = index_of(clean_repo(version));
    ASSERT_GT(b.size(), 12u);
    EXPECT_EQ(be32(b, 4), static_cast<uint32_t>(version));
    EXPECT_EQ(be32(b, 8), version == 3 ? 6u : 5u);  // a, d/e/f, d/g, link, (n,) sub
    find_once(b, "TREE");
    EXPECT_EQ(check_bytes(b), Verdict::ok) << "version " << version;
  }
}

TEST_F(GitIndexTest, IntentToAddPasses) {
  const std::string dir = fresh_dir();
  sh(dir,
     std::string(kGit) + " init -q . && echo a > a && echo b > b && git add a && git add -N b");
  const Bytes b = index_of(dir);
  EXPECT_EQ(be32(b, 4), 3u);  // the extended flags need version 3
  EXPECT_EQ(check_bytes(b), Verdict::ok);
}

TEST_F(GitIndexTest, Sha256RepositoriesPass) {
  for (int version : {2, 4}) {
    const std::string dir = clean_repo(version, "--object-format=sha256");
    EXPECT_EQ(sh(dir, "git rev-parse --show-object-format"), "sha256");
    EXPECT_EQ(check_bytes(index_of(dir)), Verdict::ok) << "version " << version;
  }
}

TEST_F(GitIndexTest, OffsetTablesAgreeingWithTheEntriesPass) {
  for (int version : {2, 4}) {
    const std::string dir = clean_repo(version);
    add_offset_tables(dir);
    const Bytes b = index_of(dir);
    find_once(b, "IEOT");
    find_once(b, "EOIE");
    EXPECT_EQ(check_bytes(b), Verdict::ok) << "version " << version;
  }
}

TEST_F(GitIndexTest, OffsetTablesDisagreeingWithTheEntriesAreRefused) {
  const std::string dir = clean_repo(4);
  add_offset_tables(dir);
  const Bytes b = index_of(dir);
  const size_t ieot = find_once(b, "IEOT");
  const size_t eoie = find_once(b, "EOIE");
  ASSERT_GE(be32(b, ieot + 4), 4u + 2 * 8);  // version, then at least two blocks
  const size_t second = ieot + 8 + 4 + 8;    // the second block's (offset, count)

  Bytes moved = b;  // the second block starts one byte late
  put_be32(moved, second, be32(b, second) + 1);
  EXPECT_EQ(check_bytes(moved), Verdict::extension);

  Bytes miscounted = b;  // the blocks cover one entry less
  put_be32(miscounted, second + 4, be32(b, second + 4) - 1);
  EXPECT_EQ(check_bytes(miscounted), Verdict::extension);

  Bytes eoie_elsewhere = b;  // git would look for extensions in the entries
  put_be32(eoie_elsewhere, eoie + 8, 12);
  EXPECT_EQ(check_bytes(eoie_elsewhere), Verdict::extension);

  // The second block's first entry keeps part of the previous name: read in
  // order it is one path, read by a thread starting the block, another.
  const size_t entry = be32(b, second);
  const size_t flags = entry + 40 + 20;
  ASSERT_EQ(be16(b, flags) & 0x4000, 0);
  const uint16_t len = be16(b, flags) & 0xfff;
  ASSERT_LT(b[flags + 2], 0x80);  // a one-byte strip count: all of the previous name
  const uint8_t strip = b[flags + 2];
  ASSERT_GE(strip, 1);
  Bytes keeps = b;
  keeps[flags + 2] = static_cast<unsigned char>(strip - 1);  // keep its first byte
  put_be16(keeps, flags, static_cast<uint16_t>((be16(b, flags) & ~0xfff) | (len + 1)));
  // The entry after it strips one more, to keep what it kept before.
  const size_t after_strip = flags + 2 + 1 + len + 1 + 40 + 20 + 2;
  ASSERT_LT(keeps[after_strip], 0x7f);
  ++keeps[after_strip];
  EXPECT_EQ(check_bytes(keeps), Verdict::extension);
}

TEST_F(GitIndexTest, UnsafePathsAreRefusedInEveryVersion) {
  const char* const unsafe[] = {
      "..",
      ".",
      "../x",
      "a/../b",
      "a/..",
      "./x",
      "a/./b",
      "/x",
      "a//b",
      "a/",
      ".git",
      ".git/config",
      "a/.git/hooks/x",
      ".GIT/x",
      ".Git",
      ".gIT/HEAD",
      ".git./x",
      ".git /x",
      ".git. . ./x",
      ".git...",
      ".git:stream/x",
      "git~1/config",
      "GIT~1",
      "a/Git~1. ",
      "a\\.git\\config",     // git with core.protectNTFS checks after backslashes
      ".g\xe2\x80\x8cit/x",  // U+200C inside .git (HFS+)
      "\xe2\x80\x8e.git/x",  // U+200E before it
      ".git\xef\xbb\xbf",    // U+FEFF after it
      ".\xe2\x81\xafgit",    // U+206F
      ".gi\xe2\x80\xaat",    // U+202A
      "a\x01",
      "a\tb",
      "x\x1f/y",
  };
  for (int version : {2, 3, 4}) {
    for (const char* path : unsafe)
      EXPECT_EQ(check_bytes(with_path(path, version)), Verdict::unsafe_path)
          << "v" << version << " " << path;
  }
}

TEST_F(GitIndexTest, NearMissPathsPass) {
  const char* const fine[] = {
      ".gitignore",
      ".github/workflows/ci.yml",
      "a.git",
      ".gitx/y",
      "git~2",
      "git",
      "...",
      "x..",
      "a\\b",
      ".g",
      "a/.gitmodules",
      "a/\xe2\x80\x8c",  // an ignorable code point alone
      ".gi\xe2\x82\xact",
      ".\xc0\xa7it",  // other UTF-8, an overlong spelling
  };
  for (int version : {2, 4}) {
    for (const char* path : fine)
      EXPECT_EQ(check_bytes(with_path(path, version)), Verdict::ok)
          << "v" << version << " " << path;
  }
}

TEST_F(GitIndexTest, SymlinkedGitmodulesIsRefused) {
  const char* const unsafe[] = {
      ".gitmodules", ".GITMODULES", "a/.gitmodules", ".gitmodules ", ".gitmodules..",
      "gitmod~1",    "GITMOD~4",    "gi7eba~1",      "gi7eb~12",     ".gitmod\xe2\x80\x8dules",
  };
  for (int version : {2, 4}) {
    for (const char* path : unsafe)
      EXPECT_EQ(check_bytes(with_path(path, version, "120000")), Verdict::unsafe_path)
          << "v" << version << " " << path;
    // As a regular file it is what every repository with submodules has.
    EXPECT_EQ(check_bytes(with_path(".gitmodules", version)), Verdict::ok);
    EXPECT_EQ(check_bytes(with_path("gitmod~5", version, "120000")), Verdict::ok);
    EXPECT_EQ(check_bytes(with_path(".gitmodulesx", version, "120000")), Verdict::ok);
  }
}

TEST_F(GitIndexTest, PathsUpToPathMaxPass) {
  // Components of 200 bytes; PATH_MAX (4096) bytes in all is the limit.
  auto long_path = [](size_t n) {
    std::string p;
    while (p.size() < n) p += (p.empty() ? "" : "/") + std::string(200, 'p');
    p.resize(n);
    if (p.back() == '/') p.back() = 'p';
    return p;
  };
  for (int version : {2, 4}) {
    for (size_t n : {4000u, 4094u, 4095u, 4096u}) {
      const std::string dir = fresh_dir();
      sh(dir, std::string(kGit) + " init -q . && git update-index --add --cacheinfo " +
                  "100644,$(echo x | git hash-object -w --stdin)," + long_path(n) +
                  " && git update-index --index-version " + std::to_string(version));
      EXPECT_EQ(check_bytes(index_of(dir)), Verdict::ok) << "v" << version << " " << n;
    }
    const std::string dir = fresh_dir();
    sh(dir, std::string(kGit) + " init -q . && git update-index --add --cacheinfo " +
                "100644,$(echo x | git hash-object -w --stdin)," + long_path(4097) +
                " && git update-index --index-version " + std::to_string(version));
    EXPECT_EQ(check_bytes(index_of(dir)), Verdict::unsafe_path) << "v" << version;
  }
}

TEST_F(GitIndexTest, HidingFlagsAreRefused) {
  for (int version : {2, 3, 4}) {
    const std::string v = std::to_string(version);
    std::string dir = clean_repo(version);
    sh(dir, "git update-index --assume-unchanged d/g");
    EXPECT_EQ(check_bytes(index_of(dir)), Verdict::hidden_flag) << "assume-unchanged v" << v;

    dir = clean_repo(version);
    sh(dir, "git update-index --skip-worktree d/e/f");
    const Bytes b = index_of(dir);
    EXPECT_GE(be32(b, 4), 3u);
    EXPECT_EQ(check_bytes(b), Verdict::hidden_flag) << "skip-worktree v" << v;

    // Undone, the index passes again.
    sh(dir, "git update-index --no-skip-worktree d/e/f");
    EXPECT_EQ(check_bytes(index_of(dir)), Verdict::ok) << "v" << v;
  }
}

TEST_F(GitIndexTest, SplitIndexIsRefused) {
  const std::string dir = clean_repo(2);
  sh(dir, "git update-index --split-index && ls .git/sharedindex.* >/dev/null");
  const Bytes b = index_of(dir);
  find_once(b, "link");
  EXPECT_EQ(check_bytes(b), Verdict::extension);
}

TEST_F(GitIndexTest, UntrackedCacheIsRefused) {
  const std::string dir = clean_repo(2);
  sh(dir, "echo u > untracked && git -c core.untrackedCache=true status >/dev/null");
  const Bytes b = index_of(dir);
  find_once(b, "UNTR");
  EXPECT_EQ(check_bytes(b), Verdict::extension);
}

TEST_F(GitIndexTest, OnlyKnownExtensionsPass) {
  const Bytes b = index_of(clean_repo(2));
  EXPECT_EQ(check_bytes(with_extension(b, "REUC", {})), Verdict::ok);
  for (const char* name : {"sdir", "link", "FSMN", "UNTR", "ZZZZ", "tree"})
    EXPECT_EQ(check_bytes(with_extension(b, name, {1, 2, 3})), Verdict::extension) << name;
  // An extension whose size runs past the trailer.
  Bytes overlong = with_extension(b, "REUC", {0, 0, 0, 0});
  put_be32(overlong, overlong.size() - 20 - 4 - 4, 5);
  EXPECT_EQ(check_bytes(overlong), Verdict::truncated);
  // Bytes after the entries too few for an extension header.
  Bytes trailing(b.begin(), b.end() - 20);
  trailing.insert(trailing.end(), {'R', 'E', 'U'});
  trailing.resize(trailing.size() + 20);
  EXPECT_NE(check_bytes(trailing), Verdict::ok);
}

TEST_F(GitIndexTest, MalformedEntriesAreRefused) {
  const std::string dir = fresh_dir();
  sh(dir, std::string(kGit) +
              " init -q . && oid=$(echo x | git hash-object -w --stdin) && git update-index "
              "--add --cacheinfo 100644,$oid,a1 --cacheinfo 100644,$oid,a2");
  const Bytes b = index_of(dir);
  ASSERT_EQ(check_bytes(b), Verdict::ok);
  const size_t mode = 12 + 24, flags = 12 + 40 + 20, name = flags + 2;
  ASSERT_EQ(b[name], 'a');
  ASSERT_EQ(b[name + 1], '1');

  auto patched = [&](auto&& f) {
    Bytes c = b;
    f(c);
    return check_bytes(c);
  };
  EXPECT_EQ(patched([](Bytes& c) { c[0] = 'X'; }), Verdict::bad_header);
  EXPECT_EQ(patched([](Bytes& c) { put_be32(c, 4, 1); }), Verdict::bad_header);
  EXPECT_EQ(patched([](Bytes& c) { put_be32(c, 4, 5); }), Verdict::bad_header);
  EXPECT_NE(patched([](Bytes& c) { put_be32(c, 8, 3); }), Verdict::ok);  // one entry too many
  EXPECT_NE(patched([](Bytes& c) { put_be32(c, 8, 1); }), Verdict::ok);  // one too few
  for (uint32_t m : {0100600u, 0100777u, 040000u, 0u, 0140000u, 0120644u})
    EXPECT_EQ(patched([&](Bytes& c) { put_be32(c, mode, m); }), Verdict::bad_entry) << m;
  // The name: out of order, a NUL inside its length, a length that
  // disagrees with the NUL, padding that is not NUL.
  EXPECT_EQ(patched([&](Bytes& c) { c[name + 1] = '3'; }), Verdict::bad_entry);
  EXPECT_EQ(patched([&](Bytes& c) { c[name + 1] = '2'; }), Verdict::bad_entry);  // a duplicate
  EXPECT_EQ(patched([&](Bytes& c) { c[name + 1] = 0; }), Verdict::bad_entry);
  EXPECT_EQ(patched([&](Bytes& c) { put_be16(c, flags, 1); }), Verdict::bad_entry);
  EXPECT_EQ(patched([&](Bytes& c) { put_be16(c, flags, 3); }), Verdict::bad_entry);
  EXPECT_EQ(patched([&](Bytes& c) { c[name + 3] = 1; }), Verdict::bad_entry);
  // The extended bit needs version 3; then only known extended flags.
  EXPECT_EQ(patched([&](Bytes& c) { put_be16(c, flags, 0x4002); }), Verdict::bad_entry);
  // Stages: a conflict's stages in order pass; out of order they do not.
  EXPECT_EQ(patched([&](Bytes& c) {
              c[name + 1] = '2';
              put_be16(c, flags, 0x1002);
              put_be16(c, flags + 72, 0x2002);
            }),
            Verdict::ok);
  EXPECT_EQ(patched([&](Bytes& c) {
              c[name + 1] = '2';
              put_be16(c, flags, 0x2002);
              put_be16(c, flags + 72, 0x1002);
            }),
            Verdict::bad_entry);

  const std::string dir3 = fresh_dir();
  sh(dir3, std::string(kGit) + " init -q . && echo a > a && git add -N a");
  const Bytes v3 = index_of(dir3);
  ASSERT_EQ(check_bytes(v3), Verdict::ok);
  ASSERT_EQ(be16(v3, flags) & 0x4000, 0x4000);
  Bytes unknown = v3;
  unknown[flags + 2] |= 0x80;  // the reserved extended bit
  EXPECT_EQ(check_bytes(unknown), Verdict::bad_entry);
  unknown = v3;
  unknown[flags + 3] |= 0x01;  // an unused one
  EXPECT_EQ(check_bytes(unknown), Verdict::bad_entry);
}

TEST_F(GitIndexTest, V4StripCountsMustFitThePreviousName) {
  const std::string dir = fresh_dir();
  sh(dir, std::string(kGit) +
              " init -q . && oid=$(echo x | git hash-object -w --stdin) && git update-index "
              "--add --index-version 4 --cacheinfo 100644,$oid,ab --cacheinfo 100644,$oid,ac");
  const Bytes b = index_of(dir);
  ASSERT_EQ(check_bytes(b), Verdict::ok);
  // Second entry: strip 1, suffix "c".
  const size_t second = 12 + 40 + 20 + 2 + 1 + 3;
  const size_t strip = second + 40 + 20 + 2;
  ASSERT_EQ(b[strip], 1);
  ASSERT_EQ(b[strip + 1], 'c');
  Bytes c = b;
  c[strip] = 3;  // more than "ab"
  EXPECT_EQ(check_bytes(c), Verdict::bad_entry);
  c = b;
  c[strip] = 0x81;  // a longer varint (129 + 1 << 7 ...): far more than "ab"
  EXPECT_NE(check_bytes(c), Verdict::ok);
  c = b;
  c[strip] = 0;  // keeps "ab": "abc" disagrees with the length 2 in the flags
  EXPECT_EQ(check_bytes(c), Verdict::bad_entry);
  // An unending varint.
  c = b;
  for (size_t i = strip; i < c.size(); ++i) c[i] = 0xff;
  EXPECT_NE(check_bytes(c), Verdict::ok);
}

// Every cut of a small index, at every byte, is refused, never read past.
TEST_F(GitIndexTest, EveryTruncationIsRefused) {
  for (int version : {2, 3, 4}) {
    for (const char* init : {"", "--object-format=sha256"}) {
      const std::string dir = fresh_dir();
      sh(dir, std::string(kGit) + " init -q " + init +
                  " . && echo a > a && mkdir d && echo b > d/b && ln -s a l && git add . && " +
                  (version == 3 ? "echo n > n && git add -N n && " : "") +
                  "git update-index --index-version " + std::to_string(version));
      const Bytes b = index_of(dir);
      ASSERT_EQ(check_bytes(b), Verdict::ok);
      for (size_t n = 0; n < b.size(); ++n)
        EXPECT_NE(check_bytes(b, n), Verdict::ok) << "v" << version << " " << init << " " << n;
    }
  }
}

// With extensions, a cut exactly one trailer after an extension leaves a
// well-formed index of fewer extensions (its trailer is not verified); no
// other cut passes.
TEST_F(GitIndexTest, TruncationsWithExtensionsAreRefusedOrWellFormed) {
  const std::string dir = clean_repo(4);
  add_offset_tables(dir);
  const Bytes b = index_of(dir);
  ASSERT_EQ(check_bytes(b), Verdict::ok);
  std::vector<size_t> boundaries;
  size_t p = find_once(b, "IEOT");
  boundaries.push_back(p);
  while (p < b.size() - 20) {
    p += 8 + be32(b, p + 4);
    boundaries.push_back(p);
  }
  ASSERT_EQ(p, b.size() - 20);
  for (size_t n = 0; n < b.size(); ++n) {
    const Verdict v = check_bytes(b, n);
    if (v == Verdict::ok) {
      EXPECT_NE(std::find(boundaries.begin(), boundaries.end(), n - 20), boundaries.end()) << n;
    }
  }
}

TEST_F(GitIndexTest, RandomCorruptionNeverCrashes) {
  std::vector<Bytes> bases = {index_of(clean_repo(2)), index_of(clean_repo(4))};
  {
    const std::string dir = clean_repo(4);
    add_offset_tables(dir);
    bases.push_back(index_of(dir));
  }
  bases.push_back(index_of(clean_repo(3, "--object-format=sha256")));
  std::mt19937 rng(20240611);
  int refused = 0;
  for (const Bytes& base : bases) {
    for (int i = 0; i < 5000; ++i) {
      Bytes c = base;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        const size_t at = rng() % c.size();
        c[at] = (rng() % 2) ? static_cast<unsigned char>(rng()) : c[at] ^ (1u << (rng() % 8));
      }
      size_t n = c.size();
      if (rng() % 4 == 0) n = rng() % (c.size() + 1);
      const Verdict v = check_bytes(c, n);
      EXPECT_NE(verdict_text(v), nullptr);
      refused += v != Verdict::ok;
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(GitIndexVerdict, EveryVerdictHasAPhrase) {
  for (Verdict v : {Verdict::ok, Verdict::truncated, Verdict::bad_header, Verdict::bad_entry,
                    Verdict::unsafe_path, Verdict::hidden_flag, Verdict::extension})
    EXPECT_GT(std::string(verdict_text(v)).size(), 10u);
  EXPECT_EQ(check(nullptr, 0), Verdict::truncated);
}

}  // namespace
}  // namespace brig::jail::git_index
