// ChildPlan: everything the jail's child needs, computed before clone. After
// the raw clone the child only reads it (no allocation, no locks), so every
// path, array and compiled filter must be ready here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/running_jail.h"
#include "jail/step_times.h"
#include "jail/steps/caps.h"
#include "jail/steps/exec.h"
#include "jail/steps/idmap.h"
#include "jail/steps/landlock.h"
#include "jail/steps/mounts.h"
#include "jail/steps/process.h"
#include "jail/steps/seccomp.h"

namespace brig::jail {

struct ChildPlan {
  // Fd numbers in the child once fds.moves are done (contain.cc step 2).
  static constexpr int kStatusFd = 3;  // status records; CLOEXEC
  static constexpr int kWatchFd = 4;   // read end of the launcher's watch pipe
  static constexpr int kSyncFd = 5;    // the sync socket, for the cgroups (then closed)
  static constexpr int kNetnsFd = 6;   // new_netns by a helper: its socket (then closed)
  // keep_owner binds' trees (idmap.h), one per attach op, from here on
  // (attached by the mount step, then closed).
  static constexpr int kFirstTreeFd = mounts::kFirstTreeFd;
  static_assert(kFirstTreeFd > kNetnsFd);

  int sync_fd = -1;               // the child's end of the sync socketpair (before the fd step)
  int sync_parent_fd = -1;        // the launcher's end, inherited by the clone: closed first
  int status_fd_before_fds = -1;  // the status pipe's number before the fd step
  process::FdPlan fds;

  bool pid_namespace = true;   // the init is PID 1: its exit ends every jail process
  bool await_command = false;  // built ahead: the command comes over kSyncFd (await_command)
  bool new_netns = false;      // its own network namespace, lo up (net::make_in_helper)
  // ...made by the child itself (net::make_in_child), not by a helper: a
  // jail built ahead with no listeners and no rules (launcher.cc, plan()).
  bool netns_in_child = false;
  bool set_hostname = false;  // a new uts namespace
  std::string hostname;
  // Never null; no ops = the host's root. Shared with the jails built ahead
  // for the same spec from a VerifiedPlan.
  std::shared_ptr<const mounts::Plan> mounts = mounts::no_mounts();

  // The init's ids: a root launcher's are not mapped (Identity::map_launcher
  // false), so the init takes the jail's own (uid, gid: root in its user
  // namespace) and sheds root's groups first thing, before any path is
  // touched; nothing in the jail is ever host root.
  bool init_takes_ids = false;
  uid_t host_uid = 0;  // identity.outside_uid, for the launcher's messages

  // The command's ids: when the launcher's own euid/egid are not the ones
  // the identity maps (root launching a jail as an unprivileged host user),
  // the command switches to identity.inside_*; drop_groups sheds the
  // launcher's supplementary groups (possible only when setgroups is allowed).
  bool switch_ids = false;
  uid_t uid = 0;
  gid_t gid = 0;
  bool drop_groups = false;

  std::vector<process::Rlimit> rlimits;        // with the stand-ins for cgroups (plan_rlimits)
  std::vector<process::PageRange> code_pages;  // released by the command before its execve
  std::string cwd;                             // inside the jail
  caps::Prepared caps;
  landlock::Prepared landlock;
  seccomp::Prepared seccomp;
  exec::Prepared exec;
  StepStamps stamps;  // timing off unless SpawnOptions::time_steps
};

// The plan for `spec` and `req` (an empty argv: a jail built ahead, whose
// command comes later): mounts, ids, exec paths, caps, Landlock, seccomp.
// The mounts are planned against `host`, unless `planned` is given: the
// plan of the same spec, taken as it is (VerifiedPlan). Fails with the step
// whose plan failed.
Result<std::unique_ptr<ChildPlan>> plan_child(
    const JailSpec& spec, const ExecRequest& req,
    const mounts::HostView& host = mounts::real_host(),
    std::shared_ptr<const mounts::Plan> planned = nullptr);

// What a jail built ahead was planned from, for built_from_current_host:
// its spec, and each question its mounts' planner asked the host, with the
// answer (the plan is a function of the two).
struct BuiltFrom {
  explicit BuiltFrom(const JailSpec& s) : spec(s), host(mounts::real_host()) {}
  JailSpec spec;
  mounts::RecordedHost host;
};

// Where each fd goes in the child (ChildPlan's fixed numbers): the
// request's stdio (checked open), brig's pipes and sockets, the idmapped
// trees; netns: the child's end of the network namespace helper's socket,
// or -1.
Result<void> plan_fds(ChildPlan& p, const ExecRequest& req, int status_w, int watch_r, int sync,
                      int netns, const std::vector<idmap::Tree>& trees);

// Which file each bind's host source is, and which host file or directory
// each mask, brig's file and git layer sits on (zeros when it cannot be
// stat'ed: a missing optional source, or the jail's own like /proc/sys), and
// for a tree that keeps its owner, that owner (its idmapping).
std::vector<BindSourceId> bind_source_ids(const mounts::Plan& plan);

}  // namespace brig::jail
