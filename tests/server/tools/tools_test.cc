// The shipped tools end to end through brig-test-server: file operations run
// in its jailed worker and commands in fresh jails, so what the policy hides
// or makes read-only is refused by the kernel, and the model is told which
// rule refused it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "protocol/json_rpc.h"
#include "protocol/text.h"
#include "tests/server/test_support.h"

namespace brig::tools::testing {
using namespace server::testing;
namespace {

void write_host_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One brig-test-server serving a temporary workspace over stdio, with HOME
// pointing at a temporary home so the test can plant "secrets" there.
class Tools : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("HOME");
    old_home_ = old ? old : "";
    ::setenv("HOME", home_.path().c_str(), 1);
    child_.emplace(std::vector<std::string>{sibling_binary("brig-test-server"), "serve",
                                            "--workspace", ws_.path()});
    client_.emplace(child_->take_client());
    ASSERT_TRUE(initialize(*client_));
  }
  void TearDown() override {
    if (client_) client_->close_write();
    if (child_) child_->wait();
    ::setenv("HOME", old_home_.c_str(), 1);
  }

  // A .git with hooks/ and config in the workspace, then a new server.
  void make_git_repository_and_restart() {
    ::mkdir(ws_.file(".git").c_str(), 0755);
    ::mkdir(ws_.file(".git/hooks").c_str(), 0755);
    write_host_file(ws_.file(".git/config"), "[core]\n");
    write_host_file(ws_.file(".git/HEAD"), "ref: refs/heads/main\n");
    client_->close_write();
    child_->wait();
    child_.emplace(std::vector<std::string>{sibling_binary("brig-test-server"), "serve",
                                            "--workspace", ws_.path()});
    client_.emplace(child_->take_client());
    ASSERT_TRUE(initialize(*client_));
  }

  // A new server with a policy file (outside the workspace, where a jail
  // could not rewrite it).
  void restart_with_policy(const std::string& toml) {
    write_host_file(policies_.file("p.toml"), toml);
    client_->close_write();
    child_->wait();
    child_.emplace(std::vector<std::string>{sibling_binary("brig-test-server"), "serve",
                                            "--workspace", ws_.path(), "--policy",
                                            policies_.file("p.toml")});
    client_.emplace(child_->take_client());
    ASSERT_TRUE(initialize(*client_));
  }

  // The pid of the file worker serving this workspace (0: none, or several).
  // The file workers running for this test's workspace, sorted.
  std::vector<pid_t> worker_pids() const {
    auto pids = pids_with_cmdline("brig-worker --workspace " + ws_.path());
    std::sort(pids.begin(), pids.end());
    return pids;
  }

  // The result of one tools/call.
  Json call(std::string_view tool, Json args) {
    const int id = next_id_++;
    EXPECT_TRUE(client_->send(tool_call(id, tool, std::move(args))));
    auto response = client_->read_response(id);
    EXPECT_TRUE(response) << "no answer to " << tool;
    if (!response) return Json::object();
    EXPECT_TRUE(response->contains("result")) << response->dump();
    return response->value("result", Json::object());
  }
  static std::string text_of(const Json& result) {
    std::string text;
    for (const Json& c : result.value("content", Json::array()))
      if (c.value("type", "") == "text") text += c.value("text", "");
    return text;
  }
  static bool is_error(const Json& result) { return result.value("isError", false); }

  TempDir ws_;
  TempDir home_;
  TempDir policies_;
  std::string old_home_;
  std::optional<Child> child_;
  std::optional<LineClient> client_;
  int next_id_ = 10;
};

TEST_F(Tools, WriteReadEditAndListAWorkspaceFile) {
  Json w = call(
      "write_file",
      {{"path", "notes/plan.txt"}, {"content", "one\ntwo\nthree\n"}, {"create_parents", true}});
  ASSERT_FALSE(is_error(w)) << w.dump();
  EXPECT_EQ(read_host_file(ws_.file("notes/plan.txt")), "one\ntwo\nthree\n");

  Json r = call("read_file", {{"path", "notes/plan.txt"}, {"offset", 2}, {"limit", 1}});
  ASSERT_FALSE(is_error(r)) << r.dump();
  EXPECT_EQ(r.at("content").at(0).at("text"), "two\n");
  EXPECT_FALSE(r.at("structuredContent").contains("content"));  // one copy

  Json e = call("edit_file", {{"path", ws_.file("notes/plan.txt")},
                              {"edits", {{{"old_text", "two"}, {"new_text", "2"}}}}});
  ASSERT_FALSE(is_error(e)) << e.dump();
  EXPECT_NE(text_of(e).find("-two\n+2\n"), std::string::npos) << text_of(e);
  EXPECT_EQ(read_host_file(ws_.file("notes/plan.txt")), "one\n2\nthree\n");

  Json l = call("list_directory", {{"depth", 2}});
  ASSERT_FALSE(is_error(l)) << l.dump();
  std::vector<std::string> paths;
  for (const Json& entry : l.at("structuredContent").at("entries"))
    paths.push_back(entry.at("path"));
  EXPECT_EQ(paths, (std::vector<std::string>{"notes", "notes/plan.txt"}));
}

TEST_F(Tools, MissingFileAndAmbiguousEditAreErrorsThatChangeNothing) {
  Json missing = call("read_file", {{"path", "nope.txt"}});
  EXPECT_TRUE(is_error(missing));
  EXPECT_NE(text_of(missing).find("nope.txt"), std::string::npos) << text_of(missing);

  write_host_file(ws_.file("a.txt"), "x x\n");
  Json ambiguous =
      call("edit_file", {{"path", "a.txt"}, {"edits", {{{"old_text", "x"}, {"new_text", "y"}}}}});
  EXPECT_TRUE(is_error(ambiguous));
  EXPECT_EQ(read_host_file(ws_.file("a.txt")), "x x\n");
}

TEST_F(Tools, TheRealHomeIsNotVisibleAndTheDenialNamesTheRule) {
  ::mkdir(home_.file(".ssh").c_str(), 0700);
  write_host_file(home_.file(".ssh/id_ed25519"), "PRIVATE KEY");
  write_host_file(home_.file("diary.txt"), "secret");

  Json key = call("read_file", {{"path", home_.file(".ssh/id_ed25519")}});
  EXPECT_TRUE(is_error(key));
  EXPECT_EQ(text_of(key).find("PRIVATE KEY"), std::string::npos);
  EXPECT_NE(text_of(key).find("filesystem.hidden"), std::string::npos) << text_of(key);

  Json diary = call("read_file", {{"path", home_.file("diary.txt")}});
  EXPECT_TRUE(is_error(diary));
  EXPECT_EQ(text_of(diary).find("secret"), std::string::npos);
  EXPECT_NE(text_of(diary).find("private_home"), std::string::npos) << text_of(diary);
}

TEST_F(Tools, PathsOutOfTheWorkspaceThroughSymlinksAndDotDotStayOut) {
  TempDir outside;
  write_host_file(outside.file("secret.txt"), "outside secret");
  ASSERT_EQ(::symlink(outside.path().c_str(), ws_.file("link").c_str()), 0);

  for (const std::string& path :
       {std::string("link/secret.txt"), "../" + outside.path().substr(5) + "/secret.txt",
        outside.file("secret.txt")}) {
    Json r = call("read_file", {{"path", path}});
    EXPECT_TRUE(is_error(r)) << path << ": " << r.dump();
    EXPECT_EQ(text_of(r).find("outside secret"), std::string::npos) << path;
  }
  Json w = call("write_file", {{"path", "link/planted.txt"}, {"content", "x"}});
  EXPECT_TRUE(is_error(w));
  EXPECT_NE(::access(outside.file("planted.txt").c_str(), F_OK), 0);
}

// Issue 15: write_file /tmp/x.sh succeeded in the file worker's own /tmp,
// and exec sh /tmp/x.sh did not find it. The file tools refuse it, saying
// why; the workspace is where the two meet.
TEST_F(Tools, TmpIsRefusedByTheFileToolsAndTheWorkspaceIsShared) {
  const std::string tmp = "/tmp/brig-issue15-" + std::to_string(::getpid()) + ".sh";
  Json w = call("write_file", {{"path", tmp}, {"content", "echo hi\n"}});
  EXPECT_TRUE(is_error(w)) << w.dump();
  EXPECT_NE(text_of(w).find("Use a path in the workspace (" + ws_.path() + ")"), std::string::npos)
      << text_of(w);
  EXPECT_NE(::access(tmp.c_str(), F_OK), 0);

  ASSERT_FALSE(is_error(call("write_file", {{"path", "x.sh"}, {"content", "echo hi\n"}})));
  Json ran = call("exec", {{"command", "sh x.sh"}});
  EXPECT_FALSE(is_error(ran)) << ran.dump();
  EXPECT_NE(text_of(ran).find("hi"), std::string::npos) << text_of(ran);
}

TEST_F(Tools, AFileReplacedByASymlinkBetweenCallsCannotLeakTheTarget) {
  TempDir outside;
  write_host_file(outside.file("secret.txt"), "outside secret");
  write_host_file(ws_.file("f.txt"), "harmless");
  ASSERT_FALSE(is_error(call("read_file", {{"path", "f.txt"}})));
  ASSERT_EQ(::unlink(ws_.file("f.txt").c_str()), 0);
  ASSERT_EQ(::symlink(outside.file("secret.txt").c_str(), ws_.file("f.txt").c_str()), 0);
  Json r = call("read_file", {{"path", "f.txt"}});
  EXPECT_TRUE(is_error(r)) << r.dump();
  EXPECT_EQ(text_of(r).find("outside secret"), std::string::npos);
}

TEST_F(Tools, ReadOnlySystemPathsRefuseWritesWithTheRule) {
  Json r = call("write_file", {{"path", "/usr/brig-planted"}, {"content", "x"}});
  EXPECT_TRUE(is_error(r));
  EXPECT_NE(text_of(r).find("read_only"), std::string::npos) << text_of(r);
  EXPECT_NE(::access("/usr/brig-planted", F_OK), 0);
}

TEST_F(Tools, GitMetadataIsReadOnlyInTheJail) {
  ASSERT_NO_FATAL_FAILURE(make_git_repository_and_restart());

  Json hook = call("write_file", {{"path", ".git/hooks/pre-commit"}, {"content", "#!/bin/sh\n"}});
  EXPECT_TRUE(is_error(hook)) << hook.dump();
  EXPECT_NE(::access(ws_.file(".git/hooks/pre-commit").c_str(), F_OK), 0);
  Json config =
      call("edit_file",
           {{"path", ".git/config"},
            {"edits", {{{"old_text", "[core]"}, {"new_text", "[core]\n\thooksPath = /tmp"}}}}});
  EXPECT_TRUE(is_error(config)) << config.dump();
  EXPECT_EQ(read_host_file(ws_.file(".git/config")), "[core]\n");
  // All of .git is read-only (docs/jail.md, "git"), and the refusal says why.
  Json head = call("write_file", {{"path", ".git/HEAD"}, {"content", "ref: refs/heads/dev\n"}});
  EXPECT_TRUE(is_error(head)) << head.dump();
  EXPECT_NE(text_of(head).find("dangerously_writable_git"), std::string::npos) << text_of(head);
  Json commondir = call("write_file", {{"path", ".git/commondir"}, {"content", "../evil\n"}});
  EXPECT_TRUE(is_error(commondir)) << commondir.dump();
  EXPECT_NE(::access(ws_.file(".git/commondir").c_str(), F_OK), 0);
}

// The file worker lives long; a .git (or a hidden file) that appears after
// it started must not stay writable (or readable) through it.
TEST_F(Tools, GitMadeAfterTheWorkerStartedIsReadOnlyToo) {
  Json warm = call("write_file", {{"path", "warm.txt"}, {"content", "x"}});
  ASSERT_FALSE(is_error(warm)) << warm.dump();
  ::mkdir(ws_.file(".git").c_str(), 0755);
  write_host_file(ws_.file(".git/HEAD"), "ref: refs/heads/main\n");
  Json planted = call("write_file", {{"path", ".git/commondir"}, {"content", "../evil\n"}});
  EXPECT_TRUE(is_error(planted)) << planted.dump();
  EXPECT_NE(::access(ws_.file(".git/commondir").c_str(), F_OK), 0);
}

// The same for a hidden file the host writes after the worker started: the
// next call gets a worker whose jail masks it. And the check before each
// call only restarts the worker when the host changed what the planner
// asked about: the workspace's ordinary files, which the jail writes all the
// time, are not among that (docs/server.md, "The file worker's view").
TEST_F(Tools, HiddenFileWrittenAfterTheWorkerStartedIsHiddenToo) {
  ASSERT_NO_FATAL_FAILURE(restart_with_policy(
      "extends = \"default\"\n[filesystem]\nhidden_add = [\"" + ws_.path() + "/.env\"]\n"));
  Json warm = call("write_file", {{"path", "warm.txt"}, {"content", "x"}});
  ASSERT_FALSE(is_error(warm)) << warm.dump();
  // The files lane's two workers (the second starts in the background).
  std::vector<pid_t> first;
  ASSERT_TRUE(wait_until([&] { return (first = worker_pids()).size() == 2; }));
  for (int i = 0; i < 3; ++i) {
    Json w = call("write_file", {{"path", "more" + std::to_string(i) + ".txt"}, {"content", "y"}});
    ASSERT_FALSE(is_error(w)) << w.dump();
    ASSERT_FALSE(is_error(call("read_file", {{"path", "warm.txt"}})));
  }
  EXPECT_EQ(worker_pids(), first) << "a worker was replaced though nothing it shows changed";

  write_host_file(ws_.file(".env"), "TOKEN=brig-secret-42\n");
  Json read = call("read_file", {{"path", ".env"}});
  EXPECT_EQ(text_of(read).find("brig-secret-42"), std::string::npos) << read.dump();
  EXPECT_NE(worker_pids(), first);
}

TEST_F(Tools, SearchAndFindFilesFindWhatMattersAndSayWhatTheySkipped) {
  ::mkdir(ws_.file("src").c_str(), 0755);
  ::mkdir(ws_.file("build").c_str(), 0755);
  // As ripgrep does, .gitignore files count inside a git repository.
  ::mkdir(ws_.file(".git").c_str(), 0755);
  write_host_file(ws_.file(".gitignore"), "build/\n");
  write_host_file(ws_.file("src/a.c"), "int needle = 1;\n");
  write_host_file(ws_.file("build/gen.c"), "int needle = 2;\n");
  write_host_file(ws_.file("src/blob.bin"), std::string("needle\0binary", 13));

  Json found = call("search", {{"pattern", "needle"}});
  ASSERT_FALSE(is_error(found)) << found.dump();
  const Json& s = found.at("structuredContent");
  ASSERT_EQ(s.at("files").size(), 1u) << s.dump();
  EXPECT_EQ(s.at("files")[0].at("path"), "src/a.c");
  EXPECT_EQ(s.at("skipped").at("ignored"), 1);
  EXPECT_EQ(s.at("skipped").at("binary"), 1);
  EXPECT_NE(text_of(found).find("ignored"), std::string::npos) << text_of(found);

  Json none = call("search", {{"pattern", "absent-everywhere"}});
  ASSERT_FALSE(is_error(none));
  EXPECT_NE(text_of(none).find("Skipped"), std::string::npos)
      << "never a bare \"no matches\": " << text_of(none);

  Json all =
      call("search", {{"pattern", "needle"}, {"gitignore", false}, {"output_mode", "files"}});
  ASSERT_FALSE(is_error(all)) << all.dump();
  EXPECT_EQ(all.at("structuredContent").at("files").size(), 2u) << all.dump();

  Json files = call("find_files", {{"pattern", "**/*.c"}});
  ASSERT_FALSE(is_error(files)) << files.dump();
  ASSERT_EQ(files.at("structuredContent").at("files").size(), 1u);
  EXPECT_EQ(files.at("structuredContent").at("files")[0].at("path"), "src/a.c");

  Json bad = call("search", {{"pattern", "(unclosed"}});
  EXPECT_TRUE(is_error(bad));
  EXPECT_NE(text_of(bad).find("missing )"), std::string::npos) << text_of(bad);
}

// Issue 15: a file name that is not UTF-8 is listed so that the name shown
// names the same file when passed back: each byte that is not part of a
// UTF-8 character (and each byte of U+F780..U+F7FF) as U+F700 + byte.
TEST_F(Tools, NamesThatAreNotUtf8AreListedAsTheyCanBeOpened) {
  const std::string odd = "a\xff\xfe.txt";       // not UTF-8
  const std::string reserved = "b\xef\x9e\x80";  // U+F780, which the escape reserves
  const std::string dir = "d\xc3";               // a stray lead byte
  // How brig shows them.
  const std::string odd_shown = "a\xef\x9f\xbf\xef\x9f\xbe.txt";
  const std::string reserved_shown = "b\xef\x9f\xaf\xef\x9e\x9e\xef\x9e\x80";
  const std::string dir_shown = "d\xef\x9f\x83";
  ASSERT_EQ(::mkdir(ws_.file(dir).c_str(), 0755), 0);
  write_host_file(ws_.file(odd), "odd one\n");
  write_host_file(ws_.file(reserved), "reserved one\n");
  write_host_file(ws_.file("a\xc3\xbf\xc3\xbe.txt"), "decoy\n");  // "aÿþ.txt"
  write_host_file(ws_.file(dir + "/inner.txt"), "inner needle\n");

  Json l = call("list_directory", {{"depth", 2}});
  ASSERT_FALSE(is_error(l)) << l.dump();
  std::vector<std::string> paths;
  for (const Json& entry : l.at("structuredContent").at("entries"))
    paths.push_back(entry.at("path"));
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> expected = {odd_shown, "a\xc3\xbf\xc3\xbe.txt", reserved_shown,
                                       dir_shown, dir_shown + "/inner.txt"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(paths, expected);
  EXPECT_NE(text_of(l).find(odd_shown), std::string::npos) << text_of(l);

  // The names as listed open the files they name.
  Json r = call("read_file", {{"path", odd_shown}});
  ASSERT_FALSE(is_error(r)) << r.dump();
  EXPECT_EQ(r.at("content").at(0).at("text"), "odd one\n");
  EXPECT_EQ(r.at("structuredContent").at("path"), ws_.path() + "/" + odd_shown);
  Json e = call("edit_file", {{"path", reserved_shown},
                              {"edits", {{{"old_text", "reserved"}, {"new_text", "edited"}}}}});
  ASSERT_FALSE(is_error(e)) << e.dump();
  EXPECT_EQ(read_host_file(ws_.file(reserved)), "edited one\n");
  Json w = call("write_file", {{"path", dir_shown + "/new.txt"}, {"content", "new\n"}});
  ASSERT_FALSE(is_error(w)) << w.dump();
  EXPECT_EQ(read_host_file(ws_.file(dir + "/new.txt")), "new\n");
  EXPECT_EQ(read_host_file(ws_.file("a\xc3\xbf\xc3\xbe.txt")), "decoy\n");

  Json found = call("find_files", {{"pattern", "**/*.txt"}});
  ASSERT_FALSE(is_error(found)) << found.dump();
  std::vector<std::string> names;
  for (const Json& f : found.at("structuredContent").at("files")) names.push_back(f.at("path"));
  EXPECT_NE(std::find(names.begin(), names.end(), odd_shown), names.end()) << found.dump();
  EXPECT_NE(std::find(names.begin(), names.end(), dir_shown + "/inner.txt"), names.end());

  // Globs take the same spelling and match the names' bytes.
  Json globbed = call("find_files", {{"pattern", "*\xef\x9f\xbf*"}});
  ASSERT_FALSE(is_error(globbed)) << globbed.dump();
  ASSERT_EQ(globbed.at("structuredContent").at("files").size(), 1u) << globbed.dump();
  EXPECT_EQ(globbed.at("structuredContent").at("files")[0].at("path"), odd_shown);
  Json included = call("search", {{"pattern", "one"}, {"include", {"a\xef\x9f\xbf*"}}});
  ASSERT_FALSE(is_error(included)) << included.dump();
  ASSERT_EQ(included.at("structuredContent").at("files").size(), 1u) << included.dump();
  EXPECT_EQ(included.at("structuredContent").at("files")[0].at("path"), odd_shown);

  Json hit = call("search", {{"pattern", "needle"}});
  ASSERT_FALSE(is_error(hit)) << hit.dump();
  ASSERT_EQ(hit.at("structuredContent").at("files").size(), 1u) << hit.dump();
  const std::string hit_path = hit.at("structuredContent").at("files")[0].at("path");
  EXPECT_EQ(hit_path, dir_shown + "/inner.txt");
  Json again = call("read_file", {{"path", hit_path}});
  ASSERT_FALSE(is_error(again)) << again.dump();
  EXPECT_EQ(again.at("content").at(0).at("text"), "inner needle\n");

  // exec's cwd takes the same spelling.
  Json run = call("exec", {{"command", "cat inner.txt"}, {"cwd", dir_shown}});
  ASSERT_FALSE(is_error(run)) << run.dump();
  EXPECT_NE(text_of(run).find("inner needle"), std::string::npos) << text_of(run);

  // A second spelling of a valid name ("é" as the escapes of its bytes) is
  // refused, not taken as é.
  Json twice = call("write_file", {{"path", "\xef\x9f\x83\xef\x9e\xa9.txt"}, {"content", "x"}});
  EXPECT_TRUE(is_error(twice)) << twice.dump();
  EXPECT_NE(text_of(twice).find("write that character itself"), std::string::npos)
      << text_of(twice);
  // A path in an error is shown the same way, never as U+FFFD.
  Json missing = call("read_file", {{"path", "zz\xef\x9f\xbf"}});
  EXPECT_TRUE(is_error(missing));
  EXPECT_NE(text_of(missing).find("zz\xef\x9f\xbf"), std::string::npos) << text_of(missing);
  EXPECT_EQ(text_of(missing).find("\xef\xbf\xbd"), std::string::npos) << text_of(missing);
}

// Issue 16: what the client receives carries large text once: a 1 MiB file
// read whole is at most 1.1 MiB on the wire, and so are a search's matching
// lines and a command's output for their size.
TEST_F(Tools, LargeResultsTravelOnce) {
  std::string text;
  for (int i = 0; text.size() < (1u << 20); ++i)
    text += "    const int value_" + std::to_string(i) + " = compute(argument, " +
            std::to_string(i) + ") + offset;\n";
  text.resize(1u << 20);
  write_host_file(ws_.file("big.cc"), text);
  Json r = call("read_file", {{"path", "big.cc"}, {"limit", 1 << 30}});
  ASSERT_FALSE(is_error(r)) << protocol::clip(r.dump(), 2000);
  EXPECT_EQ(r.at("content").at(0).at("text"), text);
  EXPECT_LE(protocol::encode(r).size(), text.size() * 11 / 10);

  // Every line matches: the text block holds them all, structuredContent
  // only their numbers.
  Json found = call("search", {{"pattern", "compute"}, {"path", "big.cc"}, {"max_results", 5000}});
  ASSERT_FALSE(is_error(found)) << protocol::clip(found.dump(), 2000);
  const std::size_t shown = text_of(found).size();
  ASSERT_GT(shown, 200u * 1024);
  // Each line keeps {"line":N,"match":true} there; twice the text would be
  // over 2.
  EXPECT_LE(protocol::encode(found).size(), shown * 16 / 10);
  for (const Json& l : found.at("structuredContent").at("files").at(0).at("lines"))
    ASSERT_FALSE(l.contains("text"));

  Json out = call("exec", {{"command", "head -c 200000 big.cc"}, {"max_output", 256 * 1024}});
  ASSERT_FALSE(is_error(out)) << protocol::clip(out.dump(), 2000);
  EXPECT_EQ(result_stream(out, "stdout"),
            text.substr(0, 200000) + (text[199999] == '\n' ? "" : "\n"));
  EXPECT_LE(protocol::encode(out).size(), 200000u * 11 / 10);
}

TEST_F(Tools, ExecRunsInTheJailAndReportsExitCodesAndTimeouts) {
  Json ok = call("exec", {{"command", "echo out; echo err >&2; id -u"}});
  ASSERT_FALSE(is_error(ok)) << ok.dump();
  EXPECT_EQ(ok.at("structuredContent").at("exit_code"), 0);
  EXPECT_EQ(result_stream(ok, "stdout"), "out\n" + std::to_string(::getuid()) + "\n");
  EXPECT_EQ(result_stream(ok, "stderr"), "err\n");

  Json failed = call("exec", {{"argv", {"sh", "-c", "echo why; exit 3"}}});
  EXPECT_TRUE(is_error(failed));
  EXPECT_EQ(failed.at("structuredContent").at("exit_code"), 3);
  EXPECT_EQ(result_stream(failed, "stdout"), "why\n");

  Json slow = call("exec", {{"command", "sleep 60"}, {"timeout", 1}});
  EXPECT_TRUE(is_error(slow));
  EXPECT_EQ(slow.at("structuredContent").at("timed_out"), true) << slow.dump();
}

TEST_F(Tools, ACancelledCommandLeavesNoProcess) {
  // The shell that runs the command keeps the tag in its argv while it waits.
  const std::string tag = "brig-cancel-" + std::to_string(::getpid());
  ASSERT_TRUE(client_->send(tool_call(1, "exec", {{"command", "sleep 300; echo " + tag}})));
  ASSERT_TRUE(wait_until([&] { return !pids_with_cmdline(tag).empty(); }))
      << "the command never started";
  ASSERT_TRUE(client_->send(cancel_notification(1)));
  EXPECT_TRUE(wait_until([&] { return pids_with_cmdline(tag).empty(); }))
      << "the cancelled command still runs";
  // The server goes on, and never answers the cancelled call.
  std::vector<Json> others;
  ASSERT_TRUE(client_->send(tool_call(2, "exec", {{"command", "true"}})));
  ASSERT_TRUE(client_->read_response(2, &others));
  for (const Json& m : others) EXPECT_NE(m.value("id", Json()), Json(1)) << m.dump();
}

TEST_F(Tools, ACancelledSearchStopsItsWorkerAndTheNextSearchGetsAFreshOne) {
  // A search long enough to cancel: every file under /usr, which the policy
  // shows read-only.
  ASSERT_TRUE(client_->send(
      tool_call(1, "search",
                {{"pattern", "(a|b|c)+[x-z]{3}q$"}, {"path", "/usr"}, {"output_mode", "count"}})));
  // The search lane's two workers: the search's, and the one its first call
  // starts in the background.
  std::vector<pid_t> workers;
  ASSERT_TRUE(wait_until([&] { return (workers = worker_pids()).size() == 2; }));
  ASSERT_TRUE(client_->send(cancel_notification(1)));
  const auto alive = [&] {
    return std::count_if(workers.begin(), workers.end(), [](pid_t p) { return ::kill(p, 0) == 0; });
  };
  EXPECT_TRUE(wait_until([&] { return alive() == 1; }))
      << "the search's worker still runs after the cancel";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(alive(), 1) << "the cancel killed the worker that ran no search too";
  write_host_file(ws_.file("f.txt"), "findme\n");
  Json again = call("search", {{"pattern", "findme"}});
  ASSERT_FALSE(is_error(again)) << again.dump();
  EXPECT_EQ(again.at("structuredContent").at("files").size(), 1u);
}

TEST_F(Tools, RenamingGitAwayToPlantAHookFailsInTheKernel) {
  ASSERT_NO_FATAL_FAILURE(make_git_repository_and_restart());

  Json attack = call("exec", {{"command",
                               "mv .git .git-old; mkdir -p .git/hooks; "
                               "printf '#!/bin/sh\\necho owned\\n' > .git/hooks/pre-commit; "
                               "chmod +x .git/hooks/pre-commit"}});
  EXPECT_NE(::access(ws_.file(".git/hooks/pre-commit").c_str(), F_OK), 0)
      << "a hook was planted: " << attack.dump();
  EXPECT_NE(::access(ws_.file(".git-old").c_str(), F_OK), 0) << ".git was renamed away";
  EXPECT_EQ(read_host_file(ws_.file(".git/config")), "[core]\n");
  // Control: the same shell may write elsewhere in the workspace.
  Json control = call("exec", {{"command", "mkdir -p x/hooks && echo ok > x/hooks/pre-commit"}});
  EXPECT_FALSE(is_error(control)) << control.dump();
  EXPECT_EQ(read_host_file(ws_.file("x/hooks/pre-commit")), "ok\n");
}

TEST_F(Tools, AJobThatYieldedEndsWithTheStdioServer) {
  const std::string tag = "brig-yield-" + std::to_string(::getpid());
  Json yielded = call("exec", {{"command", "sleep 300; echo " + tag}, {"yield_after", 0.2}});
  ASSERT_FALSE(is_error(yielded)) << yielded.dump();
  EXPECT_NE(text_of(yielded).find("still running"), std::string::npos) << text_of(yielded);
  ASSERT_FALSE(pids_with_cmdline(tag).empty()) << "the job is not running";
  client_->close_write();
  const auto status = child_->wait();
  ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_TRUE(wait_until([&] { return pids_with_cmdline(tag).empty(); }))
      << "the job outlived the server";
  child_.reset();
  client_.reset();
}

TEST_F(Tools, ALongSearchDoesNotHoldUpFileCalls) {
  write_host_file(ws_.file("f.txt"), "quick\n");
  // A search over every file under /usr: seconds of work.
  ASSERT_TRUE(client_->send(
      tool_call(1, "search",
                {{"pattern", "(a|b|c)+[x-z]{3}q$"}, {"path", "/usr"}, {"output_mode", "count"}})));
  ASSERT_TRUE(wait_until(
      [&] { return !pids_with_cmdline("brig-worker --workspace " + ws_.path()).empty(); }));
  ASSERT_TRUE(client_->send(tool_call(2, "read_file", {{"path", "f.txt"}})));
  std::vector<Json> before;
  auto read = client_->read_response(2, &before);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->at("result").at("content").at(0).at("text"), "quick\n");
  for (const Json& m : before)
    EXPECT_NE(m.value("id", Json()), Json(1)) << "the search finished first; make it longer";
  ASSERT_TRUE(client_->send(cancel_notification(1)));
}

TEST_F(Tools, ATestSuiteCanServeOnTheJailsOwnLoopbackButReachNothingOutside) {
  // perl-base is in every Debian system; IO::Socket::INET is part of it.
  const std::string serve_and_connect =
      "perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(Listen => 1, LocalAddr => "
      "\"127.0.0.1:0\") or die \"bind: $!\"; IO::Socket::INET->new(PeerAddr => "
      "\"127.0.0.1:\" . $s->sockport) or die \"connect: $!\"; print \"ok\\n\"'";
  Json local = call("exec", {{"command", serve_and_connect}});
  EXPECT_FALSE(is_error(local)) << local.dump();
  EXPECT_EQ(result_stream(local, "stdout"), "ok\n");

  // A listener on the host's loopback is another network namespace's.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  Json host = call("exec", {{"command",
                             "perl -MIO::Socket::INET -e 'IO::Socket::INET->new("
                             "PeerAddr => \"127.0.0.1:" +
                                 port + "\") or die \"connect: $!\\n\"'"}});
  EXPECT_TRUE(is_error(host)) << host.dump();
  EXPECT_NE(result_stream(host, "stderr").find("connect:"), std::string::npos) << host.dump();
  ::close(listener);
}

}  // namespace
}  // namespace brig::tools::testing
