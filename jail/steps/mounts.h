// The jail's filesystem: a plan made before clone (it may stat and resolve
// host paths and allocate), then applied in the child with raw syscalls.
//
// The child mounts a scratch tmpfs, pivots into it with the host's root at
// /oldroot, builds the jail's root on another tmpfs at /newroot from
// /oldroot/<source> binds (so host paths under the scratch's mount point,
// like /tmp, stay reachable), pivots into /newroot, detaches the scratch
// tmpfs and the host's root under it in one umount (each detaching umount
// waits for an RCU grace period) and makes the new root read-only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jail/base/error.h"
#include "jail/spec.h"
#include "jail/steps/git_state.h"

namespace brig::jail::mounts {

// What the planner learns about host paths. Tests pass a fake.
class HostView {
 public:
  enum class Type { missing, dir, file, symlink, device };  // device: character or block
  virtual ~HostView() = default;
  // lstat: the type of `path` itself (a symlink is not followed).
  virtual Type type(const std::string& path) const = 0;
  // realpath: `path` with every symlink resolved; nullopt if it does not exist.
  virtual std::optional<std::string> resolve(const std::string& path) const = 0;
  // readlink: a symlink's text; nullopt if `path` is not a symlink.
  virtual std::optional<std::string> link_text(const std::string& path) const = 0;
  // readdir: the entries of the directory `path` (not . and ..) with their
  // lstat types, sorted by name; empty if it cannot be read.
  virtual std::vector<std::pair<std::string, Type>> entries(const std::string& path) const = 0;
  // The names in the host's /proc (not per-process) that only root may
  // read: kpageflags, slabinfo, kmsg… They describe the host kernel, not
  // the jail, so every jail has them masked, whoever its uid 0 is.
  virtual std::vector<std::string> proc_root_only() const { return {}; }
  // A view for one plan that asks this one about each path at most once
  // (plan() uses it when there is one), or nullptr: ask this one every time.
  virtual std::unique_ptr<HostView> for_one_plan() const { return nullptr; }
};

// A HostView that asks `host` each question once and keeps the answers, so
// that whether the host still looks the same can be told without planning
// again: the planner reads the host only through its HostView, so a plan
// made with a RecordedHost is a function of the answers kept, and planning
// again would give the same plan while unchanged() holds. Asking only the
// distinct questions again is cheaper than planning again (the planner asks
// about the same paths many times). resolve() is answered here from type()
// and link_text() of each component, as realpath(3) would. Not thread-safe.
class RecordedHost final : public HostView {
 public:
  explicit RecordedHost(const HostView& host) : host_(host) {}
  Type type(const std::string& path) const override;
  std::optional<std::string> resolve(const std::string& path) const override;
  std::optional<std::string> link_text(const std::string& path) const override;
  std::vector<std::pair<std::string, Type>> entries(const std::string& path) const override;
  std::vector<std::string> proc_root_only() const override;

  // Whether `host` gives every answer kept as it was given: false at the
  // first one that differs.
  bool unchanged(const HostView& host) const;
  // How many distinct questions were asked (what unchanged() asks again).
  std::size_t questions() const;

 private:
  const HostView& host_;
  mutable std::map<std::string, Type> types_;
  mutable std::map<std::string, std::optional<std::string>> resolved_;  // answered here
  mutable std::map<std::string, std::optional<std::string>> asked_;     // relative: asked
  mutable std::map<std::string, std::optional<std::string>> links_;
  mutable std::map<std::string, std::vector<std::pair<std::string, Type>>> entries_;
  mutable std::optional<std::vector<std::string>> proc_root_only_;
};

// The fd number, in the child, of the first tree the launcher made for a
// keep_owner bind (Op::Kind::attach); the next ones follow.
inline constexpr int kFirstTreeFd = 7;

// The real host, through lstat/realpath/readlink. Its for_one_plan() view,
// a RecordedHost, keeps each path's lstat and readlink for the plan it serves and resolves
// paths component by component over them (as realpath(3) does), so a
// component that many paths share (/usr, /proc, the home) is looked at once
// per plan instead of once per path: the planner's ~600 syscalls per plan of
// the default policy become ~150 (the spawner plans on every pooled exec).
const HostView& real_host();

// One mount syscall (or a few, for pivots) the child performs.
struct Op {
  enum class Kind {
    make_private,   // mount(path, MS_REC|MS_PRIVATE): nothing propagates to or from the host
    mount,          // mount(source=fstype, path, flags, data)
    enter_scratch,  // chdir(path), mkdir newroot+oldroot, pivot_root(".", "oldroot")
    mkdir,          // mkdir(path, 0755); an existing directory is fine
    touch,          // create an empty file at path as a mount point; an existing one is fine
    symlink,        // symlink(source, path)
    bind,      // open_tree(source) + mount_setattr(attr) + move_mount(path): never visible writable
    set_attr,  // mount_setattr(path, attr) on a mount already there
    mask,      // a directory gets an empty read-only tmpfs, a file /dev/null; missing = skipped
    file,      // write `data` to the scratch file `source`, bind it read-only on path
    enter_root,  // chdir(path), pivot_root(".", "."), detach the old roots, chdir("/")
    git_state,   // git_state::mount_in_child(path, scratch dir `source`, tmpfs options `data`)
    attach,      // move_mount(fd, path): a keep_owner bind's tree, which the launcher made
                 // from the host path `source` (idmapped, with attr set) before clone; fd
                 // closed = the launcher found no source (ENOENT)
  };
  Kind kind = Kind::mkdir;
  std::string path;         // in the child's view during setup ("/newroot/usr")
  std::string source;       // bind: source ("/oldroot/usr", or "/newroot/<path>" inside an
                            // attached tree); attach: host path; symlink: text; mount: fstype
  std::string data;         // mount: the options string
  unsigned long flags = 0;  // mount: MS_* flags
  uint64_t attr = 0;        // bind, set_attr, attach: MOUNT_ATTR_* to set
  bool recursive = false;   // bind, set_attr: the whole tree below path
  int fd = -1;              // attach: the tree's fd in the child (kFirstTreeFd, …)
  std::string host;         // bind, attach: the host path shown, resolved ("" when the
                            // source is the jail's own, like /proc/sys)
  bool optional = false;    // a missing source or path (ENOENT) skips the op
  std::string what;         // for errors: "bind /usr on /usr (mounts[0])"
  friend bool operator==(const Op&, const Op&) = default;
};

struct Plan {
  std::vector<Op> ops;  // empty = no mount namespace work at all (the host's root)
  friend bool operator==(const Plan&, const Plan&) = default;
};

// A plan with no ops (the host's root), shared.
std::shared_ptr<const Plan> no_mounts();

// Plans `spec.mounts`. Host bind sources are resolved (so absolute symlinks
// inside them work after the pivot); a bind of a host symlink at its own path
// whose destination another bind provides becomes the same symlink (Debian's
// /lib -> usr/lib). A mount point inside a bound tree that a symlink leads
// to is refused (skipped if optional): the child resolves every path without
// following symlinks, so a changed one fails that jail with ELOOP. A mask
// hides the host file wherever a bind shows it (through host symlinks too).
// A git mount becomes a git_state op when .git is a directory, a read-only
// bind when it is a file, and nothing when it is missing or a symlink.
// Under a read-only bind, each directory from the bind's root down to a
// hidden path (or, when the path does not exist yet, down to its deepest
// existing ancestor) becomes a snapshot: a read-only tmpfs holding a bind of
// each entry the host had when the jail was planned, and an empty stand-in
// for the hidden one. What the host creates, renames or replaces there
// later never shows, hidden or not (a mask on the file itself is lifted by
// the kernel when the host replaces it, and a file created later has none).
// /proc's root-only files are masked; when the jail's uid 0 is host root
// (identity.outside_uid 0), /proc also gets the container runtimes'
// hardening: sys, sysrq-trigger, irq, bus and fs read-only; kcore, keys,
// timer_list and the like masked. A keep_owner bind becomes an attach op
// (the launcher makes its idmapped tree, see idmap.h), and a bind whose
// source lies in such a tree is made from the jail's side of it, so it shows
// the same owners (and the unprivileged init never walks the host path to
// it); one that would be mounted before that tree is refused. A dev
// mount's devices are bound without nodev. Fails only when no scratch
// directory exists, or a device resolves to something other than a device
// node or a directory inside /dev; a missing required bind source or device
// is left to the child, which reports ENOENT for its op.
Result<Plan> plan(const JailSpec& spec, const HostView& host);

// Runs the plan in the child. Returns 0, or the errno of the failed op with
// its index in *failed_op. What a git op leaves for the init goes in *git.
// Async-signal-safe.
int apply_in_child(const Plan& plan, int* failed_op, git_state::Kept* git);

}  // namespace brig::jail::mounts
