// The launcher's side of a jail, as one ordered list of steps (spawn_jail)
// that mirrors the child's (contain.cc). The helpers it leans on each live
// in a file of their own: the plan (child_plan.h), the layer report and the
// fallback tier (tiers.h), the network namespace's helper (steps/net.h),
// the speed measures (speed.h).
#include "jail/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <vector>

#include "jail/child_plan.h"
#include "jail/command_message.h"
#include "jail/contain.h"
#include "jail/netfilter/jail_rules.h"
#include "jail/spec_validate.h"
#include "jail/speed.h"
#include "jail/step_error.h"
#include "jail/steps/clone.h"
#include "jail/steps/filter.h"
#include "jail/steps/idmap.h"
#include "jail/steps/net.h"
#include "jail/steps/userns.h"
#include "jail/tiers.h"

namespace brig::jail {
namespace {

// The launcher's ends and the child's of the pipes and sockets between them
// (and the network namespace's helper). The child's are closed here once
// it has its copies.
struct Channels {
  UniqueFd sync_parent, sync_child;  // go byte, cgroups, a built-ahead jail's command
  UniqueFd status_r, status_w;       // the child's reports
  UniqueFd watch_r, watch_w;         // the launcher's end closing = it is gone
  UniqueFd netns_helper, netns_child;
  UniqueFd listen_launcher, listen_helper;  // the listeners the helper makes (spec.listeners)
};

Result<void> socket_pair(SetupStep step, UniqueFd& a, UniqueFd& b) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return std::unexpected(step_sys_error(step, "socketpair", errno));
  a.reset(fds[0]);
  b.reset(fds[1]);
  return {};
}

Result<void> pipe_pair(const char* what, UniqueFd& r, UniqueFd& w) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return std::unexpected(step_sys_error(SetupStep::sync, what, errno));
  r.reset(fds[0]);
  w.reset(fds[1]);
  return {};
}

Result<Channels> open_channels(bool new_netns, bool listeners) {
  Channels c;
  BRIG_TRY_VOID(socket_pair(SetupStep::sync, c.sync_parent, c.sync_child));
  BRIG_TRY_VOID(pipe_pair("status pipe", c.status_r, c.status_w));
  BRIG_TRY_VOID(pipe_pair("watch pipe", c.watch_r, c.watch_w));
  if (new_netns) BRIG_TRY_VOID(socket_pair(SetupStep::netns, c.netns_helper, c.netns_child));
  if (new_netns && listeners)
    BRIG_TRY_VOID(socket_pair(SetupStep::listen, c.listen_launcher, c.listen_helper));
  return c;
}

}  // namespace

// One jail's launch: each method is one step of spawn_jail's list, and
// stamps the SetupStep it ends (step_times.h). On a failed step, dropping this kills the child
// (~RunningJail) after reaping the helper and closing the channels.
class Launch {
 public:
  Launch(const JailSpec& spec, const ExecRequest& req, SpawnOptions options, bool awaiting)
      : spec_(spec), req_(req), options_(options), awaiting_(awaiting) {
    j_.started_ = RunningJail::Clock::now();
    if (spec.limits.wall_time && !awaiting) j_.deadline_ = j_.started_ + *spec.limits.wall_time;
  }

  Result<void> validate() const;
  Result<void> plan();
  Result<void> check_layers();
  Result<void> open_channels();
  Result<void> clone();
  Result<void> start_network_helper();
  Result<void> write_id_maps();
  Result<void> release_child();
  Result<void> make_cgroups();
  Result<void> send_cgroups();
  Result<void> take_listeners();
  Result<void> plan_filter();
  Result<void> ensure_host_filter();
  void step_aside();
  RunningJail take() { return std::move(j_); }

 private:
  const JailSpec& spec_;
  const ExecRequest& req_;
  const SpawnOptions options_;
  const bool awaiting_;
  // Destroyed in reverse: the helper reaped, the channels closed, then the
  // child killed.
  RunningJail j_;
  ChildPlan* plan_ = nullptr;
  StepStamps stamps_;
  Channels ch_;
  std::vector<idmap::Tree> trees_;
  uint64_t flags_ = 0;  // the namespaces clone3 made
  speed::CpuPlacement cpus_;
  std::optional<clone::Reaped> helper_;
  std::vector<char> jail_rules_;  // a filtered jail's table (netfilter/jail_rules.h)

  bool filtered() const { return spec_.network == NetworkMode::filtered; }
};

Result<void> Launch::validate() const {
  if (auto v = jail::validate(spec_); !v)
    return std::unexpected(at_step(SetupStep::validate, std::move(v.error())));
  if (!awaiting_)
    if (auto v = jail::validate(req_); !v)
      return std::unexpected(at_step(SetupStep::validate, std::move(v.error())));
  return {};
}

Result<void> Launch::plan() {
  if (options_.time_steps) j_.steps_ = BRIG_TRY(StepClock::create());
  stamps_ = j_.steps_.stamps();
  // A jail built ahead keeps its planner's questions and answers, so that
  // built_from_current_host can ask them again instead of planning again.
  // One for the spec of a plan found unchanged takes that plan, with what
  // it was planned from (the same answers give the same plan), if each bind
  // source is still the file it was: its identities are then taken now,
  // right before the clone, as a freshly planned jail's are.
  const VerifiedPlan* verified = options_.verified.get();
  if (awaiting_ && verified && verified->from && verified->mounts &&
      verified->from->spec == spec_ &&
      bind_source_ids(*verified->mounts) == verified->bind_sources) {
    j_.built_from_ = verified->from;
    j_.bind_sources_ = verified->bind_sources;
    j_.plan_ = BRIG_TRY(plan_child(spec_, req_, mounts::real_host(), verified->mounts));
  } else if (awaiting_) {
    auto from = std::make_shared<BuiltFrom>(spec_);
    j_.plan_ = BRIG_TRY(plan_child(spec_, req_, from->host));
    j_.built_from_ = std::move(from);
    j_.bind_sources_ = bind_source_ids(*j_.plan_->mounts);
  } else {
    j_.plan_ = BRIG_TRY(plan_child(spec_, req_));
  }
  plan_ = j_.plan_.get();
  plan_->stamps = stamps_;
  plan_->await_command = awaiting_;
  // Built ahead, nobody waits for the namespace: the child makes it (net.h).
  plan_->netns_in_child = awaiting_ && plan_->new_netns && spec_.listeners.empty() && !filtered();
  plan_->rlimits = process::plan_rlimits(spec_.limits);
  return {};
}

Result<void> Launch::check_layers() {
  j_.layers_ = report_layers(spec_, *plan_, j_.cgroup_);
  return check_required(spec_, j_.layers_, /*cgroups_made=*/false);
}

Result<void> Launch::open_channels() {
  ch_ = BRIG_TRY(jail::open_channels(plan_->new_netns && !plan_->netns_in_child,
                                     !spec_.listeners.empty() || filtered()));
  j_.status_fd_ = std::move(ch_.status_r);
  j_.watch_fd_ = std::move(ch_.watch_w);
  // The workspace's idmapped tree (keep_owner binds), made here in the
  // host's user namespace: the jail's own cannot.
  auto trees = idmap::prepare(*plan_->mounts, spec_.identity);
  if (!trees) return std::unexpected(at_step(SetupStep::mount, std::move(trees.error())));
  trees_ = std::move(*trees);
  BRIG_TRY_VOID(plan_fds(*plan_, req_, ch_.status_w.get(), ch_.watch_r.get(), ch_.sync_child.get(),
                         ch_.netns_child ? ch_.netns_child.get() : -1, trees_));
  plan_->sync_fd = ch_.sync_child.get();
  plan_->sync_parent_fd = ch_.sync_parent.get();
  plan_->status_fd_before_fds = ch_.status_w.get();
  stamps_.mark(Milestone::planned);
  return {};
}

Result<void> Launch::clone() {
  // The network namespace (plan.new_netns) is made by the helper instead.
  flags_ = clone::namespace_flags(spec_.namespaces, /*new_net=*/false);
  int pidfd = -1;
  pid_t pid = clone::clone3_with_pidfd(flags_, &pidfd);
  if (pid < 0 && may_fall_back(spec_, errno)) {
    BRIG_TRY_VOID(fall_back_to_no_namespaces(spec_, *plan_, j_.layers_, errno));
    flags_ = 0;
    pid = clone::clone3_with_pidfd(flags_, &pidfd);
  }
  if (pid < 0) return std::unexpected(clone_failed(spec_, errno));
  if (pid == 0) contain(*plan_);  // never returns

  stamps_.mark(Side::launcher, SetupStep::clone3);
  j_.pid_ = pid;
  j_.pidfd_.reset(pidfd);
  j_.pid_namespace_ = plan_->pid_namespace;
  ch_.sync_child.reset();
  ch_.status_w.reset();
  ch_.watch_r.reset();
  ch_.netns_child.reset();
  trees_.clear();
  cpus_ = speed::CpuPlacement::of_this_process();
  return {};
}

Result<void> Launch::start_network_helper() {
  if (!plan_->new_netns || plan_->netns_in_child) return {};
  helper_.emplace(BRIG_TRY(net::start_helper(
      j_.pid_, flags_ & CLONE_NEWUSER, ch_.netns_helper.get(), spec_.listeners,
      ch_.listen_helper ? ch_.listen_helper.get() : -1, filtered(), jail_rules_)));
  cpus_.move_away(helper_->pid());
  ch_.netns_helper.reset();
  ch_.listen_helper.reset();
  stamps_.mark(Side::launcher, SetupStep::netns, Stage::begun);
  return {};
}

Result<void> Launch::write_id_maps() {
  if (!(flags_ & CLONE_NEWUSER)) return {};
  if (auto ok = userns::write_maps_from_parent(j_.pid_, spec_.identity,
                                               plan_->drop_groups || plan_->init_takes_ids);
      !ok)
    return std::unexpected(at_step(SetupStep::uid_map, std::move(ok.error())));
  stamps_.mark(Side::launcher, SetupStep::uid_map);
  return {};
}

Result<void> Launch::release_child() {
  const char go = 1;
  if (::write(ch_.sync_parent.get(), &go, 1) != 1)
    return std::unexpected(step_sys_error(SetupStep::sync, "release the jail's child", errno));
  stamps_.mark(Side::launcher, SetupStep::sync);
  return {};
}

Result<void> Launch::make_cgroups() {
  j_.cgroup_ = cgroups::create(spec_.limits);
  report_cgroups(j_.layers_, spec_.limits, j_.cgroup_);
  BRIG_TRY_VOID(check_required(spec_, j_.layers_));
  stamps_.mark(Side::launcher, SetupStep::cgroup, Stage::begun);
  return {};
}

Result<void> Launch::send_cgroups() {
  if (helper_) {
    if (options_.wait_readable) options_.wait_readable(helper_->pidfd());
    helper_.reset();
    stamps_.mark(Side::launcher, SetupStep::netns);
  }
  // EPIPE: the child has already failed (and exited); wait() says why.
  if (int e = cgroups::send_to_child(ch_.sync_parent.get(), j_.cgroup_); e != 0 && e != EPIPE)
    return std::unexpected(
        step_sys_error(SetupStep::cgroup, "hand the cgroups to the jail's child", e));
  // The child has its own copies of the fds; the launcher keeps the paths,
  // and the fds too when it may reuse the groups (cgroups::reuse_empty_groups).
  if (!j_.cgroup_.launcher_keeps) {
    j_.cgroup_.procs_fds.clear();
    j_.cgroup_.brig_dir_fds.clear();
  }
  stamps_.mark(Side::launcher, SetupStep::cgroup);
  return {};
}

Result<void> Launch::take_listeners() {
  if (!ch_.listen_launcher) return {};  // none, or taken already
  net::HelperFds got =
      BRIG_TRY(net::receive_from_helper(ch_.listen_launcher.get(), spec_.listeners, filtered()));
  j_.listeners_ = std::move(got.listeners);
  ch_.listen_launcher.reset();
  if (filtered()) {
    BRIG_TRY_VOID(filter::give_veth(got.netns.get(), got.route.get()));
    stamps_.mark(Side::launcher, SetupStep::netfilter);
  }
  return {};
}

Result<void> Launch::plan_filter() {
  if (filtered()) jail_rules_ = netfilter::jail_rules_batch(spec_.filter);
  return {};
}

Result<void> Launch::ensure_host_filter() {
  if (!filtered()) return {};
  stamps_.mark(Side::launcher, SetupStep::netfilter, Stage::begun);
  return filter::ensure_host(spec_.filter);
}

void Launch::step_aside() {
  cpus_.leave_this_cpu();
  speed::sweep_once();
  stamps_.mark(Milestone::spawn_returned);
  if (awaiting_) j_.command_fd_ = std::move(ch_.sync_parent);
}

namespace {

// spawn(), or with `awaiting` spawn_awaiting() (req: only its stdio, all
// /dev/null). The child's side of each step is in contain().
Result<RunningJail> spawn_jail(const JailSpec& spec, const ExecRequest& req, SpawnOptions options,
                               bool awaiting) {
  Launch l(spec, req, options, awaiting);
  // Nothing is made for a spec or a request that is not valid.
  BRIG_TRY_VOID(l.validate());
  // Everything the child will need, while allocating is allowed: after the
  // raw clone it may only read (child_plan.h).
  BRIG_TRY_VOID(l.plan());
  // A required layer this host cannot enforce refuses before anything exists.
  BRIG_TRY_VOID(l.check_layers());
  // The pipes and sockets to the child, and the fd numbers it moves them to.
  BRIG_TRY_VOID(l.open_channels());
  // A filtered jail's own nftables table, as the netlink batch the network
  // helper will send (netfilter/jail_rules.h).
  BRIG_TRY_VOID(l.plan_filter());
  // clone3 with every namespace but the network's; the child runs contain()
  // and waits for its go byte. User namespaces refused: the fallback tier.
  BRIG_TRY_VOID(l.clone());
  // The network namespace, made by a helper on another CPU while the child
  // builds its mounts (~0.5 ms of kernel work; net.h). Before the maps: the
  // child must still be dumpable for its user namespace to be opened.
  BRIG_TRY_VOID(l.start_network_helper());
  // The uid/gid maps: until they are written the child has no ids.
  BRIG_TRY_VOID(l.write_id_maps());
  // Go: the child builds the jail from here on its own.
  BRIG_TRY_VOID(l.release_child());
  // A filtered jail, while the helper makes its namespace and loads its
  // rules and the child builds its mounts: the host's side (filter.h), then
  // the namespace the helper sends and the veth into it.
  BRIG_TRY_VOID(l.ensure_host_filter());
  if (spec.network == NetworkMode::filtered) BRIG_TRY_VOID(l.take_listeners());
  // The cgroups (~0.2 ms as root), made while the child builds its mounts:
  // it needs them only for the command. A required one missing refuses; the
  // command waits for them, so nothing runs before a filtered jail's rules
  // and veth are in.
  BRIG_TRY_VOID(l.make_cgroups());
  // Sent once the helper is reaped: in the jail's user namespace, under the
  // jail's uid, it counts against the command's RLIMIT_NPROC until then.
  BRIG_TRY_VOID(l.send_cgroups());
  // The listeners the helper made in the jail's network namespace (it is
  // reaped by now, so they are all there), for the caller to serve.
  BRIG_TRY_VOID(l.take_listeners());
  // Speed only (speed.h): off the child's CPU, then the sweep.
  l.step_aside();
  return l.take();
}

}  // namespace

Result<RunningJail> spawn(const JailSpec& spec, const ExecRequest& req, SpawnOptions options) {
  return spawn_jail(spec, req, options, /*awaiting=*/false);
}

Result<RunningJail> spawn_awaiting(const JailSpec& spec, SpawnOptions options) {
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return std::unexpected(step_sys_error(SetupStep::fds, "open /dev/null", errno));
  ExecRequest none;
  none.stdin_fd = none.stdout_fd = none.stderr_fd = dev_null.get();
  return spawn_jail(spec, none, options, /*awaiting=*/true);
}

Result<void> start_command(RunningJail& j, const ExecRequest& req,
                           std::optional<std::chrono::milliseconds> wall_time) {
  const char* what = "give a jail built ahead its command";
  if (!j.command_fd_ || j.reaped_)
    return std::unexpected(Error{what, std::to_string(j.pid_),
                                 "it is not awaiting one (it was given one already)", EALREADY});
  if (auto v = validate(req); !v)
    return std::unexpected(at_step(SetupStep::validate, std::move(v.error())));
  auto encoded = command::encode(req);
  if (!encoded) return std::unexpected(std::move(encoded.error()));
  UniqueFd dev_null;
  int stdio[3] = {req.stdin_fd, req.stdout_fd, req.stderr_fd};
  for (int& fd : stdio) {
    if (fd >= 0) continue;
    if (!dev_null) dev_null.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!dev_null) return std::unexpected(sys_error(what, "open /dev/null", errno));
    fd = dev_null.get();
  }
  // For the messages of a failed chdir or execve, as a fresh jail has them.
  j.plan_->exec = exec::prepare(req);
  j.plan_->cwd = req.cwd.empty() ? "/" : req.cwd;
  j.started_ = RunningJail::Clock::now();
  if (wall_time) j.deadline_ = j.started_ + *wall_time;
  // Before the command goes: until then only brig's code ran in the jail.
  if (j.plan_->netns_in_child) j.namespace_hold_ = net::take_hold(j.command_fd_.get());
  // Once only, whether or not it arrives: a jail is never given a second.
  UniqueFd socket = std::move(j.command_fd_);
  if (int e = command::send(socket.get(), *encoded, stdio))
    return std::unexpected(sys_error(what, std::to_string(j.pid_), e));
  return {};
}

bool built_from_current_host(const RunningJail& j, const JailSpec& spec) {
  if (!j.plan_) return false;
  if (j.built_from_) {
    // The planner reads only the spec and the host, the host only through
    // the RecordedHost: for the same spec (its wall time aside, which is the
    // command's and which no plan reads) and the same answer to every
    // question it asked, planning again would give the same plan. So the
    // questions asked again are the whole re-plan, as strict and a fraction
    // of its cost (docs/jail.md).
    const JailSpec& from = j.built_from_->spec;
    bool same = false;
    if (spec.limits.wall_time == from.limits.wall_time) {
      same = spec == from;  // a pool's key: no copy
    } else {
      JailSpec asked = spec;
      asked.limits.wall_time = from.limits.wall_time;
      same = asked == from;
    }
    if (same)
      return j.built_from_->host.unchanged(mounts::real_host()) &&
             bind_source_ids(*j.plan_->mounts) == j.bind_sources_;
  }
  auto now = mounts::plan(spec, mounts::real_host());
  return now && *now == *j.plan_->mounts && bind_source_ids(*now) == j.bind_sources_;
}

std::shared_ptr<const VerifiedPlan> verified_plan(const RunningJail& j) {
  // No ops: nothing to save, and the plan of a jail that fell back to the
  // tier without namespaces is empty whatever its spec (tiers.cc).
  if (!j.plan_ || !j.built_from_ || j.plan_->mounts->ops.empty()) return nullptr;
  return std::make_shared<const VerifiedPlan>(
      VerifiedPlan{j.built_from_, j.plan_->mounts, j.bind_sources_});
}

}  // namespace brig::jail
