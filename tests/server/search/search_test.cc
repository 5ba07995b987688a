#include "server/search/search.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include <gtest/gtest.h>

#include "jail/base/unique_fd.h"
#include "protocol/schema_check.h"
#include "server/search/find_files.h"
#include "server/tools/find_files_tool.h"
#include "server/tools/search_tool.h"
#include "tests/server/files/temp_dir.h"

namespace brig::search {
namespace {

using files::testing::context_for;
using files::testing::TempDir;
using protocol::Json;

class Search : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(dir_.at("src").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir_.at("build").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir_.at(".git").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir_.at(".cache").c_str(), 0755), 0);
    dir_.write(".gitignore", "build/\n*.log\n");
    dir_.write(".git/HEAD", "needle in git\n");
    dir_.write(".cache/c.txt", "needle hidden\n");
    dir_.write("build/out.c", "needle ignored\n");
    dir_.write("run.log", "needle ignored too\n");
    dir_.write("src/a.c", "one\nneedle two\nthree\nfour\nNeedle five\nsix\n");
    dir_.write("src/b.h", "needle\n");
    dir_.write("notes.txt", "nothing here\n");
    dir_.write("blob.bin", std::string("needle\0\1\2", 9));
  }

  // Runs the op and the formatter; checks the result against the schema.
  Json run(Json args, std::size_t max_bytes = 1 << 20) {
    auto r = search_op(args, context_for(dir_, max_bytes));
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    if (!r) return Json();
    const protocol::ToolResult t = tools::format_search(args, std::move(*r));
    const auto problem = protocol::check_schema(
        *t.structured, *tools::search_descriptor().output_schema, "structured");
    EXPECT_FALSE(problem) << problem.value_or("");
    text_ = t.content[0].to_json()["text"].get<std::string>();
    return *t.structured;
  }

  static std::vector<std::string> paths(const Json& h) {
    std::vector<std::string> out;
    for (const Json& f : h["files"]) out.push_back(f["path"]);
    return out;
  }

  TempDir dir_;
  std::string text_;
};

TEST_F(Search, ContentModeGroupsLinesByFileAndSaysWhatWasSkipped) {
  const Json h = run({{"pattern", "needle"}});
  EXPECT_EQ(paths(h), (std::vector<std::string>{"src/a.c", "src/b.h"}));
  EXPECT_EQ(h["results"], 2);
  const Json& line = h["files"][0]["lines"][0];
  EXPECT_EQ(line["line"], 2);
  EXPECT_FALSE(line.contains("text"));  // the text block has it (one copy)
  EXPECT_EQ(line["match"], true);
  EXPECT_EQ(h["skipped"]["ignored"], 2);  // build/ and run.log
  EXPECT_EQ(h["skipped"]["hidden"], 2);   // .cache and .gitignore (.git is never counted)
  EXPECT_EQ(h["skipped"]["binary"], 1);
  EXPECT_EQ(h["truncated"], false);
  EXPECT_NE(text_.find("src/a.c\n2:needle two\n"), std::string::npos) << text_;
  EXPECT_NE(text_.find("2 ignored"), std::string::npos) << text_;
  EXPECT_NE(text_.find("1 binary"), std::string::npos) << text_;
}

TEST_F(Search, NoMatchStillReportsSkips) {
  const Json h = run({{"pattern", "absent"}});
  EXPECT_EQ(h["results"], 0);
  EXPECT_NE(text_.find("No matches for absent"), std::string::npos) << text_;
  EXPECT_NE(text_.find("Skipped:"), std::string::npos) << text_;
}

TEST_F(Search, SwitchesBringIgnoredAndHiddenBack) {
  const Json h = run({{"pattern", "needle"}, {"gitignore", false}, {"hidden", true}});
  EXPECT_EQ(paths(h), (std::vector<std::string>{".cache/c.txt", "build/out.c", "run.log", "src/a.c",
                                                "src/b.h"}));
  EXPECT_EQ(h["skipped"]["ignored"], 0);
  EXPECT_EQ(h["skipped"]["hidden"], 0);
}

TEST_F(Search, AnIncludeGlobNamingAHiddenDirectorySearchesIt) {
  EXPECT_EQ(paths(run({{"pattern", "needle"}, {"include", {".cache/**"}}})),
            (std::vector<std::string>{".cache/c.txt"}));
}

TEST_F(Search, FilesAndCountModes) {
  const Json files =
      run({{"pattern", "needle"}, {"output_mode", "files"}, {"case_insensitive", true}});
  EXPECT_EQ(paths(files), (std::vector<std::string>{"src/a.c", "src/b.h"}));
  EXPECT_FALSE(files["files"][0].contains("lines"));
  EXPECT_EQ(text_.substr(0, 16), "src/a.c\nsrc/b.h\n");
  const Json count =
      run({{"pattern", "needle"}, {"output_mode", "count"}, {"case_insensitive", true}});
  EXPECT_EQ(count["files"][0]["count"], 2);
  EXPECT_EQ(count["files"][1]["count"], 1);
  EXPECT_NE(text_.find("src/a.c:2\n"), std::string::npos);
}

TEST_F(Search, SmartCase) {
  EXPECT_EQ(run({{"pattern", "needle"}, {"smart_case", true}, {"path", "src/a.c"}})["results"], 2);
  EXPECT_EQ(run({{"pattern", "Needle"}, {"smart_case", true}, {"path", "src/a.c"}})["results"], 1);
}

TEST_F(Search, ContextLinesAndSeparators) {
  const Json h = run({{"pattern", "(?i)needle"},
                      {"path", "src/a.c"},
                      {"context_before", 1},
                      {"context_after", 1}});
  ASSERT_EQ(h["files"].size(), 1u);
  std::vector<std::pair<int, bool>> lines;
  for (const Json& l : h["files"][0]["lines"]) lines.emplace_back(l["line"], l["match"]);
  EXPECT_EQ(lines, (std::vector<std::pair<int, bool>>{
                       {1, false}, {2, true}, {3, false}, {4, false}, {5, true}, {6, false}}));
  EXPECT_NE(text_.find("a.c\n1-one\n2:needle two\n3-three\n4-four\n5:Needle five\n6-six\n"),
            std::string::npos)
      << text_;
  const Json gap = run({{"pattern", "(?i)needle"}, {"path", "src/a.c"}, {"context_after", 1}});
  EXPECT_NE(text_.find("3-three\n--\n5:Needle five"), std::string::npos) << text_;
}

TEST_F(Search, IncludeAndExcludeGlobs) {
  EXPECT_EQ(paths(run({{"pattern", "needle"}, {"include", {"*.h"}}})),
            (std::vector<std::string>{"src/b.h"}));
  const Json h = run({{"pattern", "needle"}, {"exclude", {"src/a.*"}}});
  EXPECT_EQ(paths(h), (std::vector<std::string>{"src/b.h"}));
  EXPECT_GE(h["skipped"]["filtered"], 1);
  const Json dir = run({{"pattern", "needle"}, {"exclude", {"src/"}}});
  EXPECT_EQ(paths(dir), std::vector<std::string>{});
  EXPECT_EQ(dir["skipped"]["filtered"], 1);  // the directory, once
  dir_.write("other.h", "needle\n");
  const Json under = run({{"pattern", "needle"}, {"include", {"src/**/*.h"}}});
  EXPECT_EQ(paths(under), (std::vector<std::string>{"src/b.h"}));
}

TEST_F(Search, MaxResultsPagesWithOffset) {
  std::string many;
  for (int i = 1; i <= 25; ++i) many += "hit " + std::to_string(i) + "\n";
  dir_.write("many.txt", many);
  std::vector<int> seen;
  std::size_t offset = 0;
  for (int page = 0; page < 10; ++page) {
    const Json h =
        run({{"pattern", "hit"}, {"path", "many.txt"}, {"max_results", 10}, {"offset", offset}});
    for (const Json& l : h["files"][0]["lines"]) seen.push_back(l["line"]);
    if (!h.contains("next_offset")) {
      EXPECT_EQ(h["truncated"], false);
      break;
    }
    EXPECT_EQ(h["stopped_by"], "max_results");
    EXPECT_NE(text_.find("cursor="), std::string::npos);
    offset = h["next_offset"];
  }
  std::vector<int> want;
  for (int i = 1; i <= 25; ++i) want.push_back(i);
  EXPECT_EQ(seen, want);
}

// The lines of a search paged by cursor, as "path:line".
std::vector<std::string> lines_of(const Json& h) {
  std::vector<std::string> out;
  for (const Json& f : h["files"])
    for (const Json& l : f["lines"])
      out.push_back(f["path"].get<std::string>() + ":" + std::to_string(l["line"].get<int>()));
  return out;
}

// Pages by cursor, by count and by reply size, give one unpaged search's
// lines, including pages that end inside a file.
TEST_F(Search, CursorPagesMatchOneUnpagedSearch) {
  for (int d = 0; d < 4; ++d) {
    const std::string dn = "gen/d" + std::to_string(d);
    ASSERT_EQ(::mkdir(dir_.at("gen").c_str(), 0755) == 0 || errno == EEXIST, true);
    ASSERT_EQ(::mkdir(dir_.at(dn).c_str(), 0755), 0);
    for (int f = 0; f < 4; ++f) {
      std::string text;
      for (int l = 0; l < 3 + f; ++l)
        text += (l % 2 ? "hay\n" : "needle " + std::string(60, 'n') + "\n");
      dir_.write(dn + "/f" + std::to_string(f) + ".txt", text);
    }
  }
  const Json all = run({{"pattern", "needle"}, {"path", "gen"}, {"max_results", 10000}});
  const std::vector<std::string> want = lines_of(all);
  ASSERT_EQ(want.size(), 4u * (2 + 2 + 3 + 3));
  for (const auto& [max_results, max_bytes] :
       std::vector<std::pair<int, std::size_t>>{{1, 1 << 20}, {3, 1 << 20}, {10000, 600}}) {
    std::vector<std::string> got;
    Json args = {{"pattern", "needle"}, {"path", "gen"}, {"max_results", max_results}};
    for (int page = 0; page < 200; ++page) {
      const Json h = run(args, max_bytes);
      for (const std::string& l : lines_of(h)) got.push_back(l);
      if (!h.contains("next_cursor")) break;
      // A page that starts at a cursor offers no offset: it would be wrong.
      if (args.contains("cursor")) {
        EXPECT_FALSE(h.contains("next_offset"));
      }
      args["cursor"] = h["next_cursor"];
    }
    EXPECT_EQ(got, want) << max_results << " " << max_bytes;
  }
  // Files mode pages by file.
  Json args = {
      {"pattern", "needle"}, {"path", "gen"}, {"output_mode", "files"}, {"max_results", 5}};
  std::vector<std::string> files;
  for (int page = 0; page < 20; ++page) {
    const Json h = run(args);
    for (const std::string& p : paths(h)) files.push_back(p);
    if (!h.contains("next_cursor")) break;
    args["cursor"] = h["next_cursor"];
  }
  EXPECT_EQ(files, paths(all));
}

// The second page does not search the first page's files again.
TEST_F(Search, ACursorPageSearchesOnlyItsPart) {
  ASSERT_EQ(::mkdir(dir_.at("gen").c_str(), 0755), 0);
  for (int f = 0; f < 10; ++f) dir_.write("gen/f" + std::to_string(f) + ".txt", "needle\n");
  const Json first = run({{"pattern", "needle"}, {"path", "gen"}, {"max_results", 3}});
  EXPECT_EQ(first["files_searched"], 4);  // the fourth match ends the page
  const Json second = run({{"pattern", "needle"},
                           {"path", "gen"},
                           {"max_results", 3},
                           {"cursor", first["next_cursor"]}});
  EXPECT_EQ(paths(second), (std::vector<std::string>{"f3.txt", "f4.txt", "f5.txt"}));
  EXPECT_EQ(second["files_searched"], 4);
  auto r = search_op({{"pattern", "other"}, {"path", "gen"}, {"cursor", first["next_cursor"]}},
                     context_for(dir_));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().to_string().find("another query"), std::string::npos);
  r = search_op({{"pattern", "needle"}, {"cursor", "c1.0"}}, context_for(dir_));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().to_string().find("not a cursor this tool gave"), std::string::npos);
}

// A tree with every kind of skip: ignored, hidden, binary, symlinks, files
// the include glob filters, and files with many, one or no matches.
void make_mixed_tree(const TempDir& dir) {
  ASSERT_EQ(::mkdir(dir.at("mix").c_str(), 0755), 0);
  dir.write("mix/.ignore", "*.log\nskip/\n");
  for (int d = 0; d < 12; ++d) {
    const std::string dn = "mix/d" + std::to_string(d);
    ASSERT_EQ(::mkdir(dir.at(dn).c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir.at(dn + "/skip").c_str(), 0755), 0);
    dir.write(dn + "/skip/x.txt", "needle\n");
    dir.write(dn + "/.hid.txt", "needle\n");
    dir.write(dn + "/r.log", "needle\n");
    dir.write(dn + "/bin.txt", std::string("needle\0\1", 9));
    dir.write(dn + "/other.md", "needle\n");
    ASSERT_EQ(::symlink("a0.txt", dir.at(dn + "/link.txt").c_str()), 0);
    for (int f = 0; f < 8; ++f) {
      std::string text;
      for (int l = 0; l < (d * 8 + f) % 7; ++l) text += l % 3 ? "hay\n" : "a needle here\n";
      dir.write(dn + "/a" + std::to_string(f) + ".txt", text);
    }
  }
}

// Reading threads change nothing a client sees: the same header (order,
// counts, skipped report, cursors) and the same bytes as one thread, for
// every page size and mode.
TEST_F(Search, ThreadsGiveTheSameResultsAsOneThread) {
  make_mixed_tree(dir_);
  for (const char* mode : {"content", "files", "count"}) {
    for (const int max_results : {1, 7, 50, 10000}) {
      for (const std::size_t max_bytes : {std::size_t{1} << 20, std::size_t{700}}) {
        Json args = {{"pattern", "needle"},           {"path", "mix"},
                     {"output_mode", mode},           {"max_results", max_results},
                     {"include", {"*.txt", "*.log"}}, {"context_before", 1}};
        auto one = search_with(args, context_for(dir_, max_bytes), SearchTuning{1});
        ASSERT_TRUE(one);
        for (const std::size_t threads : {2, 3, 8}) {
          auto many = search_with(args, context_for(dir_, max_bytes), SearchTuning{threads});
          ASSERT_TRUE(many);
          EXPECT_EQ(many->header, one->header) << mode << " " << max_results << " " << threads;
          EXPECT_EQ(many->bytes, one->bytes);
        }
        if (max_results == 10000 && max_bytes == (std::size_t{1} << 20)) {
          EXPECT_GT(one->header["skipped"]["ignored"].get<int>(), 0);
        }
      }
    }
  }
}

// A result limit ends the page where one thread would: the threads stop
// and the counts say so.
TEST_F(Search, ALimitStopsTheThreadsWhereOneThreadStops) {
  ASSERT_EQ(::mkdir(dir_.at("many").c_str(), 0755), 0);
  for (int f = 0; f < 500; ++f) dir_.write("many/f" + std::to_string(1000 + f), "needle\n");
  const Json args = {{"pattern", "needle"}, {"path", "many"}, {"max_results", 2}};
  auto r = search_with(args, context_for(dir_), SearchTuning{4});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header["files_searched"], 3);
  EXPECT_EQ(r->header["stopped_by"], "max_results");
  files::OpContext late = context_for(dir_);
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto cut = search_with(args, late, SearchTuning{4});
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->header["timed_out"], true);
}

// Each queued file holds a descriptor. A search that runs out of them (a
// policy's open_files) takes back what it queued and goes on: no file is
// reported unreadable for the queue's own descriptors.
TEST_F(Search, RunningOutOfDescriptorsLosesNoFile) {
  ASSERT_EQ(::mkdir(dir_.at("many").c_str(), 0755), 0);
  for (int f = 0; f < 300; ++f) dir_.write("many/f" + std::to_string(1000 + f), "needle\n");
  const Json args = {
      {"pattern", "needle"}, {"path", "many"}, {"output_mode", "count"}, {"max_results", 1000}};
  auto one = search_with(args, context_for(dir_), SearchTuning{1});
  ASSERT_TRUE(one);
  ASSERT_EQ(one->header["files"].size(), 300u);

  // Descriptors held elsewhere in the process leave the queue, sized by
  // the limit alone, too few.
  std::vector<UniqueFd> held;
  for (int i = 0; i < 60; ++i) held.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int highest = 0;
  for (const UniqueFd& fd : held) highest = std::max(highest, fd.get());
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit tight = before;
  tight.rlim_cur = static_cast<rlim_t>(highest + 6);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  auto many = search_with(args, context_for(dir_), SearchTuning{3});
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
  ASSERT_TRUE(many) << many.error().to_string();
  EXPECT_EQ(many->header["skipped"]["unreadable"], 0) << many->header["skipped"].dump();
  EXPECT_EQ(many->header, one->header);
}

TEST_F(Search, RepliesStayUnderMaxBytesAndPageBySize) {
  std::string big;
  for (int i = 0; i < 2000; ++i) big += "match " + std::string(100, 'x') + "\n";
  dir_.write("big.txt", big);
  const std::size_t max_bytes = 64 << 10;
  std::size_t total = 0;
  std::size_t offset = 0;
  for (int page = 0; page < 100; ++page) {
    auto r = search_op(
        {{"pattern", "match"}, {"path", "big.txt"}, {"max_results", 10000}, {"offset", offset}},
        context_for(dir_, max_bytes));
    ASSERT_TRUE(r);
    const protocol::ToolResult t = tools::format_search({}, std::move(*r));
    const std::size_t sent = t.to_json().dump().size();
    EXPECT_LT(sent, max_bytes);
    const Json& h = *t.structured;
    total += h["results"].get<std::size_t>();
    if (!h.contains("next_offset")) break;
    EXPECT_EQ(h["stopped_by"], "size");
    // A full page uses its budget (max_bytes less 16 KiB kept for the
    // envelope; the line text travels once): not half of it, as when the
    // text was counted for two copies.
    EXPECT_GT(sent, max_bytes * 5 / 8) << "page " << page;
    offset = h["next_offset"];
  }
  EXPECT_EQ(total, 2000u);
}

TEST_F(Search, ATinyReplyLimitStillMovesOnePageAtATime) {
  dir_.write("three.txt", "hit " + std::string(300, 'a') + "\nhit b\nhit c\n");
  std::size_t offset = 0;
  int pages = 0;
  while (pages < 10) {
    auto r = search_op({{"pattern", "hit"}, {"path", "three.txt"}, {"offset", offset}},
                       context_for(dir_, /*max_bytes=*/200));
    ASSERT_TRUE(r);
    ++pages;
    EXPECT_EQ(r->header["results"], 1);
    if (!r->header.contains("next_offset")) break;
    offset = r->header["next_offset"];
  }
  EXPECT_EQ(pages, 3);
}

TEST_F(Search, LongLinesAreCutAroundTheMatch) {
  dir_.write("long.txt", std::string(5000, 'a') + "NEEDLE" + std::string(5000, 'b') + "\n");
  const Json h = run({{"pattern", "NEEDLE"}, {"path", "long.txt"}, {"max_line_length", 100}});
  const Json& l = h["files"][0]["lines"][0];
  EXPECT_EQ(l["cut"], true);
  EXPECT_EQ(l["length"], 10006);
  // The text block shows the cut line between ellipses: "1:…" shown "…".
  const std::string open = "1:…";
  const std::size_t at = text_.find(open);
  ASSERT_NE(at, std::string::npos) << text_;
  const std::size_t end = text_.find("…\n", at + open.size());
  ASSERT_NE(end, std::string::npos) << text_;
  const std::string shown = text_.substr(at + open.size(), end - at - open.size());
  EXPECT_EQ(shown.size(), 100u);
  EXPECT_NE(shown.find("NEEDLE"), std::string::npos);
  EXPECT_NE(text_.find("…a"), std::string::npos);
}

TEST_F(Search, CrlfLinesShowWithoutTheCarriageReturn) {
  dir_.write("dos.txt", "first\r\nneedle here\r\nlast\r\n");
  const Json h = run({{"pattern", "needle"}, {"path", "dos.txt"}, {"context_after", 1}});
  EXPECT_EQ(h["files"][0]["lines"][0]["line"], 2);
  EXPECT_EQ(h["files"][0]["lines"][1]["line"], 3);
  EXPECT_NE(text_.find("2:needle here\n3-last\n"), std::string::npos) << text_;
}

TEST_F(Search, InvalidUtf8StaysValidJson) {
  dir_.write("latin1.txt", "caf\xe9 needle\n");
  auto r = search_op({{"pattern", "needle"}, {"path", "latin1.txt"}}, context_for(dir_));
  ASSERT_TRUE(r);
  const protocol::ToolResult t = tools::format_search({}, std::move(*r));
  EXPECT_EQ((*t.structured)["invalid_utf8"], 1);
  const std::string wire = t.to_json().dump(-1, ' ', false, Json::error_handler_t::replace);
  EXPECT_NE(wire.find("caf\xef\xbf\xbd needle"), std::string::npos);
  EXPECT_TRUE(Json::accept(wire));
}

TEST_F(Search, BinaryFoundPastTheSniffedHeadIsSkipped) {
  std::string late(20000, 'x');
  late += "\nneedle\n";
  late += '\0';
  dir_.write("late.bin", late);
  const Json h = run({{"pattern", "needle"}, {"include", {"late.bin"}}});
  EXPECT_EQ(h["results"], 0);
  EXPECT_EQ(h["skipped"]["binary"], 1);
}

TEST_F(Search, BadRegexIsAClearError) {
  auto r = search_op({{"pattern", "foo(bar"}}, context_for(dir_));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("missing ): foo(bar"), std::string::npos) << r.error().why;
  EXPECT_NE(r.error().why.find("fixed_strings"), std::string::npos);
  auto g = search_op({{"pattern", "x"}, {"include", {"{a,b"}}}, context_for(dir_));
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().why.find("never closed"), std::string::npos);
  EXPECT_FALSE(search_op({{"pattern", "x"}, {"path", "missing"}}, context_for(dir_)));
}

// On one thread the walk searches the files it passes before it looks at
// the clock (with threads, what is still queued at the deadline is dropped:
// ALimitStopsTheThreadsWhereOneThreadStops).
TEST_F(Search, DeadlineCutsShortAndSaysSo) {
  files::OpContext ctx = context_for(dir_);
  ctx.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  for (int i = 0; i < 40; ++i) dir_.write("f" + std::to_string(i) + ".txt", "needle\n");
  auto r = search_with({{"pattern", "needle"}}, ctx, SearchTuning{1});
  ASSERT_TRUE(r);
  const protocol::ToolResult t = tools::format_search({}, std::move(*r));
  const Json& h = *t.structured;
  EXPECT_EQ(h["timed_out"], true);
  EXPECT_EQ(h["truncated"], true);
  EXPECT_EQ(h["stopped_by"], "deadline");
  EXPECT_TRUE(h.contains("next_offset"));
  EXPECT_NE(t.content[0].to_json()["text"].get<std::string>().find("time limit"),
            std::string::npos);
}

// Calling again from the same offset would redo the same walk: no
// next_offset, so a client paging on it stops.
TEST_F(Search, DeadlineBeforeAnyMatchOffersNoNextPage) {
  files::OpContext ctx = context_for(dir_);
  ctx.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  for (int i = 0; i < 40; ++i) dir_.write("f" + std::to_string(i) + ".txt", "hay\n");
  auto r = search_op({{"pattern", "needle"}, {"offset", 0}}, ctx);
  ASSERT_TRUE(r);
  const protocol::ToolResult t = tools::format_search({}, std::move(*r));
  const Json& h = *t.structured;
  EXPECT_EQ(h["timed_out"], true);
  EXPECT_EQ(h["stopped_by"], "deadline");
  EXPECT_EQ(h["results"], 0);
  EXPECT_FALSE(h.contains("next_offset")) << h.dump();
  const std::string text = t.content[0].to_json()["text"].get<std::string>();
  EXPECT_NE(text.find("before any match"), std::string::npos) << text;
  EXPECT_EQ(text.find("offset="), std::string::npos) << text;
}

TEST_F(Search, SymlinksAreCountedNotFollowed) {
  ASSERT_EQ(::symlink("src/b.h", dir_.at("link.h").c_str()), 0);
  ASSERT_EQ(::symlink(".", dir_.at("src/loop").c_str()), 0);
  const Json h = run({{"pattern", "needle"}});
  EXPECT_EQ(paths(h), (std::vector<std::string>{"src/a.c", "src/b.h"}));
  EXPECT_EQ(h["skipped"]["symlinks"], 2);
}

TEST_F(Search, UnreadableFilesAreCountedWithTheReason) {
  if (files::testing::running_as_root()) GTEST_SKIP() << "root reads every file";
  dir_.write("secret.txt", "needle\n", 0000);
  const Json h = run({{"pattern", "needle"}});
  EXPECT_EQ(h["skipped"]["unreadable"], 1);
  EXPECT_NE(h["skipped"]["unreadable_examples"][0].get<std::string>().find("secret.txt"),
            std::string::npos);
}

TEST_F(Search, AncestorIgnoreFilesApplyToASubdirectory) {
  dir_.write("src/debug.log", "needle\n");
  const Json h = run({{"pattern", "needle"}, {"path", "src"}});
  EXPECT_EQ(paths(h), (std::vector<std::string>{"a.c", "b.h"}));
  EXPECT_EQ(h["skipped"]["ignored"], 1);
}

TEST_F(Search, FilesModePagesByFile) {
  for (int i = 0; i < 5; ++i) dir_.write("p" + std::to_string(i) + ".txt", "needle\n");
  std::vector<std::string> all;
  std::size_t offset = 0;
  for (int page = 0; page < 10; ++page) {
    const Json h = run(
        {{"pattern", "needle"}, {"output_mode", "files"}, {"max_results", 2}, {"offset", offset}});
    for (const std::string& p : paths(h)) all.push_back(p);
    if (!h.contains("next_offset")) break;
    offset = h["next_offset"];
  }
  EXPECT_EQ(all, (std::vector<std::string>{"p0.txt", "p1.txt", "p2.txt", "p3.txt", "p4.txt",
                                           "src/a.c", "src/b.h"}));
}

TEST_F(Search, OffsetSkipsMatchesWithoutShowingThemAsContext) {
  dir_.write("pairs.txt", "hit 1\nhit 2\nplain\nhit 3\n");
  const Json h =
      run({{"pattern", "hit"}, {"path", "pairs.txt"}, {"offset", 1}, {"context_before", 2}});
  std::vector<std::pair<int, bool>> lines;
  for (const Json& l : h["files"][0]["lines"]) lines.emplace_back(l["line"], l["match"]);
  EXPECT_EQ(lines, (std::vector<std::pair<int, bool>>{{2, true}, {3, false}, {4, true}}));
  EXPECT_EQ(h["results"], 2);
}

TEST(SearchOutsideARepository, GitignoreNeedsARepositoryButDotIgnoreDoesNot) {
  TempDir dir;
  dir.write(".gitignore", "a.txt\n");
  dir.write(".ignore", "b.txt\n");
  dir.write("a.txt", "needle\n");
  dir.write("b.txt", "needle\n");
  auto r = search_op({{"pattern", "needle"}}, context_for(dir));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->header["files"].size(), 1u);
  EXPECT_EQ(r->header["files"][0]["path"], "a.txt");
  EXPECT_EQ(r->header["skipped"]["ignored"], 1);
}

// Every array schema has items; no $ref.
void expect_plain(const Json& schema, const std::string& where) {
  if (schema.is_object()) {
    if (schema.value("type", Json()) == "array") {
      EXPECT_TRUE(schema.contains("items")) << where;
    }
    for (const char* k : {"$ref", "$dynamicRef", "$defs"})
      EXPECT_FALSE(schema.contains(k)) << where;
    for (const auto& [k, v] : schema.items()) expect_plain(v, where + "." + k);
  } else if (schema.is_array()) {
    for (const Json& v : schema) expect_plain(v, where);
  }
}

TEST(SearchDescriptor, BothToolsHavePlainSchemas) {
  for (const protocol::ToolDescriptor& d :
       {tools::search_descriptor(), tools::find_files_descriptor()}) {
    EXPECT_FALSE(d.description.empty());
    EXPECT_EQ(d.input_schema["type"], "object");
    EXPECT_EQ(d.input_schema["additionalProperties"], false) << d.name;
    EXPECT_EQ(d.input_schema["required"], Json::array({"pattern"})) << d.name;
    expect_plain(d.input_schema, d.name + ".input");
    ASSERT_TRUE(d.output_schema);
    expect_plain(*d.output_schema, d.name + ".output");
    for (const char* hint : {"readOnlyHint", "destructiveHint", "openWorldHint"})
      EXPECT_TRUE(d.annotations.contains(hint)) << d.name << " " << hint;
  }
}

TEST(SearchDescriptor, PlainSchemas) {
  const protocol::ToolDescriptor d = tools::search_descriptor();
  EXPECT_EQ(d.name, "search");
  EXPECT_EQ(d.input_schema["additionalProperties"], false);
  EXPECT_EQ(d.input_schema["properties"]["include"]["items"]["type"], "string");
  EXPECT_EQ(d.output_schema->at("properties")["files"]["items"]["properties"]["lines"]["type"],
            "array");
  EXPECT_EQ(d.annotations["readOnlyHint"], true);
}

// Issue 15: integers beyond 64 bits were read through a float-to-integer
// conversion (undefined behaviour) and came out as 0 or 1.
TEST_F(Search, OutOfRangeIntegersAreErrorsNamingTheArgument) {
  for (const char* name :
       {"offset", "max_results", "context_before", "context_after", "max_line_length"}) {
    const Json args = {{"pattern", "needle"}, {name, 1e30}};
    auto r = search_op(args, context_for(dir_));
    ASSERT_FALSE(r) << name;
    EXPECT_NE(r.error().to_string().find(std::string("invalid argument ") + name),
              std::string::npos)
        << r.error().to_string();
    const auto why = protocol::check_schema(args, tools::search_descriptor().input_schema);
    ASSERT_TRUE(why) << name;
    EXPECT_NE(why->find(std::string("arguments.") + name), std::string::npos) << *why;
  }
}

}  // namespace
}  // namespace brig::search
