#include "server/search/find_files.h"
#include "server/tools/find_files_tool.h"

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "protocol/schema_check.h"
#include "tests/server/files/temp_dir.h"

namespace brig::search {
namespace {

using files::testing::context_for;
using files::testing::TempDir;
using protocol::Json;
using Strings = std::vector<std::string>;

class FindFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"src", "src/a", "src/b", "src/c", "build", ".git", ".github"})
      ASSERT_EQ(::mkdir(dir_.at(d).c_str(), 0755), 0);
    dir_.write(".gitignore", "build/\n");
    dir_.write("top.cpp", "");
    dir_.write("src/main.cpp", "");
    dir_.write("src/a/x.cpp", "");
    dir_.write("src/a/x.h", "");
    dir_.write("src/b/y.cpp", "");
    dir_.write("src/c/z.cpp", "");
    dir_.write("build/gen.cpp", "");
    dir_.write(".github/ci.cpp", "");
    dir_.write(".git/hook.cpp", "");
  }

  Json run(const Json& args, std::size_t max_bytes = 1 << 20) {
    auto r = find_files_op(args, context_for(dir_, max_bytes));
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    if (!r) return Json();
    const protocol::ToolResult t = tools::format_find_files(args, std::move(*r));
    const auto problem =
        protocol::check_schema(*t.structured, *tools::find_files_descriptor().output_schema, "s");
    EXPECT_FALSE(problem) << problem.value_or("");
    text_ = t.content[0].to_json()["text"].get<std::string>();
    return *t.structured;
  }

  static Strings paths(const Json& h) {
    Strings out;
    for (const Json& f : h["files"]) out.push_back(f["path"]);
    return out;
  }

  TempDir dir_;
  std::string text_;
};

TEST_F(FindFiles, GlobsSortedByPath) {
  EXPECT_EQ(paths(run({{"pattern", "**/*.cpp"}})),
            (Strings{"src/a/x.cpp", "src/b/y.cpp", "src/c/z.cpp", "src/main.cpp", "top.cpp"}));
  EXPECT_EQ(paths(run({{"pattern", "src/{a,b}/*"}})),
            (Strings{"src/a/x.cpp", "src/a/x.h", "src/b/y.cpp"}));
  EXPECT_EQ(paths(run({{"pattern", "*.h"}})), (Strings{"src/a/x.h"}));
  EXPECT_EQ(paths(run({{"pattern", "*.cpp"}, {"path", "src/a"}})), (Strings{"x.cpp"}));
}

TEST_F(FindFiles, HiddenAndIgnoreSwitchesAreCounted) {
  const Json h = run({{"pattern", "*.cpp"}});
  EXPECT_EQ(h["skipped"]["ignored"], 1);
  EXPECT_EQ(h["skipped"]["hidden"], 2);  // .github and .gitignore
  EXPECT_NE(text_.find("1 ignored"), std::string::npos) << text_;
  const Json all = run({{"pattern", "*.cpp"}, {"hidden", true}, {"gitignore", false}});
  EXPECT_EQ(paths(all), (Strings{".github/ci.cpp", "build/gen.cpp", "src/a/x.cpp", "src/b/y.cpp",
                                 "src/c/z.cpp", "src/main.cpp", "top.cpp"}));
}

TEST_F(FindFiles, APatternNamingAHiddenDirectoryFindsIt) {
  EXPECT_EQ(paths(run({{"pattern", ".github/*.cpp"}})), (Strings{".github/ci.cpp"}));
  EXPECT_EQ(paths(run({{"pattern", ".github/*.cpp"}, {"hidden", false}})), Strings{});
}

TEST_F(FindFiles, LimitCountsWhatWasLeftOutAndPages) {
  const Json h = run({{"pattern", "*.cpp"}, {"limit", 2}});
  EXPECT_EQ(paths(h), (Strings{"src/a/x.cpp", "src/b/y.cpp"}));
  // The page ended the walk: how many follow is not known.
  EXPECT_FALSE(h.contains("total"));
  EXPECT_EQ(h["truncated"], true);
  EXPECT_EQ(h["next_offset"], 2);
  ASSERT_TRUE(h.contains("next_cursor"));
  EXPECT_NE(text_.find("cursor=\"" + h["next_cursor"].get<std::string>()), std::string::npos)
      << text_;
  const Json next = run({{"pattern", "*.cpp"}, {"limit", 2}, {"offset", 4}});
  EXPECT_EQ(paths(next), (Strings{"top.cpp"}));
  EXPECT_FALSE(next.contains("next_offset"));
  EXPECT_EQ(next["total"], 5);
}

// A generated tree paged by cursor gives exactly one unpaged walk's list.
TEST_F(FindFiles, CursorPagesMatchOneUnpagedWalk) {
  for (int d = 0; d < 6; ++d) {
    const std::string dn = "gen/d" + std::to_string(d);
    ASSERT_EQ(::mkdir(dir_.at("gen").c_str(), 0755) == 0 || errno == EEXIST, true);
    ASSERT_EQ(::mkdir(dir_.at(dn).c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir_.at(dn + "/sub").c_str(), 0755), 0);
    for (int f = 0; f < 5; ++f) {
      dir_.write(dn + "/f" + std::to_string(f) + ".cpp", "");
      dir_.write(dn + "/sub/g" + std::to_string(f) + ".cpp", "");
    }
  }
  const Json all = run({{"pattern", "**/*.cpp"}, {"path", "gen"}, {"limit", 10000}});
  ASSERT_EQ(all["total"], 60);
  for (const int limit : {1, 7, 59, 60}) {
    Strings paged;
    Json args = {{"pattern", "**/*.cpp"}, {"path", "gen"}, {"limit", limit}};
    for (int page = 0; page < 100; ++page) {
      const Json h = run(args);
      for (const std::string& p : paths(h)) paged.push_back(p);
      if (!h.contains("next_cursor")) break;
      args["cursor"] = h["next_cursor"];
    }
    EXPECT_EQ(paged, paths(all)) << "limit " << limit;
  }
}

// A page walks only its own part of the tree: the first stops where it is
// full, the next starts where that one stopped. Each directory holds one
// ignored file, so the ignored count says how many directories a page read.
TEST_F(FindFiles, ACursorPageWalksOnlyItsPart) {
  ASSERT_EQ(::mkdir(dir_.at("gen").c_str(), 0755), 0);
  dir_.write("gen/.ignore", "*.log\n");
  for (int d = 0; d < 10; ++d) {
    const std::string dn = "gen/d" + std::to_string(d);
    ASSERT_EQ(::mkdir(dir_.at(dn).c_str(), 0755), 0);
    dir_.write(dn + "/a.txt", "");
    dir_.write(dn + "/x.log", "");
  }
  const Json first = run({{"pattern", "*.txt"}, {"path", "gen"}, {"limit", 2}});
  EXPECT_EQ(paths(first), (Strings{"d0/a.txt", "d1/a.txt"}));
  // d0 and d1, and d2 up to its a.txt (which starts the next page): not d3..d9.
  EXPECT_EQ(first["skipped"]["ignored"], 2);
  const Json second =
      run({{"pattern", "*.txt"}, {"path", "gen"}, {"limit", 2}, {"cursor", first["next_cursor"]}});
  EXPECT_EQ(paths(second), (Strings{"d2/a.txt", "d3/a.txt"}));
  // d2 and d3 only: d0 and d1 were not walked again.
  EXPECT_EQ(second["skipped"]["ignored"], 2);
  EXPECT_FALSE(second.contains("next_offset"));
}

TEST_F(FindFiles, AForeignOrMangledCursorIsAClearError) {
  const Json first = run({{"pattern", "*.cpp"}, {"limit", 1}});
  const auto fail = [&](const Json& args) {
    auto r = find_files_op(args, context_for(dir_));
    EXPECT_FALSE(r);
    return r ? std::string() : r.error().to_string();
  };
  EXPECT_NE(fail({{"pattern", "*.cpp"}, {"cursor", "junk"}}).find("not a cursor this tool gave"),
            std::string::npos);
  std::string cut = first["next_cursor"];
  cut.pop_back();
  EXPECT_NE(fail({{"pattern", "*.cpp"}, {"cursor", cut}}).find("not a cursor this tool gave"),
            std::string::npos);
  // Another pattern's cursor would start a page at a position of another list.
  EXPECT_NE(fail({{"pattern", "*.h"}, {"cursor", first["next_cursor"]}}).find("another query"),
            std::string::npos);
  EXPECT_NE(fail({{"pattern", "*.cpp"}, {"offset", 1}, {"cursor", first["next_cursor"]}})
                .find("not both"),
            std::string::npos);
  // The same query with another page size continues.
  EXPECT_EQ(paths(run({{"pattern", "*.cpp"}, {"limit", 1}, {"cursor", first["next_cursor"]}})),
            (Strings{"src/b/y.cpp"}));
}

TEST_F(FindFiles, SortByModificationTimeNewestFirst) {
  const auto touch = [&](const char* rel, time_t when) {
    const struct timeval tv[2] = {{when, 0}, {when, 0}};
    ASSERT_EQ(::utimes(dir_.at(rel).c_str(), tv), 0);
  };
  touch("src/a/x.cpp", 1000);
  touch("src/b/y.cpp", 3000);
  touch("src/c/z.cpp", 2000);
  const Json h = run({{"pattern", "src/*/*.cpp"}, {"sort", "modified"}});
  EXPECT_EQ(paths(h), (Strings{"src/b/y.cpp", "src/c/z.cpp", "src/a/x.cpp"}));
  EXPECT_EQ(h["files"][0]["modified"], "1970-01-01T00:50:00Z");
}

TEST_F(FindFiles, SymlinkLoopsDoNotHang) {
  ASSERT_EQ(::symlink("..", dir_.at("src/a/up").c_str()), 0);
  ASSERT_EQ(::symlink("loop", dir_.at("src/loop").c_str()), 0);
  ASSERT_EQ(::symlink("main.cpp", dir_.at("src/alias.cpp").c_str()), 0);
  const Json h = run({{"pattern", "**"}});
  const Strings p = paths(h);
  EXPECT_NE(std::find(p.begin(), p.end(), "src/a/up"), p.end());
  EXPECT_NE(std::find(p.begin(), p.end(), "src/loop"), p.end());
  for (const Json& f : h["files"]) {
    if (f["path"] == "src/alias.cpp") {
      EXPECT_EQ(f.value("symlink", false), true);
    }
    if (f["path"] == "src/main.cpp") {
      EXPECT_FALSE(f.contains("symlink"));
    }
  }
  EXPECT_EQ(h["total"], 9);
}

TEST_F(FindFiles, Errors) {
  EXPECT_FALSE(find_files_op({{"pattern", "*"}, {"path", "top.cpp"}}, context_for(dir_)));
  EXPECT_FALSE(find_files_op({{"pattern", "*"}, {"path", "nope"}}, context_for(dir_)));
  auto bad = find_files_op({{"pattern", "src/{a"}}, context_for(dir_));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().why.find("never closed"), std::string::npos);
}

TEST_F(FindFiles, DeadlineStopsTheWalk) {
  files::OpContext ctx = context_for(dir_);
  ctx.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  for (int i = 0; i < 40; ++i) dir_.write("f" + std::to_string(i) + ".cpp", "");
  auto r = find_files_op({{"pattern", "*.cpp"}}, ctx);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header["timed_out"], true);
  EXPECT_EQ(r->header["truncated"], true);
}

// Issue 15: offset and limit beyond 64 bits were read through a
// float-to-integer conversion (undefined behaviour) and came out as 0 or 1.
TEST_F(FindFiles, OutOfRangeIntegersAreErrorsNamingTheArgument) {
  for (const Json& args : {Json{{"pattern", "**/*.cpp"}, {"offset", 1e30}},
                           Json{{"pattern", "**/*.cpp"}, {"limit", 1e30}},
                           Json{{"pattern", "**/*.cpp"}, {"offset", -1}}}) {
    auto r = find_files_op(args, context_for(dir_));
    ASSERT_FALSE(r) << args.dump();
    const std::string name = args.contains("limit") ? "limit" : "offset";
    EXPECT_NE(r.error().to_string().find("invalid argument " + name), std::string::npos)
        << r.error().to_string();
    const auto why = protocol::check_schema(args, tools::find_files_descriptor().input_schema);
    ASSERT_TRUE(why) << args.dump();
    EXPECT_NE(why->find("arguments." + name), std::string::npos) << *why;
  }
}

}  // namespace
}  // namespace brig::search
