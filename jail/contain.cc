// The order of the jail's setup, after clone3, as two lists: contain() for
// the child that becomes the jail's init, run_command() for the command it
// starts. Each step is a function of its own below; the lists give the
// reason for each one's place. Everything here runs in a child of a raw
// clone, so only async-signal-safe calls are made: the plan was computed
// before clone. Each step stamps the SetupStep it ends (step_times.h).
#include "jail/contain.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "jail/command_message.h"
#include "jail/status_record.h"
#include "jail/steps/cgroups.h"
#include "jail/steps/clone.h"
#include "jail/steps/net.h"
#include "jail/steps/pid1.h"

namespace brig::jail {
namespace {

BRIG_ON_VFORK_STACK [[noreturn]] void fail(SetupStep step, int err, int index = -1,
                                           int exit_code = 125) {
  report_setup_failure(ChildPlan::kStatusFd, step, err, index);
  ::_exit(exit_code);
}

// ---- The command's steps: on command_stack, in the init's memory until
// its execve (clone::vfork_on_stack), so each is BRIG_ON_VFORK_STACK.

BRIG_ON_VFORK_STACK void reset_signals() {
  if (int e = process::reset_signals_in_child()) fail(SetupStep::signals, e);
}

// Without a pid namespace the init ends the jail by killing this group.
BRIG_ON_VFORK_STACK void own_process_group(const ChildPlan& p) {
  if (!p.pid_namespace && ::setpgid(0, 0) != 0) fail(SetupStep::identity, errno);
}

// A uid change resets the dumpable flag of the memory this process shares
// with the init to fs.suid_dumpable (which may be 1): cleared again at once,
// since a jail built ahead waits in that memory until its command comes.
// (execve gives the command's own memory its flag afresh.)
BRIG_ON_VFORK_STACK void take_command_ids(const ChildPlan& p) {
  if (p.drop_groups)
    if (int e = process::drop_groups_in_child()) fail(SetupStep::identity, e);
  if (p.switch_ids) {
    if (int e = process::switch_ids_in_child(p.uid, p.gid)) fail(SetupStep::identity, e);
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) fail(SetupStep::identity, errno);
  }
  p.stamps.mark(Side::command, SetupStep::identity);
}

BRIG_ON_VFORK_STACK void join_cgroups(const ChildPlan& p, const cgroups::Received& cgroups) {
  int failed = -1;
  if (int e = cgroups::join_in_child(cgroups, &failed)) fail(SetupStep::cgroup, e, failed);
  p.stamps.mark(Side::command, SetupStep::cgroup);
}

BRIG_ON_VFORK_STACK void apply_rlimits(const ChildPlan& p, const cgroups::Received& cgroups) {
  int failed = -1;
  if (int e = process::apply_rlimits_in_child(p.rlimits, cgroups.limits_pids, cgroups.limits_memory,
                                              &failed))
    fail(SetupStep::rlimit, e, failed);
  p.stamps.mark(Side::command, SetupStep::rlimit);
}

BRIG_ON_VFORK_STACK void enter_cwd(const ChildPlan& p, const command::Received& c) {
  if (::chdir(c.cwd) != 0) fail(SetupStep::chdir, errno);
  p.stamps.mark(Side::command, SetupStep::chdir);
}

BRIG_ON_VFORK_STACK void drop_caps(const ChildPlan& p) {
  if (int e = caps::apply_in_child(p.caps)) fail(SetupStep::caps, e);
  p.stamps.mark(Side::command, SetupStep::caps);
}

BRIG_ON_VFORK_STACK void set_no_new_privs(const ChildPlan& p) {
  if (int e = caps::set_no_new_privs_in_child()) fail(SetupStep::no_new_privs, e);
  p.stamps.mark(Side::command, SetupStep::no_new_privs);
}

BRIG_ON_VFORK_STACK void apply_landlock(const ChildPlan& p) {
  if (int e = landlock::apply_in_child(p.landlock)) fail(SetupStep::landlock, e);
  p.stamps.mark(Side::command, SetupStep::landlock);
}

// Speed only (docs/jail.md, "Speed"): the command still runs in the init's
// memory, so dropping the code mappings here drops the init's, before the
// init runs again: it keeps resident only what it runs from now on (its
// supervise loop and the few pages below), however late it is scheduled.
BRIG_ON_VFORK_STACK void release_setup_code(const ChildPlan& p) {
  process::release_code_pages(p.code_pages);
  p.stamps.mark(Side::command, SetupStep::seccomp, Stage::begun);
}

BRIG_ON_VFORK_STACK void apply_seccomp(const ChildPlan& p) {
  if (int e = seccomp::apply_in_child(p.seccomp)) fail(SetupStep::seccomp, e);
  p.stamps.mark(Side::command, SetupStep::seccomp);
}

// A jail built ahead (spawn_awaiting) waits here for its command, confined
// already, into the init's static storage (the init is suspended until the
// execve). A launcher that closes the socket instead dropped the jail
// unused: the init then ends it. Under the filter: read, recvmsg (recvfrom
// for a header that came in pieces), fcntl, dup2 and close are all this
// takes.
BRIG_ON_VFORK_STACK void await_command(const ChildPlan& p, command::Received* to_run) {
  if (!p.await_command) return;
  // Its stdio (/dev/null until now) goes first, so that the three fds that
  // come take 0, 1 and 2: RLIMIT_NOFILE is applied already, and above the
  // fds this process waits with they could be past it (a limit a fresh
  // jail's command runs with). Any that do not fit fail the step (EMFILE).
  for (int fd = 0; fd < 3; ++fd) ::close(fd);
  if (int e = command::receive_in_child(ChildPlan::kSyncFd, to_run)) {
    if (e == EPIPE) ::_exit(125);
    fail(SetupStep::command, e);
  }
  ::close(ChildPlan::kSyncFd);
  p.stamps.mark(Side::command, SetupStep::command);
}

BRIG_ON_VFORK_STACK [[noreturn]] void exec_command(const command::Received& c) {
  const int e = exec::exec_in_child(c.candidates, c.argv, c.envp);
  fail(SetupStep::exec, e, -1, e == ENOENT || e == ENOTDIR ? 127 : 126);
}

// The command, started by the init. Every step that confines it comes
// before what it runs is known, so that a jail built ahead has them all
// done while it waits (await_command): its call pays only for the rest.
BRIG_ON_VFORK_STACK [[noreturn]] void run_command(const ChildPlan& p,
                                                  const cgroups::Received& cgroups,
                                                  command::Received* c) {
  // Ignored signals and the blocked mask survive execve: the init's must not.
  reset_signals();
  own_process_group(p);
  // Its ids first: what follows is checked against them.
  take_command_ids(p);
  join_cgroups(p, cgroups);
  // Caps are dropped while the process may still change them.
  drop_caps(p);
  // Before Landlock and seccomp, which need it without CAP_SYS_ADMIN.
  set_no_new_privs(p);
  apply_landlock(p);
  // The limits are the command's: after Landlock's own fds (its ruleset,
  // each path), so open_files counts only what the command opens. (Each
  // limit is at most the current hard one, which needs no capability.)
  apply_rlimits(p, cgroups);
  release_setup_code(p);
  // The last setup step: every later syscall is filtered, so the filter
  // need not allow any setup syscall. What follows only reads a message,
  // changes directory and calls execve, as any program may.
  apply_seccomp(p);
  await_command(p, c);
  // Without capabilities: the directory is entered as the command's ids
  // allow, like every other path it uses.
  enter_cwd(p, *c);
  exec_command(*c);
}

// What the command reads of the init's memory (and, built ahead, writes:
// the command it receives).
struct CommandArgs {
  const ChildPlan* plan;
  const cgroups::Received* cgroups;
  command::Received* command;
};

BRIG_ON_VFORK_STACK int command_main(void* arg) {
  const auto* a = static_cast<const CommandArgs*>(arg);
  run_command(*a->plan, *a->cgroups, a->command);
}

// The command's stack while it shares the init's memory (until execve). In
// .bss: pages the command does not touch cost nothing.
alignas(64) char command_stack[256 * 1024];

// ---- The init's steps, on this process's own stack.

// EOF instead of the go byte means the launcher gave up, or died: so this
// clone's copy of the launcher's end goes first, or a launcher killed
// before its go byte would leave this process waiting forever (holding
// every fd the launcher had).
void wait_for_go(const ChildPlan& p) {
  ::close(p.sync_parent_fd);
  char go = 0;
  while (::read(p.sync_fd, &go, 1) != 1) {
    if (errno != EINTR) ::_exit(125);
  }
  p.stamps.mark(Side::child, SetupStep::sync);
}

// Until the fds are in place, a failure goes to the status pipe's
// inherited number.
void arrange_fds(const ChildPlan& p) {
  if (int e = process::arrange_fds_in_child(p.fds)) {
    report_setup_failure(p.status_fd_before_fds, SetupStep::fds, e);
    ::_exit(125);
  }
  p.stamps.mark(Side::child, SetupStep::fds);
}

// A jail whose uid map leaves the launcher's ids out (root mapping the
// jail's root to an unprivileged host id) is built by an init that takes
// the jail's own ids, with root's groups shed.
void take_jail_ids(const ChildPlan& p) {
  if (!p.init_takes_ids) return;
  if (int e = process::drop_groups_in_child()) fail(SetupStep::identity, e);
  if (int e = process::switch_ids_in_child(p.uid, p.gid)) fail(SetupStep::identity, e);
}

// The jail's processes (even uid 0 in the jail) can neither ptrace the init
// nor open its fds through /proc.
void forbid_ptrace() {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) fail(SetupStep::identity, errno);
}

void handle_signals() {
  if (int e = pid1::block_signals_in_child()) fail(SetupStep::signals, e);
}

void die_with_launcher() {
  if (::prctl(PR_SET_PDEATHSIG, pid1::kLauncherDiedSignal, 0, 0, 0) != 0)
    fail(SetupStep::identity, errno);
}

// No controlling terminal to push input into (TIOCSTI).
void leave_terminal() {
  if (::setsid() < 0) fail(SetupStep::identity, errno);
}

// Without a pid namespace, orphans of the command come back to the init
// (not to whoever is above the launcher), so it can reap them.
void adopt_orphans(const ChildPlan& p) {
  if (!p.pid_namespace && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
    fail(SetupStep::identity, errno);
  p.stamps.mark(Side::child, SetupStep::identity);
}

// Needs the capabilities this process holds in its new user namespace.
void build_root(const ChildPlan& p, git_state::Kept* git) {
  int failed = -1;
  if (int e = mounts::apply_in_child(*p.mounts, &failed, git)) fail(SetupStep::mount, e, failed);
  p.stamps.mark(Side::child, SetupStep::mount);
}

void join_network(const ChildPlan& p) {
  if (!p.new_netns) return;
  SetupStep step = SetupStep::netns;
  if (p.netns_in_child) {
    int socket = -1;
    if (int e = net::make_in_child(&step, &socket)) fail(step, e);
    // The launcher holds the network namespace by this socket, and the mount
    // namespace by its nsfs file, after the jail ends, so that a burst of
    // calls does not pay for their teardown (server.md). The jail's own
    // /proc, which only brig's code has seen so far; without one, or if what
    // opens there is not this mount namespace, only the network one is held.
    int mounts = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (mounts >= 0 && ::ioctl(mounts, NS_GET_NSTYPE) != CLONE_NEWNS) {
      ::close(mounts);
      mounts = -1;
    }
    net::send_hold_in_child(ChildPlan::kSyncFd, socket, mounts);
  } else {
    if (int e = net::join_in_child(ChildPlan::kNetnsFd, &step)) fail(step, e);
    ::close(ChildPlan::kNetnsFd);
  }
  p.stamps.mark(Side::child, SetupStep::netns);
}

void set_hostname(const ChildPlan& p) {
  if (p.set_hostname && ::sethostname(p.hostname.data(), p.hostname.size()) != 0)
    fail(SetupStep::hostname, errno);
  p.stamps.mark(Side::child, SetupStep::hostname);
}

// An empty message when there are none; EOF means the launcher gave up.
void receive_cgroups(const ChildPlan& p, cgroups::Received* cgroups) {
  if (int e = cgroups::receive_in_child(ChildPlan::kSyncFd, cgroups)) fail(SetupStep::cgroup, e);
  p.stamps.mark(Side::child, SetupStep::cgroup);
}

// Before the command, so that no SIGCHLD is missed.
int open_signalfd() {
  const int sigfd = pid1::open_signalfd_in_child();
  if (sigfd < 0) fail(SetupStep::signals, -sigfd);
  return sigfd;
}

// vfork-style, not the jail's own clone: nothing has to happen in the init
// meanwhile, and sharing its memory spares copying its page tables and
// tearing the copy down at execve. Built ahead, the init stays suspended
// while the command waits for what to run; the launcher ends such a jail by
// killing the init (a fatal signal ends the wait) or by closing the socket
// (the command exits, and the init ends the jail as after any command).
pid_t fork_command(const ChildPlan& p, CommandArgs& args) {
  const pid_t command =
      clone::vfork_on_stack(command_main, &args, command_stack, sizeof command_stack);
  if (command < 0) fail(SetupStep::fork, errno);
  // The command has its own copy, closed by its execve or once it has read
  // its command.
  ::close(ChildPlan::kSyncFd);
  // The command's own stamp would land in a page its execve has dropped:
  // the init, resumed by that execve, stamps it.
  p.stamps.mark(Side::command, SetupStep::exec);
  return command;
}

// The init writes nothing to stdio (it reports on the status pipe): with
// its copies closed, the command's are the last, and brig's pipes reach end
// of file as soon as the jail's processes are gone, not once the init has
// exited as well. (The command has its own fd table: no CLONE_FILES.)
void close_stdio() {
  for (int fd = 0; fd < 3; ++fd) ::close(fd);
}

[[noreturn]] void supervise(const ChildPlan& p, pid_t command, int sigfd,
                            const cgroups::Received& cgroups, const git_state::Kept& git) {
  pid1::Config config;
  config.code_pages = &p.code_pages;
  config.pid_namespace = p.pid_namespace;
  config.status_fd = ChildPlan::kStatusFd;
  config.watch_fd = ChildPlan::kWatchFd;
  config.cgroups = &cgroups;
  config.git = &git;
  config.stamp = [](const void* stamps, bool command_side, SetupStep step) {
    static_cast<const StepStamps*>(stamps)->mark(command_side ? Side::command : Side::child, step);
  };
  config.stamp_context = &p.stamps;
  pid1::supervise(command, sigfd, config);
}

}  // namespace

void contain(const ChildPlan& p) {
  // 1. Before the launcher's go byte this process has no ids in its namespace.
  wait_for_go(p);
  // 2. stdio from the request, brig's fds at fixed numbers, every other
  //    inherited fd closed, before any jail code runs.
  arrange_fds(p);
  // 3. Identity. The jail's own ids before any path is touched, so no step
  //    runs as host root; first, since an euid change resets the dumpable
  //    flag and clears the parent-death signal set next.
  take_jail_ids(p);
  forbid_ptrace();
  // Signals before the parent-death signal, so it is never fatal half-way:
  // the init handles it by shutting the jail down.
  handle_signals();
  die_with_launcher();
  leave_terminal();
  adopt_orphans(p);
  // 4. The new root, pivoted into.
  git_state::Kept git;
  build_root(p, &git);
  // 5. The network namespace (lo up): the helper's, joined here, or made
  //    here for a jail built ahead; so the command is in it too. Then the
  //    uts namespace's name.
  join_network(p);
  set_hostname(p);
  // 6. The cgroups the launcher made meanwhile.
  cgroups::Received cgroups;
  receive_cgroups(p, &cgroups);
  // 7. The command (run_command has its order; a jail built ahead waits
  //    for what to run there, confined already); this process stays as
  //    the jail's init.
  command::Received to_run{p.cwd.c_str(), p.exec.candidate_ptrs.data(), p.exec.argv.data(),
                           p.exec.envp.data()};
  const int sigfd = open_signalfd();
  CommandArgs args{&p, &cgroups, &to_run};
  const pid_t command = fork_command(p, args);
  close_stdio();
  supervise(p, command, sigfd, cgroups, git);
}

}  // namespace brig::jail
