// The order of the jail's setup, after clone3. Everything here runs in a
// child of a raw clone, so only async-signal-safe calls are made: the plan
// was computed before clone.
#include "jail/contain.h"

#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jail/command_message.h"
#include "jail/status_record.h"
#include "jail/steps/cgroups.h"
#include "jail/steps/clone.h"
#include "jail/steps/pid1.h"
#include "jail/steps/net.h"

namespace brig::jail {
namespace {

// The command's code below runs on command_stack, which AddressSanitizer
// does not know as a stack: the functions that end in a noreturn call are
// left uninstrumented, or ASan's unpoisoning of "the current stack" before
// such calls warns on the command's stderr. (No effect in other builds.)
#define BRIG_ON_COMMAND_STACK __attribute__((no_sanitize("address")))

BRIG_ON_COMMAND_STACK [[noreturn]] void fail(Step step, int err, int index = -1,
                                             int exit_code = 125) {
  report_setup_failure(ChildPlan::kStatusFd, step, err, index);
  ::_exit(exit_code);
}

// The command, started by the init. Its confinement comes last, in the order
// each layer needs: caps are dropped while the process may still change
// them; no_new_privs before Landlock and seccomp (which need it without
// CAP_SYS_ADMIN); seccomp last so that it need not allow any setup syscall.
BRIG_ON_COMMAND_STACK [[noreturn]] void run_command(const ChildPlan& p,
                                                    const cgroups::Received& cgroups,
                                                    const command::Received& c) {
  // Ignored signals and the blocked mask survive execve: the init's must not.
  const StepStamps stamps = p.stamps;
  if (int e = process::reset_signals_in_child()) fail(Step::signals, e);
  if (!p.pid_namespace && ::setpgid(0, 0) != 0) fail(Step::identity, errno);
  // Raw syscall, as for the ids: glibc's setgroups is a per-thread broadcast.
  if (p.drop_groups && ::syscall(SYS_setgroups, 0, nullptr) != 0) fail(Step::identity, errno);
  if (p.switch_ids)
    if (int e = process::switch_ids_in_child(p.uid, p.gid)) fail(Step::identity, e);
  stamps.mark(StepMark::command_ids);
  int failed = -1;
  if (int e = cgroups::join_in_child(cgroups, &failed)) fail(Step::cgroup, e, failed);
  if (int e = process::apply_rlimits_in_child(p.rlimits, cgroups.limits_pids, cgroups.limits_memory,
                                              &failed))
    fail(Step::rlimit, e, failed);
  if (::chdir(c.cwd) != 0) fail(Step::chdir, errno);
  stamps.mark(StepMark::command_limits);
  if (int e = caps::apply_in_child(p.caps)) fail(Step::caps, e);
  if (int e = caps::set_no_new_privs_in_child()) fail(Step::no_new_privs, e);
  stamps.mark(StepMark::command_caps);
  if (int e = landlock::apply_in_child(p.landlock)) fail(Step::landlock, e);
  stamps.mark(StepMark::command_landlock);
  // The command still runs in the init's memory (vfork-style): dropping the
  // code mappings here drops the init's, before the init runs again, so it
  // keeps resident only what it runs from now on (its supervise loop and the
  // few pages below), however late it is scheduled.
  process::release_code_pages(p.code_pages);
  stamps.mark(StepMark::command_seccomp_next);
  // Should be the last thing before execve: every later syscall is filtered.
  if (int e = seccomp::apply_in_child(p.seccomp)) fail(Step::seccomp, e);
  const int e = exec::exec_in_child(c.candidates, c.argv, c.envp);
  fail(Step::exec, e, -1, e == ENOENT || e == ENOTDIR ? 127 : 126);
}

// What the command reads of the init's memory.
struct CommandArgs {
  const ChildPlan* plan;
  const cgroups::Received* cgroups;
  const command::Received* command;
};

BRIG_ON_COMMAND_STACK int command_main(void* arg) {
  const auto* a = static_cast<const CommandArgs*>(arg);
  run_command(*a->plan, *a->cgroups, *a->command);
}

// The command's stack while it shares the init's memory (until execve). In
// .bss: pages the command does not touch cost nothing.
alignas(64) char command_stack[256 * 1024];

}  // namespace

void contain(const ChildPlan& p) {
  // 1. Wait until the launcher has written the uid/gid maps (and placed
  //    nothing else): before that, this process has no ids in its namespace.
  //    EOF instead of the go byte means the launcher gave up, or died: so
  //    this clone's copy of the launcher's end goes first, or a launcher
  //    killed before its go byte would leave this process waiting forever
  //    (holding every fd the launcher had).
  ::close(p.sync_parent_fd);
  char go = 0;
  while (::read(p.sync_fd, &go, 1) != 1) {
    if (errno != EINTR) ::_exit(125);
  }
  p.stamps.mark(StepMark::child_released);

  // 2. Fds: stdio from the request, brig's status and watch fds at fixed
  //    numbers, every other inherited fd closed before any jail code runs.
  //    Until they are in place, a failure goes to the status pipe's
  //    inherited number.
  if (int e = process::arrange_fds_in_child(p.fds)) {
    report_setup_failure(p.status_fd_before_fds, Step::fds, e);
    ::_exit(125);
  }
  p.stamps.mark(StepMark::child_fds);

  // 3. Identity. A jail whose uid map leaves the launcher's ids out (root
  //    mapping the jail's root to an unprivileged host id) is built by an
  //    init that takes the jail's own ids at once, with root's groups shed:
  //    before any path is touched, so no step of the jail runs as host root.
  //    First in this step: a change of euid resets the dumpable flag and
  //    clears the parent-death signal, both set below.
  if (p.init_takes_ids) {
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) fail(Step::identity, errno);
    if (int e = process::switch_ids_in_child(p.uid, p.gid)) fail(Step::identity, e);
  }
  //    Non-dumpable: the jail's processes (even uid 0 in the jail)
  //    can neither ptrace the init nor open its fds through /proc. Signals
  //    are set up before the parent-death signal so that it is never fatal
  //    half-way: the init handles it by shutting the jail down. setsid: no
  //    controlling terminal to push input into (TIOCSTI).
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) fail(Step::identity, errno);
  if (int e = pid1::block_signals_in_child()) fail(Step::signals, e);
  if (::prctl(PR_SET_PDEATHSIG, pid1::kLauncherDiedSignal, 0, 0, 0) != 0)
    fail(Step::identity, errno);
  if (::setsid() < 0) fail(Step::identity, errno);
  // Without a pid namespace, orphans of the command come back to the init
  // (not to whoever is above the launcher), so it can reap them.
  if (!p.pid_namespace && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
    fail(Step::identity, errno);
  p.stamps.mark(StepMark::child_identity);

  // 4. Mounts: the new root, pivoted into; needs the capabilities this
  //    process holds in its new user namespace.
  int failed = -1;
  git_state::Kept git;
  if (int e = mounts::apply_in_child(p.mounts, &failed, &git)) fail(Step::mount, e, failed);
  p.stamps.mark(StepMark::child_mounts);

  // 5. Network and uts namespaces: the network namespace the launcher's
  //    helper made meanwhile (lo up), joined by this process, so by the
  //    command too.
  if (p.new_netns) {
    bool in_loopback = false;
    if (int e = net::join_in_child(ChildPlan::kNetnsFd, &in_loopback))
      fail(in_loopback ? Step::loopback : Step::netns, e);
    ::close(ChildPlan::kNetnsFd);
  }
  if (p.set_hostname && ::sethostname(p.hostname.data(), p.hostname.size()) != 0)
    fail(Step::hostname, errno);
  p.stamps.mark(StepMark::child_network);

  // 6. The cgroups, which the launcher made meanwhile (an empty message when
  //    there are none); EOF means the launcher gave up.
  cgroups::Received cgroups;
  if (int e = cgroups::receive_in_child(ChildPlan::kSyncFd, &cgroups)) fail(Step::cgroup, e);
  p.stamps.mark(StepMark::child_cgroups_received);

  // 6b. A jail built ahead (spawn_awaiting) is complete here, and waits for
  //     its command: stdio, cwd, argv, env. Everything that confines the
  //     command still comes after, as for a fresh jail. A launcher that
  //     closes the socket instead dropped the jail unused.
  command::Received to_run{p.cwd.c_str(), p.exec.candidate_ptrs.data(), p.exec.argv.data(),
                           p.exec.envp.data()};
  if (p.await_command) {
    if (int e = command::receive_in_child(ChildPlan::kSyncFd, &to_run)) {
      if (e == EPIPE) {
        cgroups::remove_in_child(cgroups);  // nobody joined them
        ::_exit(125);
      }
      fail(Step::command, e);
    }
  }
  ::close(ChildPlan::kSyncFd);

  // 7. Start the command; this process stays as the jail's init. The
  //    signalfd exists before the command so that no SIGCHLD is missed. The
  //    command shares the init's memory until its execve (vfork-style, not
  //    the jail's own clone: nothing has to happen in the init meanwhile),
  //    which spares copying the init's page tables and then tearing the copy
  //    down at execve.
  const int sigfd = pid1::open_signalfd_in_child();
  if (sigfd < 0) fail(Step::signals, -sigfd);
  CommandArgs args{&p, &cgroups, &to_run};
  const pid_t command =
      clone::vfork_on_stack(command_main, &args, command_stack, sizeof command_stack);
  if (command < 0) fail(Step::fork, errno);
  p.stamps.mark(StepMark::command_execed);
  // The memory was shared, and a uid change in the command (switch_ids)
  // resets the shared mm's dumpable flag to fs.suid_dumpable, which may be 2:
  // make the init non-dumpable again.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) fail(Step::identity, errno);
  // The init writes nothing to stdio (it reports on the status pipe): with
  // its copies closed, the command's are the last, and brig's pipes reach
  // end of file as soon as the jail's processes are gone, not once the init
  // has exited as well. (The command has its own fd table: no CLONE_FILES.)
  for (int fd = 0; fd < 3; ++fd) ::close(fd);

  pid1::Config config;
  config.code_pages = &p.code_pages;
  config.pid_namespace = p.pid_namespace;
  config.status_fd = ChildPlan::kStatusFd;
  config.watch_fd = ChildPlan::kWatchFd;
  config.cgroups = &cgroups;
  config.git = &git;
  pid1::supervise(command, sigfd, config);
}

}  // namespace brig::jail
