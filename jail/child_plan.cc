#include "jail/child_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>

#include "jail/step_error.h"

namespace brig::jail {
namespace {

// Whose ids the init and the command take (ChildPlan says why each).
void plan_identity(const JailSpec& spec, ChildPlan& p) {
  if (!spec.namespaces.user) return;
  const bool other_ids =
      ::geteuid() != spec.identity.outside_uid || ::getegid() != spec.identity.outside_gid;
  p.init_takes_ids = other_ids && !spec.identity.map_launcher;
  p.host_uid = spec.identity.outside_uid;
  p.switch_ids = other_ids && spec.identity.map_launcher;
  p.uid = spec.identity.inside_uid;
  p.gid = spec.identity.inside_gid;
  p.drop_groups = ::geteuid() == 0 && !p.init_takes_ids;
}

// The command's confinement, prepared while allocating is allowed.
Result<void> plan_confinement(const JailSpec& spec, ChildPlan& p) {
  auto caps = caps::prepare(spec.namespaces);
  if (!caps) return std::unexpected(at_step(SetupStep::caps, std::move(caps.error())));
  p.caps = std::move(*caps);
  auto ll = landlock::prepare(spec.landlock);
  if (!ll) return std::unexpected(at_step(SetupStep::landlock, std::move(ll.error())));
  p.landlock = std::move(*ll);
  auto sc = seccomp::prepare(spec.seccomp);
  if (!sc) return std::unexpected(at_step(SetupStep::seccomp, std::move(sc.error())));
  p.seccomp = std::move(*sc);
  return {};
}

}  // namespace

Result<std::unique_ptr<ChildPlan>> plan_child(const JailSpec& spec, const ExecRequest& req,
                                              const mounts::HostView& host,
                                              std::shared_ptr<const mounts::Plan> planned) {
  auto p = std::make_unique<ChildPlan>();
  if (planned) {
    p->mounts = std::move(planned);
  } else {
    auto mount_plan = mounts::plan(spec, host);
    if (!mount_plan)
      return std::unexpected(at_step(SetupStep::mount, std::move(mount_plan.error())));
    p->mounts = std::make_shared<const mounts::Plan>(std::move(*mount_plan));
  }
  if (!req.argv.empty()) p->exec = exec::prepare(req);  // else: awaiting, it comes later
  p->cwd = req.cwd.empty() ? "/" : req.cwd;
  p->pid_namespace = spec.namespaces.pid;
  p->new_netns = spec.namespaces.net && spec.network != NetworkMode::dangerously_host;
  p->set_hostname = spec.namespaces.uts;
  p->hostname = spec.hostname;
  plan_identity(spec, *p);
  BRIG_TRY_VOID(plan_confinement(spec, *p));
  p->code_pages = process::code_pages();
  return p;
}

Result<void> plan_fds(ChildPlan& p, const ExecRequest& req, int status_w, int watch_r, int sync,
                      int netns, const std::vector<idmap::Tree>& trees) {
  const int stdio[3] = {req.stdin_fd < 0 ? 0 : req.stdin_fd, req.stdout_fd < 0 ? 1 : req.stdout_fd,
                        req.stderr_fd < 0 ? 2 : req.stderr_fd};
  for (int i = 0; i < 3; ++i) {
    if (::fcntl(stdio[i], F_GETFD) < 0)
      return std::unexpected(step_sys_error(
          SetupStep::fds, "stdio fd " + std::to_string(stdio[i]) + " for fd " + std::to_string(i),
          errno));
    p.fds.moves.push_back({stdio[i], i, false});
  }
  p.fds.moves.push_back({status_w, ChildPlan::kStatusFd, true});
  p.fds.moves.push_back({watch_r, ChildPlan::kWatchFd, true});
  p.fds.moves.push_back({sync, ChildPlan::kSyncFd, true});
  if (netns >= 0) p.fds.moves.push_back({netns, ChildPlan::kNetnsFd, true});
  // Every attach op has its number; one without a tree (a missing source)
  // stays closed, which the child reads as ENOENT.
  int next = ChildPlan::kFirstTreeFd;
  for (const mounts::Op& op : p.mounts->ops)
    if (op.kind == mounts::Op::Kind::attach) next = std::max(next, op.fd + 1);
  for (const idmap::Tree& t : trees)
    if (t.fd) p.fds.moves.push_back({t.fd.get(), t.child_fd, true});
  p.fds.first_unused = next;
  return {};
}

std::vector<BindSourceId> bind_source_ids(const mounts::Plan& plan) {
  std::vector<BindSourceId> ids;
  for (const mounts::Op& op : plan.ops) {
    // A bind shows its source; a mask, brig's file and the git layer sit on
    // a host file or directory that may be replaced by rename or moved away
    // later, which lifts the mount (or takes it along) in every mount
    // namespace, a jail built ahead's too, while every plan stays the same.
    using K = mounts::Op::Kind;
    if (op.kind != K::bind && op.kind != K::attach && op.kind != K::mask && op.kind != K::file &&
        op.kind != K::git_state)
      continue;
    struct statx st {};
    BindSourceId id;
    if (!op.host.empty() && ::statx(AT_FDCWD, op.host.c_str(), 0,
                                    STATX_INO | STATX_UID | STATX_GID | STATX_BTIME, &st) == 0) {
      id.dev = ::makedev(st.stx_dev_major, st.stx_dev_minor);
      id.ino = st.stx_ino;
      // An inode number is reused once its file is gone (ext4 hands out the
      // lowest free one): its birth time tells a new file from the old.
      if (st.stx_mask & STATX_BTIME) id.born = {st.stx_btime.tv_sec, st.stx_btime.tv_nsec};
      if (op.kind == K::attach) {
        id.uid = st.stx_uid;
        id.gid = st.stx_gid;
      }
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace brig::jail
