// The mount planner as a pure function: a fake host, the whole plan compared.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "jail/steps/mounts.h"

namespace brig::jail::mounts {
namespace {

using ::testing::ElementsAre;

class FakeHost final : public HostView {
 public:
  std::map<std::string, Type> types;
  std::map<std::string, std::string> links;  // path -> text (relative to its directory)
  bool implied_dirs = false;  // a path not listed is a directory when a listed one lies below it
  Type type(const std::string& p) const override {
    auto it = types.find(p);
    if (it != types.end()) return it->second;
    if (!implied_dirs) return Type::missing;
    const std::string below = p == "/" ? p : p + "/";
    it = types.lower_bound(below);
    return it != types.end() && it->first.starts_with(below) ? Type::dir : Type::missing;
  }
  std::vector<std::string> proc_files;  // proc_root_only()
  // realpath: every component that is a link replaced by its text (absolute,
  // or relative to its directory, without ".."); the result must be listed
  // (directories on the way need not be).
  std::optional<std::string> resolve(const std::string& p) const override {
    std::string out;
    for (size_t pos = 1; pos <= p.size();) {
      size_t end = p.find('/', pos);
      if (end == std::string::npos) end = p.size();
      std::string next = out + "/" + p.substr(pos, end - pos);
      pos = end + 1;
      if (auto l = links.find(next); l != links.end()) {
        auto r = resolve(l->second.starts_with('/') ? l->second : out + "/" + l->second);
        if (!r) return std::nullopt;
        next = *r;
      }
      out = next;
    }
    if (out.empty()) out = "/";
    if (type(out) == Type::missing) return std::nullopt;
    return out;
  }
  std::vector<std::string> proc_root_only() const override { return proc_files; }
  std::vector<std::pair<std::string, Type>> entries(const std::string& dir) const override {
    std::vector<std::pair<std::string, Type>> out;
    for (const auto& [path, t] : types) {
      const size_t slash = path.rfind('/');
      if (slash != std::string::npos && path.substr(0, slash == 0 ? 1 : slash) == dir &&
          path != dir)
        out.emplace_back(path.substr(slash + 1), t);
    }
    return out;
  }
  std::optional<std::string> link_text(const std::string& p) const override {
    auto l = links.find(p);
    if (l == links.end()) return std::nullopt;
    return l->second;
  }
};

std::string attrs(uint64_t a) {
  std::string s;
  if (a & MOUNT_ATTR_RDONLY) s += "ro,";
  if (a & MOUNT_ATTR_NOSUID) s += "nosuid,";
  if (a & MOUNT_ATTR_NODEV) s += "nodev,";
  if (a & MOUNT_ATTR_NOEXEC) s += "noexec,";
  if (!s.empty()) s.pop_back();
  return s;
}

// One readable line per op.
std::vector<std::string> render(const Plan& p) {
  std::vector<std::string> out;
  for (const Op& op : p.ops) {
    switch (op.kind) {
      case Op::Kind::make_private:
        out.push_back("private " + op.path);
        break;
      case Op::Kind::mount:
        out.push_back(op.source + " " + op.path + " " + op.data);
        break;
      case Op::Kind::enter_scratch:
        out.push_back("enter_scratch " + op.path);
        break;
      case Op::Kind::mkdir:
        out.push_back("mkdir " + op.path);
        break;
      case Op::Kind::touch:
        out.push_back("touch " + op.path);
        break;
      case Op::Kind::symlink:
        out.push_back("symlink " + op.path + " -> " + op.source);
        break;
      case Op::Kind::bind:
        out.push_back("bind " + op.source + " " + op.path + " " + attrs(op.attr) +
                      (op.recursive ? " rec" : "") + (op.optional ? " opt" : ""));
        break;
      case Op::Kind::set_attr:
        out.push_back("attr " + op.path + " " + attrs(op.attr));
        break;
      case Op::Kind::mask:
        out.push_back("mask " + op.path);
        break;
      case Op::Kind::file:
        out.push_back("file " + op.source + " " + op.path + " " + op.data);
        break;
      case Op::Kind::enter_root:
        out.push_back("enter_root " + op.path);
        break;
      case Op::Kind::git_state:
        out.push_back("git " + op.path + " " + op.data);
        break;
      case Op::Kind::attach:
        out.push_back("attach " + op.source + " " + op.path + " " + attrs(op.attr) + " fd" +
                      std::to_string(op.fd) + (op.optional ? " opt" : ""));
        break;
    }
  }
  return out;
}

Mount bind(std::string src, std::string dst, bool writable = false) {
  Mount m;
  m.source = std::move(src);
  m.target = std::move(dst);
  m.writable = writable;
  return m;
}

// A policy's hidden path, as the policy planner hands it on.
Mount hidden_at(std::string path) {
  Mount m;
  m.kind = Mount::Kind::mask;
  m.target = std::move(path);
  m.optional = true;
  return m;
}

FakeHost debian_host() {
  FakeHost h;
  h.types = {{"/tmp", HostView::Type::dir},
             {"/usr", HostView::Type::dir},
             {"/usr/lib", HostView::Type::dir},
             {"/lib", HostView::Type::symlink},
             {"/etc", HostView::Type::dir},
             {"/etc/hosts", HostView::Type::file},
             {"/home/u/ws", HostView::Type::dir},
             {"/home/u/ws/.git", HostView::Type::dir},
             {"/home/u/ws/.git/hooks", HostView::Type::dir},
             {"/home/u/ws/.git/config", HostView::Type::file},
             {"/home/u/ws/.env", HostView::Type::file}};
  h.links = {{"/lib", "usr/lib"}};
  return h;
}

TEST(MountPlanTest, EmptyMountListUsesTheHostsRoot) {
  JailSpec s;
  EXPECT_TRUE(plan(s, debian_host())->ops.empty());
}

TEST(MountPlanTest, WholePlanForSystemDirsWorkspaceAndGit) {
  JailSpec s;
  s.identity.outside_uid = 1000;
  Mount tmp;
  tmp.kind = Mount::Kind::tmpfs;
  tmp.target = "/tmp";
  tmp.writable = true;
  tmp.mode = 01777;
  tmp.size_bytes = 1024;
  Mount mask;
  mask.kind = Mount::Kind::mask;
  mask.target = "/home/u/ws/.env";
  s.mounts = {bind("/usr", "/usr"),
              bind("/lib", "/lib"),
              bind("/etc/hosts", "/etc/hosts"),
              tmp,
              bind("/home/u/ws", "/home/u/ws", true),
              bind("/home/u/ws/.git", "/home/u/ws/.git", true),
              bind("/home/u/ws/.git/hooks", "/home/u/ws/.git/hooks"),
              bind("/home/u/ws/.git/config", "/home/u/ws/.git/config"),
              mask};
  const auto p = plan(s, debian_host());
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_THAT(
      render(*p),
      ElementsAre(
          "private /", "tmpfs /tmp mode=0755,size=65536", "enter_scratch /tmp",
          "tmpfs /newroot mode=0755,size=1048576", "mkdir /newroot/usr",
          "bind /oldroot/usr /newroot/usr ro,nosuid,nodev rec",
          // Debian's /lib -> usr/lib stays a symlink, since /usr is bound.
          "symlink /newroot/lib -> usr/lib", "mkdir /newroot/etc", "touch /newroot/etc/hosts",
          "bind /oldroot/etc/hosts /newroot/etc/hosts ro,nosuid,nodev rec", "mkdir /newroot/tmp",
          "tmpfs /newroot/tmp mode=01777,size=1024", "mkdir /newroot/home", "mkdir /newroot/home/u",
          "mkdir /newroot/home/u/ws", "bind /oldroot/home/u/ws /newroot/home/u/ws nosuid,nodev rec",
          "mkdir /newroot/home/u/ws/.git",
          "bind /oldroot/home/u/ws/.git /newroot/home/u/ws/.git nosuid,nodev rec",
          "mkdir /newroot/home/u/ws/.git/hooks",
          "bind /oldroot/home/u/ws/.git/hooks /newroot/home/u/ws/.git/hooks ro,nosuid,nodev rec",
          "touch /newroot/home/u/ws/.git/config",
          "bind /oldroot/home/u/ws/.git/config /newroot/home/u/ws/.git/config ro,nosuid,nodev rec",
          "mask /newroot/home/u/ws/.env", "enter_root /newroot", "attr / ro"));
}

// A tree that keeps its owner is the launcher's (an idmapped, detached
// tree, attached from its fd), and the binds whose source lies in it are
// made from the jail's side, after it: the same owners show, and the
// unprivileged init never walks the host path (a 0700 root workspace).
TEST(MountPlanTest, KeepOwnerTreeIsAttachedAndBindsInsideItComeFromTheJailsSide) {
  JailSpec s;
  s.identity = {0, 0, 65534, 65534, /*map_launcher=*/false};
  Mount ws = bind("/home/u/ws", "/home/u/ws", true);
  ws.keep_owner = true;
  Mount git = bind("/home/u/ws/.git", "/home/u/ws/.git");
  git.optional = true;
  s.mounts = {bind("/usr", "/usr"), ws, git,
              bind("/home/u/ws/.git/config", "/home/u/ws/.git/config")};
  const auto p = plan(s, debian_host());
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_THAT(
      render(*p),
      ElementsAre("private /", "tmpfs /tmp mode=0755,size=65536", "enter_scratch /tmp",
                  "tmpfs /newroot mode=0755,size=1048576", "mkdir /newroot/usr",
                  "bind /oldroot/usr /newroot/usr ro,nosuid,nodev rec", "mkdir /newroot/home",
                  "mkdir /newroot/home/u", "mkdir /newroot/home/u/ws",
                  "attach /home/u/ws /newroot/home/u/ws nosuid,nodev fd7",
                  "mkdir /newroot/home/u/ws/.git",
                  "bind /newroot/home/u/ws/.git /newroot/home/u/ws/.git ro,nosuid,nodev rec opt",
                  "touch /newroot/home/u/ws/.git/config",
                  "bind /newroot/home/u/ws/.git/config /newroot/home/u/ws/.git/config "
                  "ro,nosuid,nodev rec",
                  "enter_root /newroot", "attr / ro"));
  // What the launcher checks a jail built ahead against: the host paths.
  std::vector<std::string> hosts;
  for (const Op& op : p->ops)
    if (op.kind == Op::Kind::bind || op.kind == Op::Kind::attach) hosts.push_back(op.host);
  EXPECT_THAT(hosts,
              ElementsAre("/usr", "/home/u/ws", "/home/u/ws/.git", "/home/u/ws/.git/config"));
}

// A second tree gets the next fd; a missing optional one is skipped (no
// number), a missing required one is left to the launcher and the child
// (ENOENT for its op), as for a plain bind.
TEST(MountPlanTest, KeepOwnerTreesAreNumberedAndMissingOnesHandledAsBinds) {
  FakeHost h = debian_host();
  h.types["/srv"] = HostView::Type::dir;
  JailSpec s;
  Mount a = bind("/home/u/ws", "/home/u/ws", true);
  a.keep_owner = true;
  Mount gone = bind("/gone", "/gone", true);
  gone.keep_owner = true;
  gone.optional = true;
  Mount b = bind("/srv", "/srv");
  b.keep_owner = true;
  s.mounts = {gone, a, b};
  const auto p = plan(s, h);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_THAT(render(*p),
              ::testing::Contains("attach /home/u/ws /newroot/home/u/ws nosuid,nodev fd7"));
  EXPECT_THAT(render(*p), ::testing::Contains("attach /srv /newroot/srv ro,nosuid,nodev fd8"));
  EXPECT_THAT(render(*p), ::testing::Not(::testing::Contains(::testing::HasSubstr("/gone"))));
  s.mounts[0].optional = false;
  const auto required = plan(s, h);
  ASSERT_TRUE(required) << required.error().to_string();
  EXPECT_THAT(render(*required),
              ::testing::Contains("attach /gone /newroot/gone nosuid,nodev fd7"));
}

// A bind whose source lies in a kept tree but would be mounted before it
// (through a symlink elsewhere that leads into the workspace) cannot be made
// from the jail's side: refused, naming both.
TEST(MountPlanTest, BindIntoAKeptTreeMountedBeforeItIsRefused) {
  FakeHost h = debian_host();
  h.types["/a"] = HostView::Type::dir;
  h.types["/a/link"] = HostView::Type::symlink;
  h.links["/a/link"] = "/home/u/ws/.git";
  JailSpec s;
  Mount ws = bind("/home/u/ws", "/home/u/ws", true);
  ws.keep_owner = true;
  s.mounts = {bind("/a/link", "/b"), ws};
  const auto p = plan(s, h);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().where, "/b");
  EXPECT_THAT(p.error().why, ::testing::HasSubstr("lies in /home/u/ws"));
}

// The target of a bind inside a bound tree is the jail's to change: a
// symlink on the way (hooksPath = lnk/shadow with lnk -> ../../etc once put
// the host's /etc/shadow over its mask) is refused, or skipped when optional
// so that one planted at an optional path never stops later jails.
TEST(MountPlanTest, MountPointReachedThroughASymlinkInABoundTreeIsRefused) {
  FakeHost h = debian_host();
  h.types["/etc/shadow"] = HostView::Type::file;
  h.types["/home/u/ws/lnk"] = HostView::Type::symlink;
  h.links["/home/u/ws/lnk"] = "/etc";
  JailSpec s;
  s.mounts = {bind("/home/u/ws", "/home/u/ws", true),
              bind("/home/u/ws/lnk/shadow", "/home/u/ws/lnk/shadow")};
  const auto refused = plan(s, h);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().where, "/home/u/ws/lnk/shadow");
  EXPECT_THAT(refused.error().why, ::testing::HasSubstr("symlink"));

  s.mounts[1].optional = true;
  const auto skipped = plan(s, h);
  ASSERT_TRUE(skipped) << skipped.error().to_string();
  EXPECT_THAT(render(*skipped),
              ::testing::Not(::testing::Contains(::testing::HasSubstr("/etc/shadow"))));
  EXPECT_THAT(render(*skipped), ::testing::Not(::testing::Contains(::testing::HasSubstr("lnk"))));
}

// A mount inside a writable bind deeper than its root: each directory on
// the way is bound on itself first (a mount point the jail cannot rename or
// remove), so that no jail can rename a parent away and have the next one
// mount a stand-in while the original shows writable under another name.
// Once per directory; none under a read-only bind or right at the root.
TEST(MountPlanTest, ParentsOfAMountInAWritableBindArePinned) {
  FakeHost h = debian_host();
  h.types["/home/u/ws/a"] = HostView::Type::dir;
  h.types["/home/u/ws/a/b"] = HostView::Type::dir;
  h.types["/home/u/ws/a/b/c"] = HostView::Type::dir;
  h.types["/home/u/ws/a/d"] = HostView::Type::dir;
  JailSpec s;
  s.mounts = {bind("/home/u/ws", "/home/u/ws", true), bind("/home/u/ws/.git", "/home/u/ws/.git"),
              bind("/home/u/ws/a/b/c", "/home/u/ws/a/b/c"),
              bind("/home/u/ws/a/d", "/home/u/ws/a/d")};
  const auto p = plan(s, h);
  ASSERT_TRUE(p) << p.error().to_string();
  std::vector<std::string> pins;
  for (const Op& op : p->ops)
    if (op.what.starts_with("pin ")) pins.push_back(op.path + " from " + op.host);
  EXPECT_THAT(pins, ElementsAre("/newroot/home/u/ws/a from /home/u/ws/a",
                                "/newroot/home/u/ws/a/b from /home/u/ws/a/b"));
  EXPECT_THAT(render(*p), ::testing::Contains("bind /oldroot/home/u/ws/a/b /newroot/home/u/ws/a/b "
                                              "nosuid,nodev rec opt"));
}

// A hidden file deeper than a writable bind's root: its parents are pinned
// as a read_only path's are, before the mask; under a read-only bind, where
// the jail renames nothing, none is.
TEST(MountPlanTest, ParentsOfAMaskInAWritableBindArePinned) {
  FakeHost h = debian_host();
  h.types["/home/u/ws/conf"] = HostView::Type::dir;
  h.types["/home/u/ws/conf/prod"] = HostView::Type::dir;
  h.types["/home/u/ws/conf/prod/secret"] = HostView::Type::file;
  JailSpec s;
  s.mounts = {bind("/home/u/ws", "/home/u/ws", true), hidden_at("/home/u/ws/conf/prod/secret")};
  const auto p = plan(s, h);
  ASSERT_TRUE(p) << p.error().to_string();
  std::vector<std::string> order;
  for (const Op& op : p->ops)
    if (op.what.starts_with("pin ") || op.kind == Op::Kind::mask) order.push_back(op.path);
  EXPECT_THAT(order, ElementsAre("/newroot/home/u/ws/conf", "/newroot/home/u/ws/conf/prod",
                                 "/newroot/home/u/ws/conf/prod/secret"));
  s.mounts[0].writable = false;
  const auto ro = plan(s, h);
  ASSERT_TRUE(ro) << ro.error().to_string();
  for (const Op& op : ro->ops) EXPECT_FALSE(op.what.starts_with("pin ")) << op.what;
}

// A mask hides the host file, wherever a bind shows it: a hidden path that is
// a symlink is masked where its real file shows, and a file reached through
// a symlinked bind is masked there too.
// A hidden directory wins over a hidden path inside it, whatever their order
// in the policy: the directory is an empty stand-in, not a snapshot showing
// all but the inner path.
TEST(MountPlanTest, AHiddenDirectoryStaysEmptyWhenAPathInsideIsHiddenToo) {
  FakeHost h = debian_host();
  h.types["/srv"] = HostView::Type::dir;
  h.types["/srv/t"] = HostView::Type::dir;
  h.types["/srv/t/a"] = HostView::Type::dir;
  h.types["/srv/t/a/b"] = HostView::Type::file;
  h.types["/srv/t/a/other"] = HostView::Type::file;
  h.types["/srv/t/c"] = HostView::Type::file;
  for (bool outer_first : {true, false}) {
    JailSpec s;
    s.mounts = {bind("/srv/t", "/srv/t")};
    if (outer_first)
      s.mounts.insert(s.mounts.end(), {hidden_at("/srv/t/a"), hidden_at("/srv/t/a/b")});
    else
      s.mounts.insert(s.mounts.end(), {hidden_at("/srv/t/a/b"), hidden_at("/srv/t/a")});
    const auto r = render(*plan(s, h));
    EXPECT_THAT(r, ::testing::Contains("mkdir /newroot/srv/t/a")) << outer_first;
    EXPECT_THAT(r, ::testing::Not(::testing::Contains(::testing::HasSubstr("/srv/t/a/"))))
        << outer_first;
    EXPECT_THAT(
        r, ::testing::Contains("bind /oldroot/srv/t/c /newroot/srv/t/c ro,nosuid,nodev rec opt"));
  }
}

// The git layer is planned from what .git itself is, never from what it
// holds: a directory gets the layer, a file (a worktree's pointer) a
// read-only bind, a symlink or nothing no mount at all.
TEST(MountPlanTest, GitLayerDependsOnlyOnWhatDotGitIs) {
  Mount git;
  git.kind = Mount::Kind::git;
  git.target = "/home/u/ws/.git";
  git.optional = true;
  git.size_bytes = 4096;
  JailSpec s;
  s.mounts = {bind("/home/u/ws", "/home/u/ws", true), git};
  auto ops_for = [&](FakeHost h) {
    const auto p = plan(s, h);
    EXPECT_TRUE(p) << p.error().to_string();
    std::vector<std::string> git_ops;
    for (const std::string& op : p ? render(*p) : std::vector<std::string>{})
      if (op.find("/.git") != std::string::npos) git_ops.push_back(op);
    return git_ops;
  };
  EXPECT_THAT(ops_for(debian_host()),
              ElementsAre("git /newroot/home/u/ws/.git mode=0755,size=4096"));

  FakeHost file = debian_host();
  file.types["/home/u/ws/.git"] = HostView::Type::file;
  EXPECT_THAT(ops_for(file),
              ElementsAre("touch /newroot/home/u/ws/.git",
                          "bind /oldroot/home/u/ws/.git /newroot/home/u/ws/.git ro,nosuid,nodev "
                          "rec opt"));

  FakeHost link = debian_host();
  link.types["/home/u/ws/.git"] = HostView::Type::symlink;
  link.links["/home/u/ws/.git"] = "/etc";
  EXPECT_THAT(ops_for(link), ElementsAre());

  FakeHost none = debian_host();
  none.types.erase("/home/u/ws/.git");
  EXPECT_THAT(ops_for(none), ElementsAre());

  // A symlink on the way to .git (the workspace's parent inside a bound tree).
  FakeHost above = debian_host();
  above.types["/home/u/ws/sub"] = HostView::Type::symlink;
  above.links["/home/u/ws/sub"] = "/etc";
  Mount deep = git;
  deep.target = "/home/u/ws/sub/.git";
  s.mounts = {bind("/home/u/ws", "/home/u/ws", true), deep};
  EXPECT_THAT(ops_for(above), ElementsAre());
}

TEST(MountPlanTest, MaskHidesTheRealFileWhereverABindShowsIt) {
  FakeHost h = debian_host();
  h.types["/data"] = HostView::Type::dir;
  h.types["/data/ssh"] = HostView::Type::dir;
  h.types["/home/u/.ssh"] = HostView::Type::symlink;
  h.links["/home/u/.ssh"] = "/data/ssh";
  h.types["/home/u/data"] = HostView::Type::symlink;
  h.links["/home/u/data"] = "/data";
  Mount hidden = hidden_at("/home/u/.ssh");
  JailSpec s;
  s.mounts = {bind("/data", "/data"), hidden};
  const auto p = plan(s, h);
  ASSERT_TRUE(p) << p.error().to_string();
  // Under a read-only bind: the directory holding it is a snapshot, with an
  // empty stand-in for it.
  EXPECT_THAT(render(*p), ::testing::IsSupersetOf({"tmpfs /newroot/data mode=0755,size=65536",
                                                   "mkdir /newroot/data/ssh"}));

  hidden.target = "/data/ssh";
  s.mounts = {bind("/home/u/data", "/home/u/data"), hidden};
  const auto through_link = plan(s, h);
  ASSERT_TRUE(through_link) << through_link.error().to_string();
  EXPECT_THAT(render(*through_link),
              ::testing::IsSupersetOf({"tmpfs /newroot/home/u/data mode=0755,size=65536",
                                       "mkdir /newroot/home/u/data/ssh"}));
  // Under a writable bind (where a jail could rename things anyway), a mask.
  s.mounts[0].writable = true;
  EXPECT_THAT(render(*plan(s, h)), ::testing::Contains("mask /newroot/home/u/data/ssh"));
}

// A symlink a jail planted at a hidden path in its workspace must not get
// the next jail's libc masked (every later jail would fail).
TEST(MountPlanTest, MaskDoesNotFollowASymlinkInAWritableTree) {
  FakeHost h = debian_host();
  h.types["/usr/lib/libc.so.6"] = HostView::Type::file;
  h.types["/home/u/ws/.env"] = HostView::Type::symlink;
  h.links["/home/u/ws/.env"] = "/usr/lib/libc.so.6";
  Mount hidden = hidden_at("/home/u/ws/.env");
  JailSpec s;
  s.mounts = {bind("/home/u/ws", "/home/u/ws", true), bind("/usr", "/usr"), hidden};
  const auto p = plan(s, h);
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_THAT(render(*p), ::testing::Not(::testing::Contains(::testing::HasSubstr("mask"))));
  // The same symlink in a read-only tree is the host's own: followed.
  s.mounts[0].writable = false;
  EXPECT_THAT(render(*plan(s, h)), ::testing::Contains("touch /newroot/usr/lib/libc.so.6"));
}

TEST(MountPlanTest, MaskIsSkippedWhereNoBindShowsTheFile) {
  Mount hidden = hidden_at("/etc/hosts");
  JailSpec s;
  s.mounts = {bind("/usr", "/usr"), hidden};
  const auto r = render(*plan(s, debian_host()));
  EXPECT_THAT(r, ::testing::Not(::testing::Contains(::testing::HasSubstr("mask"))));
  s.mounts.insert(s.mounts.begin(), bind("/etc", "/etc", true));
  EXPECT_THAT(render(*plan(s, debian_host())), ::testing::Contains("mask /newroot/etc/hosts"));
}

Mount file_at(std::string target, std::string content) {
  Mount m;
  m.kind = Mount::Kind::file;
  m.target = std::move(target);
  m.content = std::move(content);
  return m;
}

// The jail's resolv.conf: brig's file over the host's, and where that is a
// symlink into /run (systemd-resolved), over the file it leads to.
TEST(MountPlanTest, FileCoversTheHostFileOrWhatItsSymlinkLeadsTo) {
  FakeHost h = debian_host();
  h.types["/etc/resolv.conf"] = HostView::Type::file;
  JailSpec s;
  s.mounts = {bind("/etc", "/etc"), file_at("/etc/resolv.conf", "nameserver 127.0.0.1\n")};
  EXPECT_THAT(render(*plan(s, h)),
              ::testing::Contains("file /file1 /newroot/etc/resolv.conf nameserver 127.0.0.1\n"));

  h.types["/etc/resolv.conf"] = HostView::Type::symlink;
  h.links["/etc/resolv.conf"] = "/run/systemd/resolve/stub-resolv.conf";
  h.types["/run"] = HostView::Type::dir;
  h.types["/run/systemd"] = HostView::Type::dir;
  h.types["/run/systemd/resolve"] = HostView::Type::dir;
  h.types["/run/systemd/resolve/stub-resolv.conf"] = HostView::Type::file;
  // The jail does not show the symlink's destination: nothing to cover.
  const auto unshown = plan(s, h);
  ASSERT_FALSE(unshown);
  EXPECT_THAT(unshown.error().to_string(), ::testing::HasSubstr("no bind shows a regular file"));
  s.mounts.insert(s.mounts.begin() + 1, bind("/run/systemd/resolve", "/run/systemd/resolve"));
  EXPECT_THAT(
      render(*plan(s, h)),
      ::testing::Contains(
          "file /file2 /newroot/run/systemd/resolve/stub-resolv.conf nameserver 127.0.0.1\n"));
}

// A symlink the jail could have planted decides nothing: no file goes where
// it points.
TEST(MountPlanTest, FileDoesNotFollowASymlinkInAWritableTree) {
  FakeHost h = debian_host();
  h.types["/usr/lib/libc.so.6"] = HostView::Type::file;
  h.types["/home/u/ws/resolv.conf"] = HostView::Type::symlink;
  h.links["/home/u/ws/resolv.conf"] = "/usr/lib/libc.so.6";
  JailSpec s;
  s.mounts = {bind("/home/u/ws", "/home/u/ws", true), bind("/usr", "/usr"),
              file_at("/home/u/ws/resolv.conf", "x")};
  const auto p = plan(s, h);
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().to_string(), ::testing::HasSubstr("no bind shows a regular file"));
}

// Under a read-only bind, each directory down to a hidden path is a
// snapshot of the host's: every other entry bound (a symlink copied), the
// hidden one an empty stand-in. What the host adds or replaces there later
// never shows; a hidden path that does not exist yet leaves its deepest
// existing directory a snapshot.
TEST(MountPlanTest, HiddenPathsUnderAReadOnlyBindGetSnapshots) {
  FakeHost h = debian_host();
  h.types["/home/u/.config"] = HostView::Type::dir;
  h.types["/home/u/.config/gh"] = HostView::Type::dir;
  h.types["/home/u/.config/gh/hosts.yml"] = HostView::Type::file;
  h.types["/home/u/.config/gh/config.yml"] = HostView::Type::file;
  h.types["/home/u/.bashrc"] = HostView::Type::file;
  h.types["/home/u/.profile"] = HostView::Type::symlink;
  h.links["/home/u/.profile"] = ".bashrc";
  h.types["/home/u"] = HostView::Type::dir;
  JailSpec s;
  s.mounts = {bind("/home/u", "/home/u"), hidden_at("/home/u/.config/gh/hosts.yml"),
              hidden_at("/home/u/.aws/credentials")};
  const auto p = plan(s, h);
  ASSERT_TRUE(p) << p.error().to_string();
  const auto r = render(*p);
  EXPECT_THAT(
      std::vector<std::string>(r.begin() + 4, r.end() - 2),
      ElementsAre(
          "mkdir /newroot/home", "mkdir /newroot/home/u",
          "bind /oldroot/home/u /newroot/home/u ro,nosuid,nodev rec",
          // ~: .aws is not there yet, so ~ itself is a snapshot.
          "tmpfs /newroot/home/u mode=0755,size=65536", "touch /newroot/home/u/.bashrc",
          "bind /oldroot/home/u/.bashrc /newroot/home/u/.bashrc ro,nosuid,nodev rec opt",
          "mkdir /newroot/home/u/.config", "symlink /newroot/home/u/.profile -> .bashrc",
          "mkdir /newroot/home/u/ws",
          "bind /oldroot/home/u/ws /newroot/home/u/ws ro,nosuid,nodev rec opt",
          "attr /newroot/home/u ro,nosuid,nodev",
          "tmpfs /newroot/home/u/.config mode=0755,size=65536", "mkdir /newroot/home/u/.config/gh",
          "attr /newroot/home/u/.config ro,nosuid,nodev",
          "tmpfs /newroot/home/u/.config/gh mode=0755,size=65536",
          "touch /newroot/home/u/.config/gh/config.yml",
          "bind /oldroot/home/u/.config/gh/config.yml /newroot/home/u/.config/gh/config.yml "
          "ro,nosuid,nodev rec opt",
          "touch /newroot/home/u/.config/gh/hosts.yml",
          "attr /newroot/home/u/.config/gh ro,nosuid,nodev"));
  EXPECT_THAT(r, ::testing::Not(::testing::Contains(::testing::HasSubstr("mask"))));

  // A mount of the spec deeper on the way decides there instead.
  s.mounts.insert(s.mounts.begin() + 1, bind("/home/u/.config", "/home/u/.config", true));
  const auto deeper = render(*plan(s, h));
  EXPECT_THAT(
      deeper,
      ::testing::Not(::testing::Contains("tmpfs /newroot/home/u/.config mode=0755,size=65536")));
  EXPECT_THAT(deeper, ::testing::Contains("mask /newroot/home/u/.config/gh/hosts.yml"));
}

TEST(MountPlanTest, SymlinkWithoutItsDestinationBoundIsBoundResolved) {
  JailSpec s;
  s.mounts = {bind("/lib", "/lib")};
  const auto p = plan(s, debian_host());
  ASSERT_TRUE(p);
  EXPECT_THAT(render(*p),
              ::testing::Contains("bind /oldroot/usr/lib /newroot/lib ro,nosuid,nodev rec"));
}

TEST(MountPlanTest, MissingSourceIsSkippedWhenOptionalAndLeftToTheChildOtherwise) {
  JailSpec s;
  Mount opt = bind("/nope", "/nope");
  opt.optional = true;
  s.mounts = {opt, bind("/gone", "/gone")};
  const auto p = plan(s, debian_host());
  ASSERT_TRUE(p);
  const auto r = render(*p);
  EXPECT_THAT(r, ::testing::Not(::testing::Contains(::testing::HasSubstr("/nope"))));
  EXPECT_THAT(r, ::testing::Contains("bind /oldroot/gone /newroot/gone ro,nosuid,nodev rec"));
}

TEST(MountPlanTest, ProcIsHardenedOnlyWhenTheJailsRootIsHostRoot) {
  Mount proc;
  proc.kind = Mount::Kind::proc;
  proc.target = "/proc";
  JailSpec user;
  user.identity.outside_uid = 1000;
  user.mounts = {proc};
  const auto plain = render(*plan(user, debian_host()));
  EXPECT_THAT(plain, ::testing::Contains("proc /newroot/proc "));
  EXPECT_THAT(plain, ::testing::Not(::testing::Contains("mask /newroot/proc/kcore")));

  JailSpec root = user;
  root.identity.outside_uid = 0;
  const auto hardened = render(*plan(root, debian_host()));
  EXPECT_THAT(hardened,
              ::testing::Contains(
                  "bind /newroot/proc/sys /newroot/proc/sys ro,nosuid,nodev,noexec rec opt"));
  EXPECT_THAT(hardened,
              ::testing::Contains("bind /newroot/proc/sysrq-trigger /newroot/proc/sysrq-trigger "
                                  "ro,nosuid,nodev,noexec rec opt"));
  EXPECT_THAT(hardened, ::testing::Contains("mask /newroot/proc/kcore"));
  EXPECT_THAT(hardened, ::testing::Contains("mask /newroot/proc/keys"));
  EXPECT_THAT(hardened, ::testing::Contains("mask /newroot/proc/timer_list"));
}

// kpageflags, slabinfo and the like describe the host kernel; a jail whose
// uid 0 is host root could read them, any other gains nothing from them.
TEST(MountPlanTest, RootOnlyProcFilesAreMaskedInEveryTier) {
  FakeHost h = debian_host();
  h.proc_files = {"kpageflags", "slabinfo", "timer_list"};
  Mount proc;
  proc.kind = Mount::Kind::proc;
  proc.target = "/proc";
  for (uid_t outside : {0u, 1000u}) {
    JailSpec s;
    s.identity.outside_uid = outside;
    s.mounts = {proc};
    const auto r = render(*plan(s, h));
    EXPECT_THAT(r, ::testing::Contains("mask /newroot/proc/kpageflags")) << outside;
    EXPECT_THAT(r, ::testing::Contains("mask /newroot/proc/slabinfo")) << outside;
    EXPECT_EQ(std::count(r.begin(), r.end(), "mask /newroot/proc/timer_list"), 1) << outside;
  }
}

TEST(MountPlanTest, APrivateTmpfsBelongsToTheCommandsUser) {
  // A root brig running the jail as uid 1001: the init mounts as root, and a
  // 0700 home it owned would be closed to the command.
  Mount home;
  home.kind = Mount::Kind::tmpfs;
  home.target = "/home/u";
  home.writable = true;
  home.mode = 0700;
  JailSpec s;
  s.identity = Identity{1001, 1002, 1001, 1002};
  s.mounts = {home};
  EXPECT_THAT(render(*plan(s, debian_host())),
              ::testing::Contains("tmpfs /newroot/home/u mode=0700,uid=1001,gid=1002"));
  s.identity = Identity{};
  EXPECT_THAT(render(*plan(s, debian_host())),
              ::testing::Contains("tmpfs /newroot/home/u mode=0700"));
}

TEST(MountPlanTest, DevHasTheMinimalDevicesPtsAndShm) {
  Mount dev;
  dev.kind = Mount::Kind::dev;
  dev.target = "/dev";
  dev.size_bytes = 4096;
  JailSpec s;
  s.mounts = {dev};
  const auto r = render(*plan(s, debian_host()));
  for (const char* d : {"null", "zero", "full", "random", "urandom", "tty"})
    EXPECT_THAT(r, ::testing::Contains("bind /oldroot/dev/" + std::string(d) + " /newroot/dev/" +
                                       d + " nosuid,noexec opt"));
  EXPECT_THAT(r,
              ::testing::Contains("devpts /newroot/dev/pts newinstance,ptmxmode=0666,mode=0620"));
  EXPECT_THAT(r, ::testing::Contains("symlink /newroot/dev/ptmx -> pts/ptmx"));
  EXPECT_THAT(r, ::testing::Contains("tmpfs /newroot/dev/shm mode=01777,size=4096"));
  EXPECT_THAT(r, ::testing::Contains("attr /newroot/dev ro"));
}

TEST(MountPlanTest, DevAddsThePolicysDevicesWithoutNodev) {
  FakeHost h = debian_host();
  h.types["/dev/fuse"] = HostView::Type::device;
  h.types["/dev/net/tun"] = HostView::Type::device;
  h.types["/dev/dri"] = HostView::Type::dir;
  h.types["/dev/sr0"] = HostView::Type::device;
  h.types["/dev/cdrom"] = HostView::Type::symlink;
  h.links = {{"/dev/cdrom", "sr0"}};
  Mount dev;
  dev.kind = Mount::Kind::dev;
  dev.target = "/dev";
  dev.devices = {{"/dev/fuse", false}, {"/dev/net/tun", false}, {"/dev/dri", false},
                 {"/dev/cdrom", true}, {"/dev/gone", true},     {"/dev/lost", false}};
  JailSpec s;
  s.mounts = {dev};
  const auto p = plan(s, h);
  ASSERT_TRUE(p) << p.error().to_string();
  std::vector<std::string> want = {"private /",          "tmpfs /tmp mode=0755,size=65536",
                                   "enter_scratch /tmp", "tmpfs /newroot mode=0755,size=1048576",
                                   "mkdir /newroot/dev", "tmpfs /newroot/dev mode=0755,size=65536"};
  for (const char* d : {"null", "zero", "full", "random", "urandom", "tty"}) {
    want.push_back("touch /newroot/dev/" + std::string(d));
    want.push_back("bind /oldroot/dev/" + std::string(d) + " /newroot/dev/" + d +
                   " nosuid,noexec opt");
  }
  const std::vector<std::string> rest = {
      "touch /newroot/dev/fuse", "bind /oldroot/dev/fuse /newroot/dev/fuse nosuid,noexec",
      // net/ is made for tun; the devtmpfs tree itself is not bound.
      "mkdir /newroot/dev/net", "touch /newroot/dev/net/tun",
      "bind /oldroot/dev/net/tun /newroot/dev/net/tun nosuid,noexec", "mkdir /newroot/dev/dri",
      "bind /oldroot/dev/dri /newroot/dev/dri nosuid,noexec",
      // A symlink is bound resolved, at the name the policy gave.
      "touch /newroot/dev/cdrom", "bind /oldroot/dev/sr0 /newroot/dev/cdrom nosuid,noexec opt",
      // Missing and optional: nothing at all. Missing and required: the
      // child's bind fails with ENOENT naming it.
      "touch /newroot/dev/lost", "bind /oldroot/dev/lost /newroot/dev/lost nosuid,noexec",
      "mkdir /newroot/dev/pts", "devpts /newroot/dev/pts newinstance,ptmxmode=0666,mode=0620",
      "symlink /newroot/dev/ptmx -> pts/ptmx", "mkdir /newroot/dev/shm",
      "tmpfs /newroot/dev/shm mode=01777", "symlink /newroot/dev/fd -> /proc/self/fd",
      "symlink /newroot/dev/stdin -> /proc/self/fd/0",
      "symlink /newroot/dev/stdout -> /proc/self/fd/1",
      "symlink /newroot/dev/stderr -> /proc/self/fd/2", "attr /newroot/dev ro",
      "enter_root /newroot", "attr / ro"};
  want.insert(want.end(), rest.begin(), rest.end());
  EXPECT_EQ(render(*p), want);
  const auto lost = std::find_if(p->ops.begin(), p->ops.end(), [](const Op& op) {
    return op.kind == Op::Kind::bind && op.path == "/newroot/dev/lost";
  });
  ASSERT_NE(lost, p->ops.end());
  EXPECT_EQ(lost->what, "bind device /dev/lost on /dev/lost (mounts[0])");
}

TEST(MountPlanTest, DeviceThatIsNotADeviceIsRefused) {
  FakeHost h = debian_host();
  h.types["/dev/notes"] = HostView::Type::file;
  Mount dev;
  dev.kind = Mount::Kind::dev;
  dev.target = "/dev";
  dev.devices = {{"/dev/notes", true}};
  JailSpec s;
  s.mounts = {dev};
  const auto p = plan(s, h);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().to_string(),
            "plan mounts (/dev/notes): not a device node or a directory of them under /dev (it is "
            "/dev/notes) (mounts[0])");
}

// The file worker keeps what the planner asked and asks it again before each
// call instead of planning again (server/pool/worker_pool.cc): the answers
// kept give the same plan, and every host change that changes the plan
// changes an answer.
TEST(MountPlanTest, RecordedHostTellsWhetherPlanningAgainWouldDiffer) {
  Mount git;
  git.kind = Mount::Kind::git;
  git.target = "/home/u/ws/.git";
  git.optional = true;
  Mount proc;
  proc.kind = Mount::Kind::proc;
  proc.target = "/proc";
  JailSpec s;
  s.mounts = {bind("/usr", "/usr"),
              bind("/lib", "/lib"),
              bind("/home/u", "/home/u"),
              bind("/home/u/ws", "/home/u/ws", true),
              git,
              hidden_at("/home/u/ws/.env"),
              hidden_at("/home/u/ws/.netrc"),
              hidden_at("/home/u/.config/gh/hosts.yml"),
              proc};
  const FakeHost before = [] {
    FakeHost h = debian_host();
    h.types["/home/u"] = HostView::Type::dir;
    h.types["/home/u/.config"] = HostView::Type::dir;
    h.types["/home/u/.bashrc"] = HostView::Type::file;
    // As on a real host, where RecordedHost walks every component.
    h.implied_dirs = true;
    return h;
  }();
  RecordedHost seen(before);
  const auto recorded = plan(s, seen);
  ASSERT_TRUE(recorded) << recorded.error().to_string();
  EXPECT_EQ(*recorded, *plan(s, before));
  EXPECT_TRUE(seen.unchanged(before));
  EXPECT_GT(seen.questions(), 0u);

  // Each change the host (or a jail, in the workspace) could make.
  std::vector<std::pair<std::string, FakeHost>> changes;
  const auto change = [&](std::string what, auto edit) {
    FakeHost h = before;
    edit(h);
    changes.emplace_back(std::move(what), std::move(h));
  };
  change("no .git", [](FakeHost& h) {
    std::erase_if(h.types, [](const auto& e) { return e.first.starts_with("/home/u/ws/.git"); });
  });
  change(".git a file", [](FakeHost& h) { h.types["/home/u/ws/.git"] = HostView::Type::file; });
  change(".git a symlink", [](FakeHost& h) {
    h.types["/home/u/ws/.git"] = HostView::Type::symlink;
    h.links["/home/u/ws/.git"] = "/etc";
  });
  change("a hidden file written",
         [](FakeHost& h) { h.types["/home/u/ws/.netrc"] = HostView::Type::file; });
  change("a hidden file removed", [](FakeHost& h) { h.types.erase("/home/u/ws/.env"); });
  change("a hidden path made a symlink", [](FakeHost& h) {
    h.types["/home/u/ws/.env"] = HostView::Type::symlink;
    h.links["/home/u/ws/.env"] = "/home/u/.bashrc";
  });
  change("a file in a snapshot",
         [](FakeHost& h) { h.types["/home/u/.profile"] = HostView::Type::file; });
  change("a hidden directory made",
         [](FakeHost& h) { h.types["/home/u/.config/gh"] = HostView::Type::dir; });
  change("/lib retargeted", [](FakeHost& h) { h.links["/lib"] = "usr/lib64"; });
  change("/usr a symlink", [](FakeHost& h) {
    h.types["/usr"] = HostView::Type::symlink;
    h.links["/usr"] = "/opt";
    h.types["/opt"] = HostView::Type::dir;
  });
  change("/proc's root-only files", [](FakeHost& h) { h.proc_files = {"kmsg"}; });
  change("a file the plan never looks at",
         [](FakeHost& h) { h.types["/home/u/ws/src.c"] = HostView::Type::file; });
  for (const auto& [what, host] : changes) {
    const auto now = plan(s, host);
    ASSERT_TRUE(now) << what;
    if (&host == &changes.back().second) {
      // The workspace's own files are no question of the planner's.
      EXPECT_EQ(*now, *recorded);
      EXPECT_TRUE(seen.unchanged(host));
    } else {
      EXPECT_NE(*now, *recorded) << what;
      EXPECT_FALSE(seen.unchanged(host)) << what << ": the plan differs, no answer does";
    }
  }
}

// RecordedHost answers resolve() itself, component by component: the same
// answers as realpath(3) on the real host, symlinks, "..", and errors too.
TEST(MountPlanTest, RecordedHostResolvesAsRealpathDoes) {
  char tmpl[] = "/tmp/brig-resolve-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string d = tmpl;
  ASSERT_EQ(::mkdir((d + "/a").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((d + "/a/b").c_str(), 0755), 0);
  ::close(::open((d + "/a/f").c_str(), O_CREAT | O_WRONLY, 0644));
  ASSERT_EQ(::symlink("a", (d + "/rel").c_str()), 0);
  ASSERT_EQ(::symlink((d + "/a/b").c_str(), (d + "/abs").c_str()), 0);
  ASSERT_EQ(::symlink("../f", (d + "/a/b/up").c_str()), 0);
  ASSERT_EQ(::symlink("loop", (d + "/loop").c_str()), 0);
  ASSERT_EQ(::symlink("missing", (d + "/dangling").c_str()), 0);
  ASSERT_EQ(::symlink("/", (d + "/root").c_str()), 0);
  const RecordedHost recorded(real_host());
  for (const std::string rel :
       {"",          "/",           "/a",      "/a/",       "/a/b",     "/a/./b/..",
        "/a/f",      "/a/f/",       "/a/f/x",  "/a/f/..",   "/rel",     "/rel/b",
        "/rel/b/up", "/abs",        "/abs/up", "/abs/../f", "/loop",    "/dangling",
        "/missing",  "/missing/..", "/root",   "/root/tmp", "/../../.."}) {
    const std::string path = d + rel;
    EXPECT_EQ(recorded.resolve(path), real_host().resolve(path)) << path;
  }
  EXPECT_TRUE(recorded.unchanged(real_host()));
  ::unlink((d + "/rel").c_str());
  ASSERT_EQ(::symlink("a/b", (d + "/rel").c_str()), 0);
  EXPECT_FALSE(recorded.unchanged(real_host()));
  std::filesystem::remove_all(d);
}

// The real host forwarded without its one-plan view: every question asked
// of the host each time, realpath(3) itself.
class EveryTime final : public HostView {
 public:
  Type type(const std::string& p) const override { return real_host().type(p); }
  std::optional<std::string> resolve(const std::string& p) const override {
    return real_host().resolve(p);
  }
  std::optional<std::string> link_text(const std::string& p) const override {
    return real_host().link_text(p);
  }
  std::vector<std::pair<std::string, Type>> entries(const std::string& p) const override {
    return real_host().entries(p);
  }
  std::vector<std::string> proc_root_only() const override { return real_host().proc_root_only(); }
};

// A temporary directory on the real host, removed at the end.
struct TempTree {
  std::string root;
  TempTree() {
    char tmpl[] = "/tmp/mount-plan-test.XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~TempTree() { std::filesystem::remove_all(root); }
};

// The one-plan view resolves as realpath(3) does: through relative and
// absolute symlinks, chains of them, "." and "..", and fails where realpath
// fails (missing, a loop, a file with more to come).
TEST(MountPlanTest, OnePlanViewResolvesAsRealpath) {
  TempTree t;
  const std::string r = t.root;
  std::filesystem::create_directories(r + "/a/b/c");
  ASSERT_EQ(::symlink("a/b", (r + "/rel").c_str()), 0);
  ASSERT_EQ(::symlink((r + "/a").c_str(), (r + "/abs").c_str()), 0);
  ASSERT_EQ(::symlink("../rel/c", (r + "/a/up").c_str()), 0);
  ASSERT_EQ(::symlink("chain2", (r + "/chain1").c_str()), 0);
  ASSERT_EQ(::symlink("abs/b/../b", (r + "/chain2").c_str()), 0);
  ASSERT_EQ(::symlink("loop", (r + "/loop").c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", (r + "/dangling").c_str()), 0);
  {
    std::FILE* f = std::fopen((r + "/a/file").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  ASSERT_EQ(::symlink("/", (r + "/a/root").c_str()), 0);
  const auto once = real_host().for_one_plan();
  ASSERT_NE(once, nullptr);
  for (const std::string& p : {r,
                               r + "/",
                               r + "/a/b/c",
                               r + "/rel",
                               r + "/rel/c",
                               r + "/abs/b",
                               r + "/a/up",
                               r + "/a/up/..",
                               r + "/chain1/c",
                               r + "/./a//b/./c/..",
                               r + "/loop",
                               r + "/loop/x",
                               r + "/dangling",
                               r + "/missing",
                               r + "/a/file",
                               r + "/a/file/x",
                               r + "/a/file/..",
                               r + "/a/root",
                               r + "/a/root/tmp",
                               std::string("/"),
                               std::string("/proc/self"),
                               std::string("/lib"),
                               std::string("/bin/sh"),
                               std::string("/usr/../etc/hosts")}) {
    char buf[PATH_MAX];
    const char* want = ::realpath(p.c_str(), buf);
    const auto got = once->resolve(p);
    SCOPED_TRACE(p);
    EXPECT_EQ(got.has_value(), want != nullptr);
    if (got && want) {
      EXPECT_EQ(*got, want);
    }
    EXPECT_EQ(once->resolve(p), got);  // asked again: the same answer
  }
}

// A plan on the real host through its one-plan view is the plan made asking
// the host every time: system binds through symlinks, a workspace with git,
// hidden paths under a read-only bind (snapshots) and a writable one (masks).
TEST(MountPlanTest, OnePlanViewPlansWhatAskingEveryTimePlans) {
  TempTree t;
  const std::string ws = t.root + "/ws";
  std::filesystem::create_directories(ws + "/.git/hooks");
  {
    std::FILE* f = std::fopen((ws + "/.env").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  JailSpec s;
  s.mounts = {bind("/usr", "/usr"),     bind("/lib", "/lib"),       bind("/bin", "/bin"),
              bind("/etc", "/etc"),     bind(ws, ws, true),         hidden_at(ws + "/.env"),
              hidden_at("/etc/shadow"), hidden_at("/etc/ssh/none"), hidden_at("/usr/lib/x/y")};
  Mount git;
  git.kind = Mount::Kind::git;
  git.target = ws + "/.git";
  s.mounts.push_back(git);
  Mount proc;
  proc.kind = Mount::Kind::proc;
  proc.target = "/proc";
  s.mounts.push_back(proc);
  const auto cached = plan(s, real_host());
  const auto every = plan(s, EveryTime());
  ASSERT_TRUE(cached) << cached.error().to_string();
  ASSERT_TRUE(every) << every.error().to_string();
  EXPECT_EQ(render(*cached), render(*every));
  EXPECT_EQ(*cached, *every);
}

}  // namespace
}  // namespace brig::jail::mounts
