#include "jail/steps/mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string_view>

#include "jail/base/path.h"
#include "jail/steps/child_fs.h"

namespace brig::jail::mounts {
namespace {

constexpr const char* kOld = "/oldroot";
constexpr const char* kNew = "/newroot";
constexpr const char* kGitScratch = "/git";  // in the scratch root: the git layer's tmpfs

// /proc entries a container runtime makes read-only or masks when the jail's
// root is host root: writable, they reach the host kernel (core_pattern is a
// root shell on the host).
constexpr const char* kProcReadOnly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
constexpr const char* kProcMasked[] = {"kcore",       "keys",          "timer_list", "timer_stats",
                                       "sched_debug", "latency_stats", "acpi",       "asound",
                                       "scsi",        "interrupts"};
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

class RealHost final : public HostView {
 public:
  std::unique_ptr<HostView> for_one_plan() const override;
  Type type(const std::string& path) const override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return Type::missing;
    if (S_ISLNK(st.st_mode)) return Type::symlink;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return Type::device;
    return S_ISDIR(st.st_mode) ? Type::dir : Type::file;
  }
  std::optional<std::string> resolve(const std::string& path) const override {
    char buf[PATH_MAX];
    if (!::realpath(path.c_str(), buf)) return std::nullopt;
    return std::string(buf);
  }
  std::optional<std::string> link_text(const std::string& path) const override {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    if (n < 0 || n == sizeof buf) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  }
  std::vector<std::pair<std::string, Type>> entries(const std::string& path) const override {
    std::vector<std::pair<std::string, Type>> out;
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return out;
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      out.emplace_back(name, type(path + "/" + name));
    }
    ::closedir(dir);
    std::sort(out.begin(), out.end());
    return out;
  }
  // Read once per process: the kernel's /proc entries and their modes do not change.
  std::vector<std::string> proc_root_only() const override {
    static const std::vector<std::string> names = list_proc_root_only();
    return names;
  }

 private:
  static std::vector<std::string> list_proc_root_only() {
    std::vector<std::string> names;
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) return names;
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name.empty() || name[0] == '.' || (name[0] >= '0' && name[0] <= '9')) continue;
      struct stat st;
      if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          !S_ISLNK(st.st_mode) && (st.st_mode & S_IROTH) == 0)
        names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }
};

// One plan asks about each path once and resolves paths over those answers
// (RecordedHost): what one plan sees is one consistent look at each path,
// and a new plan makes a new view.
std::unique_ptr<HostView> RealHost::for_one_plan() const {
  return std::make_unique<RecordedHost>(*this);
}

std::string octal(mode_t mode) {
  char buf[8];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + (mode & 7));
    mode >>= 3;
  } while (mode);
  std::string s = "0";
  while (n) s += buf[--n];
  return s;
}

std::string tmpfs_data(mode_t mode, uint64_t size) {
  std::string d = "mode=" + octal(mode);
  if (size) d += ",size=" + std::to_string(size);
  return d;
}

class Planner {
 public:
  // A planned bind: the jail path and the host tree it shows (resolved).
  struct Shown {
    std::string target;
    std::string source;
    bool writable = false;
    bool keep_owner = false;  // an attached tree (idmapped by the launcher)
  };

  // A directory of a read-only bind made a snapshot (see mounts.h).
  struct Snapshot {
    std::string host;                              // the host directory it copies
    std::set<std::string> chain;                   // entries that are snapshots too
    std::map<std::string, HostView::Type> hidden;  // entries shown empty
  };

  Planner(const JailSpec& spec, const HostView& host) : spec_(spec), host_(host) {}

  Result<Plan> run() {
    if (spec_.mounts.empty()) return Plan{};
    std::string scratch;
    for (const char* d : {"/tmp", "/mnt", "/run", "/var/tmp"})
      if (host_.type(d) == HostView::Type::dir) {
        scratch = d;
        break;
      }
    if (scratch.empty())
      return std::unexpected(
          Error{"plan mounts", "", "no /tmp, /mnt, /run or /var/tmp for the scratch tmpfs", 0});
    add(Op::Kind::make_private, "/", "make / private");
    fs(scratch, "tmpfs", "mode=0755,size=65536", MS_NOSUID | MS_NODEV,
       "scratch tmpfs on " + scratch);
    add(Op::Kind::enter_scratch, scratch, "pivot_root into the scratch tmpfs");
    fs(kNew, "tmpfs", "mode=0755,size=1048576", MS_NOSUID | MS_NODEV, "root tmpfs");
    made_.insert("/");
    for (size_t i = 0; i < spec_.mounts.size(); ++i) plan_one(spec_.mounts[i], i);
    // Masks last: the host file they hide may be shown by any bind, also one
    // that sorts after the mask's own path.
    for (size_t i = 0; i < spec_.mounts.size(); ++i)
      if (spec_.mounts[i].kind == Mount::Kind::mask) plan_mask(spec_.mounts[i], i);
    // Files after the masks: a file brig writes goes over whatever is there.
    for (size_t i = 0; i < spec_.mounts.size(); ++i)
      if (spec_.mounts[i].kind == Mount::Kind::file) plan_file(spec_.mounts[i], i);
    if (error_) return std::unexpected(std::move(*error_));
    add(Op::Kind::enter_root, kNew, "pivot_root into the jail's root, detach the host's");
    add(Op::Kind::set_attr, "/", "make the jail's root read-only").attr = MOUNT_ATTR_RDONLY;
    return std::move(plan_);
  }

 private:
  Op& add(Op::Kind kind, std::string path, std::string what) {
    Op op;
    op.kind = kind;
    op.path = std::move(path);
    op.what = std::move(what);
    plan_.ops.push_back(std::move(op));
    return plan_.ops.back();
  }

  Op& fs(std::string path, const char* type, std::string data, unsigned long flags,
         std::string what) {
    Op& op = add(Op::Kind::mount, std::move(path), std::move(what));
    op.source = type;
    op.data = std::move(data);
    op.flags = flags;
    return op;
  }

  Op& bind(std::string source, std::string path, uint64_t attr, bool recursive, bool optional,
           std::string what) {
    Op& op = add(Op::Kind::bind, std::move(path), std::move(what));
    if (source.starts_with(kOld)) op.host = source.substr(std::string_view(kOld).size());
    op.source = std::move(source);
    op.attr = attr;
    op.recursive = recursive;
    op.optional = optional;
    return op;
  }

  void symlink(std::string text, std::string path, std::string what) {
    add(Op::Kind::symlink, std::move(path), std::move(what)).source = std::move(text);
  }

  // mkdir for each not yet made ancestor of `target` (and target itself if `self`).
  void make_dirs(const std::string& target, bool self) {
    size_t pos = 1;
    while (pos <= target.size()) {
      size_t end = target.find('/', pos);
      if (end == std::string::npos) end = target.size();
      const std::string sofar = target.substr(0, end);
      pos = end + 1;
      if (sofar == target && !self) break;
      if (made_.insert(sofar).second)
        add(Op::Kind::mkdir, kNew + sofar, "mkdir " + sofar + " for " + target);
    }
  }

  // Whether another bind puts `host_path` at the same path in the jail.
  bool provided_at_own_path(const std::string& host_path) const {
    for (const Mount& m : spec_.mounts)
      if (m.kind == Mount::Kind::bind && m.source == m.target && is_within(host_path, m.source) &&
          host_.type(m.source) == HostView::Type::dir)
        return true;
    return false;
  }

  // A tmpfs of the spec's belongs to the command's ids. The init that mounts
  // it keeps root's when the command switches to another user (a root brig
  // running the jail as an unprivileged one), and a private home of mode
  // 0700 owned by root would be closed to its own user.
  std::string owned_tmpfs_data(const Mount& m) const {
    std::string d = tmpfs_data(m.mode, m.size_bytes);
    if (spec_.namespaces.user && spec_.identity.inside_uid != 0) {
      d += ",uid=" + std::to_string(spec_.identity.inside_uid) +
           ",gid=" + std::to_string(spec_.identity.inside_gid);
    }
    return d;
  }

  void plan_one(const Mount& m, size_t i) {
    const std::string tag = " (mounts[" + std::to_string(i) + "])";
    const std::string at = kNew + m.target;
    switch (m.kind) {
      case Mount::Kind::bind:
        plan_bind(m, at, tag);
        return;
      case Mount::Kind::tmpfs:
        make_dirs(m.target, true);
        fs(at, "tmpfs", owned_tmpfs_data(m),
           MS_NOSUID | MS_NODEV | (m.writable ? 0ul : static_cast<unsigned long>(MS_RDONLY)),
           "tmpfs on " + m.target + tag);
        return;
      case Mount::Kind::proc:
        plan_proc(m, at, tag);
        return;
      case Mount::Kind::dev:
        plan_dev(m, at, tag);
        return;
      case Mount::Kind::git:
        plan_git(m, at, tag);
        return;
      case Mount::Kind::mask:
        return;  // plan_mask, once every bind is planned
      case Mount::Kind::file:
        return;  // plan_file, once every mask is planned
    }
  }

  // The workspace's .git as git needs it (git_state.h). Only what lstat
  // finds now decides; the child opens it without following symlinks, and
  // nothing inside it is read here.
  void plan_git(const Mount& m, const std::string& at, const std::string& tag) {
    if (!target_is_plain(m, tag)) return;
    switch (host_.type(m.target)) {
      case HostView::Type::dir: {
        pin_parents(m.target, tag);  // none where .git is right in the workspace
        Op& op = add(Op::Kind::git_state, at, "git state layer on " + m.target + tag);
        op.source = kGitScratch;
        op.data = tmpfs_data(0755, m.size_bytes);
        op.optional = true;
        op.host = m.target;  // the directory it sits on, as for a mask
        shown_.push_back({m.target, m.target, true});
        return;
      }
      case HostView::Type::file: {
        // A linked worktree's pointer: pinned, and what it names not bound.
        Mount file = m;
        file.kind = Mount::Kind::bind;
        file.source = m.target;
        file.writable = false;
        plan_bind(file, at, tag);
        return;
      }
      default:
        return;
    }
  }

  // The bind planned so far whose jail path holds `target` most closely
  // (not `target` itself); nullptr if `target` lies in brig's own tmpfs.
  const Shown* container_of(const std::string& target) const {
    const Shown* best = nullptr;
    for (const Shown& b : shown_)
      if (b.target != target && is_within(target, b.target) &&
          (best == nullptr || b.target.size() > best->target.size()))
        best = &b;
    return best;
  }

  // Whether any component of `host_path` below `root` is a symlink. A path
  // inside a bound tree is the jail's to change, and the planner never
  // follows what a jail could have planted.
  bool symlink_below(const std::string& root, const std::string& host_path) const {
    for (size_t pos = root == "/" ? 1 : root.size() + 1; pos <= host_path.size();) {
      size_t end = host_path.find('/', pos);
      if (end == std::string::npos) end = host_path.size();
      if (host_.type(host_path.substr(0, end)) == HostView::Type::symlink) return true;
      pos = end + 1;
    }
    return false;
  }

  // A mount point inside another bind is a host path: refused when a symlink
  // leads to it (skipped if optional, so a symlink planted at an optional
  // path never stops later jails).
  bool target_is_plain(const Mount& m, const std::string& tag) {
    const Shown* outer = container_of(m.target);
    if (outer == nullptr) return true;
    const std::string host_path = outer->source + m.target.substr(outer->target.size());
    if (!symlink_below(outer->source, host_path)) return true;
    if (!m.optional && !error_)
      error_ = Error{"plan mounts", m.target,
                     "a symlink leads to this mount point inside the bound tree " + outer->target +
                         " (host " + host_path +
                         "); brig does not follow symlinks a jail could have planted: replace it "
                         "with a directory or file, or mark the path optional" +
                         tag,
                     ELOOP};
    return false;
  }

  // Hides the host file `m.target` names wherever a bind shows it: at its own
  // path, and under any other jail path whose bind's source holds its real
  // path (a symlinked home, a bind of a parent through a symlink). Only where
  // the closest mount is a bind: elsewhere it is absent already.
  void plan_mask(const Mount& m, size_t i) {
    // A symlink a jail could have made is not followed: one planted at a
    // hidden path would otherwise mask any file it names (libc) in every
    // later jail. What it leads to is not the hidden file, and the jail sees
    // that target wherever a bind shows it anyway.
    if (symlink_in_writable_tree(m.target)) return;
    const auto real = host_.resolve(m.target);
    if (!real) return;  // nothing there to hide
    std::set<std::string> at;
    for (const Shown& b : shown_)
      if (is_within(*real, b.source))
        at.insert(b.target + real->substr(b.source == "/" ? 0 : b.source.size()));
    const std::string tag = " (mounts[" + std::to_string(i) + "])";
    for (const std::string& jail_path : at) {
      // A snapshot left it (or a directory above it) out already.
      const bool left_out =
          std::any_of(snapshotted_.begin(), snapshotted_.end(),
                      [&](const std::string& p) { return is_within(jail_path, p); });
      if (left_out || !closest_is_bind(jail_path)) continue;
      // Under a writable bind, so that no jail can rename a directory above
      // it away and have the next jail show the file there unmasked.
      pin_parents(jail_path, tag);
      Op& op = add(Op::Kind::mask, kNew + jail_path,
                   "mask " + m.target + (jail_path == m.target ? "" : " at " + jail_path) + tag);
      op.optional = true;
      op.host = *real;  // the file it sits on: a jail built ahead checks it is still there
    }
  }

  // A file of brig's (`m.content`) over the host file `m.target` wherever a
  // bind shows it, as plan_mask finds those places: the host's
  // /etc/resolv.conf may be a symlink into /run, which the planner follows
  // unless a tree the jail can write holds it. The content is written to the
  // scratch tmpfs and bound from there read-only; the scratch goes at the
  // pivot, the bind stays.
  void plan_file(const Mount& m, size_t i) {
    const std::string tag = " (mounts[" + std::to_string(i) + "])";
    std::set<std::string> at;
    std::string covered;  // the host file
    if (!symlink_in_writable_tree(m.target))
      if (const auto real = host_.resolve(m.target);
          real && host_.type(*real) == HostView::Type::file) {
        covered = *real;
        for (const Shown& b : shown_)
          if (is_within(*real, b.source))
            at.insert(b.target + real->substr(b.source == "/" ? 0 : b.source.size()));
      }
    std::erase_if(at, [&](const std::string& p) { return !closest_is_bind(p); });
    if (at.empty()) {
      if (m.optional) return;  // nothing shows the file: nothing to cover
      if (!error_)
        error_ = Error{"plan mounts", m.target,
                       "no bind shows a regular file there for brig's file to cover" + tag, ENOENT};
      return;
    }
    for (const std::string& jail_path : at) {
      pin_parents(jail_path, tag);
      Op& op = add(Op::Kind::file, kNew + jail_path,
                   "brig's " + m.target + (jail_path == m.target ? "" : " at " + jail_path) + tag);
      op.source = "/file" + std::to_string(i);
      op.data = m.content;
      op.host = covered;  // the file it sits on, as for a mask
    }
  }

  // Whether a component of the host path `path` is a symlink inside a tree a
  // writable bind shows.
  bool symlink_in_writable_tree(const std::string& path) const {
    for (size_t pos = 1; pos <= path.size();) {
      size_t end = path.find('/', pos);
      if (end == std::string::npos) end = path.size();
      const std::string prefix = path.substr(0, end);
      pos = end + 1;
      if (host_.type(prefix) != HostView::Type::symlink) continue;
      for (const Shown& b : shown_)
        if (b.writable && b.source != prefix && is_within(prefix, b.source)) return true;
    }
    return false;
  }

  // Whether the spec mount closest above `jail_path` is a bind (or it is
  // one), or the git layer, which shows host files too.
  bool closest_is_bind(const std::string& jail_path) const {
    const Mount* deepest = nullptr;
    for (const Mount& o : spec_.mounts)
      if (o.kind != Mount::Kind::mask && o.kind != Mount::Kind::file &&
          is_within(jail_path, o.target) &&
          (deepest == nullptr || o.target.size() > deepest->target.size()))
        deepest = &o;
    return deepest != nullptr &&
           (deepest->kind == Mount::Kind::bind || deepest->kind == Mount::Kind::git);
  }

  // A keep_owner bind: the launcher makes its tree from the host path
  // `source` (resolved, or as named when missing: it then passes no tree and
  // the child reports ENOENT).
  void attach(const Mount& m, const std::string& source, const std::string& at, uint64_t attr,
              const std::string& what) {
    Op& op = add(Op::Kind::attach, at, what + ", keeping its owner (idmapped)");
    op.source = source;
    op.host = source;
    op.attr = attr;
    op.recursive = true;
    op.optional = m.optional;
    op.fd = kFirstTreeFd + trees_++;
  }

  // The attached tree (closest) whose host source holds `host_path`.
  const Shown* kept_tree_of(const std::string& host_path) const {
    const Shown* best = nullptr;
    for (const Shown& b : shown_)
      if (b.keep_owner && is_within(host_path, b.source) &&
          (best == nullptr || b.source.size() > best->source.size()))
        best = &b;
    return best;
  }

  // Where the child takes a bind of the host path `resolved` from: the
  // jail's side of an attached tree that holds it, so it shows that tree's
  // owners (the unprivileged init of a mapped jail may not even walk the
  // host path, a 0700 root workspace); else the host's, under the old root.
  // Empty: it lies in a keep_owner tree that is mounted after it (refused).
  std::string bind_source(const Mount& m, const std::string& resolved, const std::string& tag) {
    if (const Shown* kept = kept_tree_of(resolved)) {
      const std::string rest =
          kept->source == "/" ? resolved : resolved.substr(kept->source.size());
      return kNew + (kept->target == "/" ? "" : kept->target) + (rest.empty() ? "" : rest);
    }
    for (const Mount& o : spec_.mounts) {
      if (o.kind != Mount::Kind::bind || !o.keep_owner || &o == &m) continue;
      const auto outer = host_.resolve(o.source);
      if (outer && is_within(resolved, *outer)) {
        if (!error_)
          error_ = Error{"plan mounts", m.target,
                         "its source " + resolved + " lies in " + o.target +
                             ", which keeps its owner (an idmapped mount) and is mounted after "
                             "it; bind it by a path inside " +
                             o.target + tag,
                         0};
        return "";
      }
    }
    return kOld + resolved;
  }

  // A mount inside a writable bind (a bind, a mask, brig's file, the git
  // layer) covers the directory or file its path names when the jail is
  // built; the path's parents are the jail's to rename. A jail that renamed
  // one away and left a stand-in would have the next jail (or a file worker
  // started meanwhile) mount the stand-in and show the original, unmounted,
  // under the new name: writable where it was read-only, readable where it
  // was hidden. So each directory between the writable bind's root and the
  // mount point is bound on itself first: a mount point, which the jail can
  // neither rename nor remove (EBUSY), as the mount point itself. The
  // planner has checked that no symlink leads there (target_is_plain,
  // symlink_in_writable_tree).
  void pin_parents(const std::string& target, const std::string& tag) {
    const Shown* outer = container_of(target);
    if (outer == nullptr || !outer->writable) return;
    const std::string root = outer->target == "/" ? "" : outer->target;
    for (size_t pos = root.size() + 1; pos < target.size();) {
      const size_t end = target.find('/', pos);
      if (end == std::string::npos) break;
      const std::string dir = target.substr(0, end);
      pos = end + 1;
      if (pinned_.contains(dir)) continue;
      const std::string host =
          (outer->source == "/" ? "" : outer->source) + dir.substr(root.size());
      if (host_.type(host) != HostView::Type::dir) return;  // made by the mount, if at all
      // A pin is a bind of the host's directory: it would cover a mount
      // planned inside it before. Each mount pins its parents before it is
      // planned, so none is; should a new kind of mount skip that, its
      // parents stay unpinned rather than it being covered.
      if (mounts_within(kNew + dir)) return;
      pinned_.insert(dir);
      const std::string source = outer->keep_owner ? kNew + dir : kOld + host;
      bind(source, kNew + dir, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true, true,
           "pin " + dir + " (a parent of " + target + ") on itself" + tag);
    }
  }

  bool mounts_within(const std::string& path) const {
    using K = Op::Kind;
    return std::any_of(plan_.ops.begin(), plan_.ops.end(), [&](const Op& op) {
      return op.kind != K::mkdir && op.kind != K::touch && op.kind != K::symlink &&
             is_within(op.path, path);
    });
  }

  void plan_bind(const Mount& m, const std::string& at, const std::string& tag) {
    const std::string what =
        "bind " + m.source + " on " + m.target + (m.writable ? " read-write" : " read-only") + tag;
    const uint64_t attr = m.writable ? MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
                                     : MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (!target_is_plain(m, tag)) return;
    pin_parents(m.target, tag);
    const auto resolved = host_.resolve(m.source);
    if (!resolved) {
      if (m.optional) return;
      // Left to the child, which reports ENOENT for this op like any other
      // mount failure (and catches a source removed after planning the same way).
      make_dirs(m.target, true);
      if (m.keep_owner)
        attach(m, m.source, at, attr, what);
      else
        bind(kOld + m.source, at, attr, true, false, what);
      return;
    }
    if (m.source == m.target && host_.type(m.source) == HostView::Type::symlink &&
        provided_at_own_path(*resolved)) {
      if (const auto text = host_.link_text(m.source)) {
        make_dirs(m.target, false);
        symlink(*text, at, "symlink " + m.target + " -> " + *text + tag);
        return;
      }
    }
    const bool dir = host_.type(*resolved) == HostView::Type::dir;
    std::string source;
    if (!m.keep_owner) {
      source = bind_source(m, *resolved, tag);
      if (source.empty()) return;
    }
    make_dirs(m.target, dir);
    if (!dir) add(Op::Kind::touch, at, "mount point " + m.target + tag);
    if (m.keep_owner)
      attach(m, *resolved, at, attr, what);
    else
      bind(source, at, attr, true, m.optional, what).host = *resolved;
    shown_.push_back({m.target, *resolved, m.writable, m.keep_owner});
    // Not in a kept tree: its entries could only be bound from the jail's
    // side of it, which the snapshot's tmpfs covers. Masks hide there.
    if (!m.writable && dir && !m.keep_owner && kept_tree_of(*resolved) == nullptr)
      plan_snapshots(shown_.back(), tag);
  }

  // Where the hidden path `m.target` is, or would be, on the host: its real
  // path, or its deepest existing ancestor's real path with the rest
  // appended; and whether it exists.
  std::optional<std::pair<std::string, bool>> host_location(const Mount& m) const {
    if (const auto real = host_.resolve(m.target)) return std::pair{*real, true};
    for (size_t cut = m.target.rfind('/'); cut != std::string::npos && cut > 0;
         cut = m.target.rfind('/', cut - 1)) {
      if (const auto up = host_.resolve(m.target.substr(0, cut)))
        return std::pair{*up + m.target.substr(cut), false};
    }
    return std::nullopt;
  }

  // The snapshots that keep the spec's hidden paths out of the read-only
  // bind `b` (see mounts.h), planned right after it: before the mounts
  // inside it, which go on top of its snapshots' entries.
  void plan_snapshots(const Shown& b, const std::string& tag) {
    std::map<std::string, Snapshot> snaps;  // by jail path: parents sort first
    for (const Mount& m : spec_.mounts) {
      if (m.kind != Mount::Kind::mask || symlink_in_writable_tree(m.target)) continue;
      // Below another hidden path: that one's stand-in hides this one too
      // (as a chain, its directory would show all but this).
      const bool under_hidden =
          std::any_of(spec_.mounts.begin(), spec_.mounts.end(), [&](const Mount& o) {
            return o.kind == Mount::Kind::mask && o.target != m.target &&
                   is_within(m.target, o.target);
          });
      if (under_hidden) continue;
      const auto where = host_location(m);
      if (!where || where->first == b.source || !is_within(where->first, b.source)) continue;
      const auto& [host_path, exists] = *where;
      const std::string rest = host_path.substr(b.source == "/" ? 0 : b.source.size());
      const std::string jail_path = b.target + rest;
      // A deeper mount of the spec over the path decides there, not this bind.
      const bool deeper =
          std::any_of(spec_.mounts.begin(), spec_.mounts.end(), [&](const Mount& o) {
            return o.kind != Mount::Kind::mask && o.target.size() > b.target.size() &&
                   is_within(jail_path, o.target);
          });
      if (deeper) continue;
      // Down the existing directories, each a snapshot of the host's.
      std::string jail_dir = b.target, host_dir = b.source;
      for (size_t pos = 1; pos < rest.size();) {
        size_t end = rest.find('/', pos);
        if (end == std::string::npos) end = rest.size();
        const std::string name = rest.substr(pos, end - pos);
        pos = end + 1;
        const std::string host_next = (host_dir == "/" ? "" : host_dir) + "/" + name;
        Snapshot& snap = snaps[jail_dir];
        snap.host = host_dir;
        const HostView::Type type = host_.type(host_next);
        if (end == rest.size()) {
          if (exists) snap.hidden[name] = type;
          snapshotted_.insert(jail_path);
          break;
        }
        if (type != HostView::Type::dir) {
          // The rest does not exist (yet): this directory, without it, is enough.
          snapshotted_.insert(jail_path);
          break;
        }
        snap.chain.insert(name);
        jail_dir += "/" + name;
        host_dir = host_next;
      }
    }
    for (const auto& [jail_dir, snap] : snaps) plan_snapshot(jail_dir, snap, tag);
  }

  void plan_snapshot(const std::string& jail_dir, const Snapshot& snap, const std::string& tag) {
    const std::string at = kNew + jail_dir;
    fs(at, "tmpfs", tmpfs_data(0755, 65536), MS_NOSUID | MS_NODEV,
       "snapshot of " + snap.host + " on " + jail_dir + tag);
    const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    for (const auto& [name, type] : host_.entries(snap.host)) {
      const std::string to = at + "/" + name;
      const std::string from = kOld + (snap.host == "/" ? "" : snap.host) + "/" + name;
      // Hidden first: a hidden directory that is also on another hidden
      // path's chain stays empty.
      if (const auto h = snap.hidden.find(name); h != snap.hidden.end()) {
        add(h->second == HostView::Type::dir ? Op::Kind::mkdir : Op::Kind::touch, to,
            "empty stand-in for hidden " + jail_dir + "/" + name + tag);
        continue;
      }
      if (snap.chain.contains(name)) {
        add(Op::Kind::mkdir, to, "mkdir " + jail_dir + "/" + name + " for its snapshot" + tag);
        continue;
      }
      switch (type) {
        case HostView::Type::missing:
          break;
        case HostView::Type::symlink:
          if (const auto text = host_.link_text(from.substr(std::string(kOld).size())))
            symlink(*text, to, "symlink " + jail_dir + "/" + name + " -> " + *text + tag);
          break;
        case HostView::Type::dir:
          add(Op::Kind::mkdir, to, "mkdir " + jail_dir + "/" + name + tag);
          bind(from, to, ro, true, true, "bind " + jail_dir + "/" + name + " read-only" + tag);
          break;
        default:
          add(Op::Kind::touch, to, "mount point " + jail_dir + "/" + name + tag).optional = true;
          bind(from, to, ro, true, true, "bind " + jail_dir + "/" + name + " read-only" + tag);
          break;
      }
    }
    add(Op::Kind::set_attr, at, "make the snapshot on " + jail_dir + " read-only" + tag).attr = ro;
  }

  void plan_proc(const Mount& m, const std::string& at, const std::string& tag) {
    make_dirs(m.target, true);
    fs(at, "proc", "", MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc on " + m.target + tag);
    const std::vector<std::string> root_only = host_.proc_root_only();
    for (const std::string& p : root_only)
      add(Op::Kind::mask, at + "/" + p, "mask root-only " + m.target + "/" + p + tag).optional =
          true;
    if (spec_.identity.outside_uid != 0) return;
    for (const char* p : kProcReadOnly)
      bind(at + "/" + p, at + "/" + p,
           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true, true,
           "read-only " + m.target + "/" + p + tag);
    for (const char* p : kProcMasked)
      if (!std::ranges::binary_search(root_only, std::string(p)))
        add(Op::Kind::mask, at + "/" + p, "mask " + m.target + "/" + p + tag).optional = true;
  }

  void plan_dev(const Mount& m, const std::string& at, const std::string& tag) {
    make_dirs(m.target, true);
    fs(at, "tmpfs", "mode=0755,size=65536", MS_NOSUID | MS_NOEXEC, "tmpfs on " + m.target + tag);
    for (const char* d : kDevices) {
      // A user namespace cannot mknod: the host's device nodes are bound in.
      const std::string node = at + "/" + d;
      add(Op::Kind::touch, node, "mount point " + m.target + "/" + d + tag);
      bind(std::string(kOld) + "/dev/" + d, node, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false,
           true, "bind /dev/" + std::string(d) + " on " + m.target + "/" + d + tag);
    }
    for (const Device& d : m.devices) plan_device(d, m.target, tag);
    add(Op::Kind::mkdir, at + "/pts", "mkdir " + m.target + "/pts" + tag);
    fs(at + "/pts", "devpts", "newinstance,ptmxmode=0666,mode=0620", MS_NOSUID | MS_NOEXEC,
       "devpts on " + m.target + "/pts" + tag);
    symlink("pts/ptmx", at + "/ptmx", "symlink " + m.target + "/ptmx" + tag);
    add(Op::Kind::mkdir, at + "/shm", "mkdir " + m.target + "/shm" + tag);
    fs(at + "/shm", "tmpfs", tmpfs_data(01777, m.size_bytes), MS_NOSUID | MS_NODEV,
       "tmpfs on " + m.target + "/shm" + tag);
    const std::pair<const char*, const char*> links[] = {{"fd", "/proc/self/fd"},
                                                         {"stdin", "/proc/self/fd/0"},
                                                         {"stdout", "/proc/self/fd/1"},
                                                         {"stderr", "/proc/self/fd/2"}};
    for (const auto& [name, text] : links)
      symlink(text, at + "/" + name, "symlink " + m.target + "/" + name + tag);
    add(Op::Kind::set_attr, at, "make " + m.target + " read-only" + tag).attr = MOUNT_ATTR_RDONLY;
  }

  // A policy's extra device (or directory of devices), at the same place
  // under the dev mount. Bound without nodev, like the minimal ones: that is
  // the point. A symlink is followed only to a device or directory inside
  // /dev (/dev/core points at /proc/kcore).
  void plan_device(const Device& d, const std::string& dev_target, const std::string& tag) {
    const std::string target = dev_target + d.path.substr(4);  // "/dev/net/tun" -> "/net/tun"
    const std::string what = "bind device " + d.path + " on " + target + tag;
    const auto resolved = host_.resolve(d.path);
    if (!resolved) {
      if (d.optional) return;
      // Left to the child, which fails with ENOENT naming this op.
      make_dirs(target, false);
      add(Op::Kind::touch, kNew + target, "mount point " + target + tag);
      bind(kOld + d.path, kNew + target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, false, what);
      return;
    }
    const HostView::Type type = host_.type(*resolved);
    if (!is_within(*resolved, "/dev") ||
        (type != HostView::Type::device && type != HostView::Type::dir)) {
      if (!error_)
        error_ = Error{
            "plan mounts", d.path,
            "not a device node or a directory of them under /dev (it is " + *resolved + ")" + tag,
            0};
      return;
    }
    const bool dir = type == HostView::Type::dir;
    make_dirs(target, dir);
    if (!dir) add(Op::Kind::touch, kNew + target, "mount point " + target + tag);
    bind(kOld + *resolved, kNew + target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, d.optional,
         what);
  }

  const JailSpec& spec_;
  const HostView& host_;
  std::vector<Shown> shown_;           // binds planned so far, in plan order
  std::set<std::string> snapshotted_;  // jail paths of hidden files a snapshot leaves out
  std::optional<Error> error_;         // the first device or bind the plan refuses
  Plan plan_;
  int trees_ = 0;                 // attach ops planned so far
  std::set<std::string> made_;    // directories (jail paths) already made or planned
  std::set<std::string> pinned_;  // directories (jail paths) bound on themselves: pin_parents
};

// --- child side: raw syscalls only ---

// Every path the child mounts on or from is opened with openat2 and
// RESOLVE_NO_SYMLINKS (child_fs.h). Paths inside a bound host tree are the
// jail's to change (another jail may run against the same workspace while
// this one is built). The planner resolved host symlinks already, so a
// correct plan never meets one.
int open_exact(const char* path, uint64_t flags) {
  return child_fs::open_exact(AT_FDCWD, path, O_PATH | flags);
}

// The directory holding `path`, opened as open_exact does; *name is the last component.
int open_parent(const char* path, const char** name) {
  const char* slash = ::strrchr(path, '/');
  if (slash == nullptr || slash[1] == '\0') return -EINVAL;
  char dir[PATH_MAX];
  const size_t n = slash == path ? 1 : static_cast<size_t>(slash - path);
  if (n >= sizeof dir) return -ENAMETOOLONG;
  ::memcpy(dir, path, n);
  dir[n] = '\0';
  *name = slash + 1;
  return open_exact(dir, O_DIRECTORY);
}

using Fd = child_fs::ScopedFd;
using child_fs::mount_on;

int bind(const char* source, const char* target, uint64_t attr, bool recursive) {
  const Fd from{open_exact(source, 0)};
  if (from.fd < 0) return -from.fd;
  const Fd to{open_exact(target, 0)};
  if (to.fd < 0) return -to.fd;
  return child_fs::attach_copy(from.fd, to.fd, attr, recursive);
}

// A tree the launcher made (open_tree + MOUNT_ATTR_IDMAP, its flags set),
// inherited at `tree_fd`: attached, never visible before its flags are.
int attach(int tree_fd, const char* target) {
  if (::fcntl(tree_fd, F_GETFD) < 0) return ENOENT;  // no source: the launcher passed no tree
  const Fd tree{tree_fd};
  const Fd to{open_exact(target, 0)};
  if (to.fd < 0) return -to.fd;
  return ::syscall(SYS_move_mount, tree.fd, "", to.fd, "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0
             ? 0
             : errno;
}

int set_attr(const char* path, uint64_t attr, bool recursive) {
  const Fd at{open_exact(path, 0)};
  if (at.fd < 0) return -at.fd;
  mount_attr ma{};
  ma.attr_set = attr;
  return ::syscall(SYS_mount_setattr, at.fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
                   &ma, sizeof ma) == 0
             ? 0
             : errno;
}

int mount_fs(const Op& op) {
  const char* data = op.data.empty() ? nullptr : op.data.c_str();
  // The scratch tmpfs goes on a host directory before anything is bound.
  if (!op.path.starts_with(kNew))
    return ::mount(op.source.c_str(), op.path.c_str(), op.source.c_str(), op.flags, data) == 0
               ? 0
               : errno;
  const Fd at{open_exact(op.path.c_str(), O_DIRECTORY)};
  if (at.fd < 0) return -at.fd;
  return mount_on(at.fd, op.source.c_str(), op.source.c_str(), op.flags, data);
}

// An empty read-only tmpfs attached over the directory `dir_fd` holds. Made
// with fsopen/fsmount and attached by fd: no permission on the directory is
// needed (mount_on's fchdir needs search permission, which the unprivileged
// init of a mapped jail lacks on a 0700 ~/.ssh it must still mask).
int mask_dir(int dir_fd) {
  const Fd fs{static_cast<int>(::syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC))};
  if (fs.fd < 0) return errno;
  if (::syscall(SYS_fsconfig, fs.fd, FSCONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
      ::syscall(SYS_fsconfig, fs.fd, FSCONFIG_SET_STRING, "size", "4096", 0) != 0 ||
      ::syscall(SYS_fsconfig, fs.fd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return errno;
  const Fd mnt{static_cast<int>(
      ::syscall(SYS_fsmount, fs.fd, FSMOUNT_CLOEXEC,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC))};
  if (mnt.fd < 0) return errno;
  return ::syscall(SYS_move_mount, mnt.fd, "", dir_fd, "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0
             ? 0
             : errno;
}

int mask(const char* path) {
  const Fd at{open_exact(path, 0)};
  // A path the init cannot reach (a directory on the way it may not
  // search) is out of the command's reach too: the command runs as the same
  // or a less privileged uid, with no capabilities. Nothing to hide.
  if (at.fd == -EACCES) return 0;
  if (at.fd < 0) return -at.fd;
  struct stat st;
  if (::fstat(at.fd, &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return mask_dir(at.fd);
  // On the file just looked at, not on whatever its path names by now.
  const Fd null{open_exact("/oldroot/dev/null", 0)};
  if (null.fd < 0) return -null.fd;
  return child_fs::attach_copy(null.fd, at.fd,
                               MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false);
}

// Writes `content` to `scratch` (a new file in the scratch tmpfs, the
// child's "/" during setup) and binds it read-only over `path`.
int place_file(const char* scratch, const std::string& content, const char* path) {
  const Fd f{::open(scratch, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444)};
  if (f.fd < 0) return errno;
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(f.fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return bind(scratch, path,
              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, false);
}

int make_dir(const char* path) {
  const char* name = nullptr;
  const Fd parent{open_parent(path, &name)};
  if (parent.fd < 0) return -parent.fd;
  return ::mkdirat(parent.fd, name, 0755) == 0 || errno == EEXIST ? 0 : errno;
}

int touch(const char* path) {
  const char* name = nullptr;
  const Fd parent{open_parent(path, &name)};
  if (parent.fd < 0) return -parent.fd;
  const int fd = ::openat(parent.fd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd >= 0) {
    ::close(fd);
    return 0;
  }
  // An existing mount point that cannot be opened for writing (a read-only
  // bind, a device) is still a mount point.
  return errno == EROFS || errno == EACCES || errno == EISDIR
             ? (::faccessat(parent.fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno)
             : errno;
}

int make_symlink(const char* text, const char* path) {
  const char* name = nullptr;
  const Fd parent{open_parent(path, &name)};
  if (parent.fd < 0) return -parent.fd;
  return ::symlinkat(text, parent.fd, name) == 0 || errno == EEXIST ? 0 : errno;
}

int pivot(const char* new_root, const char* put_old) {
  return ::syscall(SYS_pivot_root, new_root, put_old) == 0 ? 0 : errno;
}

int apply_op(const Op& op, git_state::Kept* git) {
  const char* path = op.path.c_str();
  switch (op.kind) {
    case Op::Kind::make_private:
      return ::mount(nullptr, path, nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : errno;
    case Op::Kind::mount:
      return mount_fs(op);
    case Op::Kind::enter_scratch: {
      if (::chdir(path) != 0) return errno;
      if (::mkdir("newroot", 0755) != 0 || ::mkdir("oldroot", 0755) != 0) return errno;
      if (int e = pivot(".", "oldroot")) return e;
      return ::chdir("/") == 0 ? 0 : errno;
    }
    case Op::Kind::mkdir:
      return make_dir(path);
    case Op::Kind::touch:
      return touch(path);
    case Op::Kind::symlink:
      return make_symlink(op.source.c_str(), path);
    case Op::Kind::bind:
      return bind(op.source.c_str(), path, op.attr, op.recursive);
    case Op::Kind::set_attr:
      return set_attr(path, op.attr, op.recursive);
    case Op::Kind::attach:
      return attach(op.fd, path);
    case Op::Kind::mask:
      return mask(path);
    case Op::Kind::file:
      return place_file(op.source.c_str(), op.data, path);
    case Op::Kind::git_state:
      return git_state::mount_in_child(path, op.source.c_str(), op.data.c_str(), git);
    case Op::Kind::enter_root: {
      if (::chdir(path) != 0) return errno;
      // pivot_root(".", ".") stacks the old root (the scratch tmpfs, with
      // the host's root at /oldroot in it) on top of the new one at "/";
      // detaching "." takes both away at once and leaves only the new root.
      if (int e = pivot(".", ".")) return e;
      if (::umount2(".", MNT_DETACH) != 0) return errno;
      return ::chdir("/") == 0 ? 0 : errno;
    }
  }
  return EINVAL;
}

}  // namespace

const HostView& real_host() {
  static const RealHost host;
  return host;
}

HostView::Type RecordedHost::type(const std::string& path) const {
  if (auto it = types_.find(path); it != types_.end()) return it->second;
  return types_.emplace(path, host_.type(path)).first->second;
}

// realpath, one component at a time through type() and link_text(), so that
// its answer is a function of the answers kept: what unchanged() asks again
// is an lstat per distinct component (most paths share their first ones)
// and a readlink per symlink met, not a realpath per path (glibc's does a
// readlink per component of each). A relative path is asked as it is.
std::optional<std::string> RecordedHost::resolve(const std::string& path) const {
  if (auto it = resolved_.find(path); it != resolved_.end()) return it->second;
  if (!path.starts_with('/')) return asked_.emplace(path, host_.resolve(path)).first->second;
  std::vector<std::string> rest;  // components left, the next one last
  const auto push = [&](std::string_view p) {
    std::vector<std::string> parts;
    for (std::size_t pos = 0; pos <= p.size();) {
      std::size_t end = p.find('/', pos);
      if (end == std::string_view::npos) end = p.size();
      parts.emplace_back(p.substr(pos, end - pos));
      pos = end + 1;
    }
    rest.insert(rest.end(), parts.rbegin(), parts.rend());
  };
  push(std::string_view(path).substr(1));
  std::string out;  // "" is /
  int links = 0;
  std::optional<std::string> real;
  for (;;) {
    if (rest.empty()) {
      real = out.empty() ? "/" : out;
      break;
    }
    const std::string part = std::move(rest.back());
    rest.pop_back();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      out.resize(out.empty() ? 0 : out.rfind('/'));
      continue;
    }
    const std::string next = out + "/" + part;
    const Type t = type(next);
    if (t == Type::missing) break;  // ENOENT (or EACCES)
    if (t == Type::symlink) {
      const auto text = link_text(next);
      if (++links > 40 || !text || text->empty()) break;  // ELOOP
      if (text->starts_with('/')) {
        out.clear();
        push(std::string_view(*text).substr(1));
      } else {
        push(*text);
      }
      continue;
    }
    // A file or device with more to come: ENOTDIR (a trailing slash too).
    if (t != Type::dir && !rest.empty()) break;
    out = next;
  }
  return resolved_.emplace(path, real).first->second;
}

std::optional<std::string> RecordedHost::link_text(const std::string& path) const {
  if (auto it = links_.find(path); it != links_.end()) return it->second;
  return links_.emplace(path, host_.link_text(path)).first->second;
}

std::vector<std::pair<std::string, HostView::Type>> RecordedHost::entries(
    const std::string& path) const {
  if (auto it = entries_.find(path); it != entries_.end()) return it->second;
  return entries_.emplace(path, host_.entries(path)).first->second;
}

std::vector<std::string> RecordedHost::proc_root_only() const {
  if (!proc_root_only_) proc_root_only_ = host_.proc_root_only();
  return *proc_root_only_;
}

bool RecordedHost::unchanged(const HostView& host) const {
  // The cheapest questions first: a change is usually found by an lstat.
  for (const auto& [path, type] : types_)
    if (host.type(path) != type) return false;
  for (const auto& [path, text] : links_)
    if (host.link_text(path) != text) return false;
  for (const auto& [path, real] : asked_)
    if (host.resolve(path) != real) return false;
  for (const auto& [path, list] : entries_)
    if (host.entries(path) != list) return false;
  return !proc_root_only_ || host.proc_root_only() == *proc_root_only_;
}

std::size_t RecordedHost::questions() const {
  return types_.size() + links_.size() + asked_.size() + entries_.size() +
         (proc_root_only_ ? 1 : 0);
}

std::shared_ptr<const Plan> no_mounts() {
  static const auto none = std::make_shared<const Plan>();
  return none;
}

Result<Plan> plan(const JailSpec& spec, const HostView& host) {
  const std::unique_ptr<HostView> once = host.for_one_plan();
  return Planner(spec, once ? *once : host).run();
}

int apply_in_child(const Plan& plan, int* failed_op, git_state::Kept* git) {
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    const int err = apply_op(op, git);
    if (err == 0 || (op.optional && err == ENOENT)) continue;
    *failed_op = static_cast<int>(i);
    return err;
  }
  return 0;
}

}  // namespace brig::jail::mounts
