// The walk's ignore decisions compared with the real thing on generated
// trees: git check-ignore for .gitignore and .git/info/exclude, ripgrep
// --files for .ignore files, precedence and hidden names. Both run with a
// temporary HOME and no system or global configuration, so the host's
// settings cannot change the answer.
#include <sys/stat.h>

#include <random>
#include <set>

#include <gtest/gtest.h>

#include "server/search/tree_walk.h"
#include "tests/server/files/temp_dir.h"
#include "tests/server/search/run_command.h"

namespace brig::search {
namespace {

using files::testing::TempDir;
using testing::run_command;
using Paths = std::set<std::string>;

const std::vector<std::string> kDirs = {"a",      "a/b",   "a/b/c",     "b",       "build",
                                        "src",    "src/a", "src/build", "a/build", ".hid",
                                        "a/.hid", "logs",  "src/logs/x"};
const std::vector<std::string> kNames = {"x.o", "keep.o", "y.c",   "z.txt", ".env",
                                         "q",   "#note",  "!bang", "a.log"};

class Oracle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_program("git")) GTEST_SKIP() << "git is not installed";
    env_ = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home_.path(), "GIT_CONFIG_NOSYSTEM=1",
            "GIT_CONFIG_GLOBAL=/dev/null", "LANG=C"};
    ASSERT_EQ(run_command({"git", "init", "-q", root()}, env_).status, 0);
    for (const std::string& d : kDirs) {
      std::string path;
      for (std::size_t i = 0; i <= d.size(); ++i) {
        if (i == d.size() || d[i] == '/') ::mkdir(tree_.at(d.substr(0, i)).c_str(), 0755);
      }
    }
    files_.clear();
    for (const std::string& n : kNames) add_file(n);
    for (const std::string& d : kDirs)
      for (const std::string& n : kNames) add_file(d + "/" + n);
  }

  const std::string& root() const { return tree_.path(); }

  void add_file(const std::string& rel) {
    tree_.write(rel, "text\n");
    files_.insert(rel);
  }
  void write_rules(const std::string& rel, const std::string& text) {
    tree_.write(rel, text);
    files_.insert(rel);
  }

  Paths walked(bool hidden) {
    struct Collect : WalkVisitor {
      Paths seen;
      bool visit(const WalkEntry& e) override {
        seen.insert(std::string(e.path));
        return true;
      }
    } collect;
    WalkOptions o;
    o.hidden = hidden;
    o.ancestors_up_to = root();
    TreeWalker walker(o);
    EXPECT_TRUE(walker.walk(root(), collect));
    return collect.seen;
  }

  // Files git does not ignore: neither they nor a directory above them.
  Paths git_visible() {
    std::string input;
    std::set<std::string> dirs;
    for (const std::string& f : files_) {
      input += f + '\0';
      for (std::size_t i = f.find('/'); i != std::string::npos; i = f.find('/', i + 1))
        dirs.insert(f.substr(0, i));
    }
    for (const std::string& d : dirs) input += d + '\0';
    const auto r = run_command(
        {"git", "-C", root(), "-c", "core.excludesFile=/dev/null", "check-ignore", "--stdin", "-z"},
        env_, input);
    EXPECT_TRUE(r.status == 0 || r.status == 1) << r.status;
    Paths ignored;
    for (std::size_t at = 0; at < r.out.size();) {
      const std::size_t end = r.out.find('\0', at);
      ignored.insert(r.out.substr(at, end - at));
      at = end == std::string::npos ? r.out.size() : end + 1;
    }
    Paths visible;
    for (const std::string& f : files_) {
      bool hidden_by_dir = ignored.count(f) > 0;
      for (std::size_t i = f.find('/'); i != std::string::npos && !hidden_by_dir;
           i = f.find('/', i + 1))
        hidden_by_dir = ignored.count(f.substr(0, i)) > 0;
      if (!hidden_by_dir) visible.insert(f);
    }
    return visible;
  }

  Paths rg_files(bool hidden) {
    std::vector<std::string> argv = {"rg", "--files", "--no-config", "-g", "!.git"};
    if (hidden) argv.push_back("--hidden");
    argv.push_back(".");
    std::vector<std::string> full = {"sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", root()};
    full.insert(full.end(), argv.begin(), argv.end());
    const auto out = run_command(full, env_);
    EXPECT_TRUE(out.status == 0 || out.status == 1) << out.status;
    Paths seen;
    for (std::size_t at = 0; at < out.out.size();) {
      const std::size_t end = out.out.find('\n', at);
      std::string p = out.out.substr(at, end - at);
      if (p.starts_with("./")) p.erase(0, 2);
      if (!p.empty()) seen.insert(p);
      at = end == std::string::npos ? out.out.size() : end + 1;
    }
    return seen;
  }

  TempDir home_;
  TempDir tree_;
  std::vector<std::string> env_;
  Paths files_;
};

std::string diff(const Paths& want, const Paths& got) {
  std::string s;
  for (const std::string& p : want)
    if (!got.count(p)) s += "  missing: " + p + "\n";
  for (const std::string& p : got)
    if (!want.count(p)) s += "  extra:   " + p + "\n";
  return s;
}

TEST_F(Oracle, GitCheckIgnoreOnHandWrittenRules) {
  write_rules(".gitignore",
              "# objects\n*.o\n!keep.o\n/build/\nsrc/**/x.o\n**/logs\n\\#note\n\\!bang\n"
              "a/b/\n!a/b/c/\nz.txt   \n");
  write_rules("src/.gitignore", "*.c\n!/y.c\nbuild\n");
  write_rules("a/.gitignore", "!z.txt\r\n.hid/  \r\n");
  tree_.write(".git/info/exclude", "*.log\n!a/a.log\n");
  const Paths want = git_visible();
  const Paths got = walked(/*hidden=*/true);
  EXPECT_EQ(got, want) << diff(want, got);
  // Sanity: the rules did ignore something, and re-included something.
  EXPECT_LT(want.size(), files_.size());
  EXPECT_TRUE(want.count("keep.o"));
  EXPECT_FALSE(want.count("a/b/c/z.txt"));  // under an ignored directory
}

// A rule made of random pieces, so that wildcards meet slashes, brackets
// and each other in ways no hand-written list thinks of.
std::string random_rule(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
      "a", "b",  "c", "x",     ".o",   "o",    "y.c", "z.txt", "src", "build", "logs", "keep",
      "*", "**", "?", "[a-c]", "[!x]", "[]a]", "/",   "/",     "/",   ".",     "\\.",  "-"};
  std::string rule = rng() % 5 == 0 ? "!" : "";
  const int n = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) rule += pieces[rng() % pieces.size()];
  return rule;
}

TEST_F(Oracle, GitCheckIgnoreOnRandomRules) {
  const std::vector<std::string> vocabulary = {
      "*.o",   "!keep.o", "build/",      "/build",     "a/",      "!a/",        "a/*",
      "!a/b/", "**/b",    "b/**",        "src/**/x.o", "/src/a",  "*.c",        "!y.c",
      "z.*",   "[xy].*",  "?.txt",       ".hid",       "!.hid/",  "a/**/z.txt", "*",
      "!*/",   "!src/",   "b",           "/a/b/",      "!*.txt",  "logs/**",    "!logs/",
      "*/b/c", "a/**",    "!a/**/y.c",   "\\#note",    "[!k]*.o", "**",         "src/*",
      "!*.o",  "c/",      "**/a/**/x.o", ".env",       "!.env",   "b/c/",       "a.log"};
  const std::vector<std::string> rule_files = {".gitignore", "a/.gitignore", "src/.gitignore",
                                               "a/b/.gitignore", ".git/info/exclude"};
  std::mt19937 rng(20261124);
  int ignoring_rounds = 0;
  for (int round = 0; round < 150; ++round) {
    for (const std::string& f : rule_files) {
      std::string text;
      const int n = static_cast<int>(rng() % 5);
      for (int i = 0; i < n; ++i)
        text += (rng() % 2 ? vocabulary[rng() % vocabulary.size()] : random_rule(rng)) + "\n";
      if (f == ".git/info/exclude") {
        tree_.write(f, text);
      } else {
        write_rules(f, text);
      }
    }
    const Paths want = git_visible();
    const Paths got = walked(/*hidden=*/true);
    if (want.size() < files_.size()) ++ignoring_rounds;
    ASSERT_EQ(got, want) << "round " << round << "\n"
                         << diff(want, got) << "rules:\n"
                         << tree_.read(".gitignore") << "--a\n"
                         << tree_.read("a/.gitignore") << "--src\n"
                         << tree_.read("src/.gitignore") << "--a/b\n"
                         << tree_.read("a/b/.gitignore") << "--exclude\n"
                         << tree_.read(".git/info/exclude");
  }
  EXPECT_GT(ignoring_rounds, 75);  // the rules did decide something
}

TEST_F(Oracle, RipgrepOnIgnoreFilesAndHiddenNames) {
  if (!testing::have_program("rg")) GTEST_SKIP() << "ripgrep is not installed";
  write_rules(".gitignore", "*.o\n*.c\nbuild/\n");
  write_rules(".ignore", "!y.c\nz.txt\n!.hid/\n");  // .ignore outranks .gitignore
  write_rules("a/.ignore", "!z.txt\n");
  write_rules("src/.gitignore", "!build/\n");
  for (bool hidden : {true, false}) {
    const Paths want = rg_files(hidden);
    const Paths got = walked(hidden);
    EXPECT_EQ(got, want) << (hidden ? "with" : "without") << " hidden\n" << diff(want, got);
    EXPECT_FALSE(want.empty());
  }
}

TEST_F(Oracle, RipgrepOnNestedRepositories) {
  if (!testing::have_program("rg")) GTEST_SKIP() << "ripgrep is not installed";
  // src is a repository of its own: the outer .gitignore stops at its root,
  // .ignore files do not.
  ASSERT_EQ(::mkdir(tree_.at("src/.git").c_str(), 0755), 0);
  write_rules(".gitignore", "*.c\nz.txt\n");
  write_rules(".ignore", "x.o\n");
  write_rules("src/.gitignore", "keep.o\n");
  const Paths want = rg_files(/*hidden=*/true);
  const Paths got = walked(/*hidden=*/true);
  EXPECT_EQ(got, want) << diff(want, got);
  EXPECT_TRUE(want.count("src/y.c"));
  EXPECT_FALSE(want.count("src/x.o"));
}

}  // namespace
}  // namespace brig::search
