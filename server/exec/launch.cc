#include "server/exec/launch.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <asio/this_coro.hpp>

#include "server/llm/placeholder.h"
#include "server/policy/llm_routes.h"

namespace brig::exec {
namespace {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> make_pipe(const char* what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::unexpected(sys_error("create a pipe", what, errno));
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// A memfd holding text, positioned at its start: the command reads it and
// then EOF, and brig never blocks on a command that does not read.
Result<UniqueFd> stdin_memfd(const std::string& text) {
  UniqueFd fd(::memfd_create("brig-exec-stdin", MFD_CLOEXEC));
  if (!fd) return std::unexpected(sys_error("create the stdin buffer", "", errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return std::unexpected(sys_error("write the stdin buffer", "", errno));
    done += static_cast<std::size_t>(w);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) {
    return std::unexpected(sys_error("rewind the stdin buffer", "", errno));
  }
  return fd;
}

// The jail's listeners served by the egress relay and the LLM proxy until
// it ends: its connections are closed with it, neither holds anything of a
// jail that is gone, and its placeholder is refused from then on.
struct RelayLease {
  std::shared_ptr<egress::Relay> relay;
  std::uint64_t id = 0;
  std::shared_ptr<llm::Proxy> llm;
  std::uint64_t llm_id = 0;
  ~RelayLease() {
    if (relay) relay->remove_jail(id);
    if (llm) llm->remove_jail(llm_id);
  }
};

asio::awaitable<jail::Outcome> wait_running(std::shared_ptr<spawner::RunningJail> running,
                                            std::shared_ptr<RelayLease> lease) {
  auto outcome = co_await running->wait();
  lease.reset();
  if (!outcome) {
    co_return jail::setup_failed_outcome(jail::SetupStep::wait, outcome.error().sys_errno,
                                         outcome.error().to_string());
  }
  co_return std::move(*outcome);
}

}  // namespace

Process process_of(spawner::RunningJail running, const std::shared_ptr<egress::Relay>& relay,
                   const policy::Policy& policy, const std::string& label,
                   const std::shared_ptr<llm::Proxy>& llm, const std::string& placeholder) {
  auto lease = std::make_shared<RelayLease>();
  std::vector<UniqueFd> listeners = running.take_listeners();
  // The LLM listener is the last (policy::llm_listener); a jail without
  // the proxy behind it has it closed, so its connections are refused.
  if (!policy.llm.routes.empty() && !listeners.empty()) {
    UniqueFd fd = std::move(listeners.back());
    listeners.pop_back();
    if (llm && !placeholder.empty()) {
      lease->llm_id = llm->add_jail(label, placeholder, std::move(fd));
      lease->llm = llm;
    }
  }
  if (relay && !listeners.empty()) {
    lease->id =
        relay->add_jail(label, policy.network.rules, egress::jail_listeners(std::move(listeners)));
    lease->relay = relay;
  }
  auto shared = std::make_shared<spawner::RunningJail>(std::move(running));
  Process p;
  p.pid = shared->pid();
  p.signal = [shared](int sig) { return shared->signal(sig); };
  // The lease moves into the wait: the jail's listeners (and through them
  // its network namespace) close as soon as it has ended, not only once the
  // Job has drained its output and dropped the Process.
  p.wait = [shared, lease]() mutable { return wait_running(shared, std::move(lease)); };
  return p;
}

asio::awaitable<Result<std::shared_ptr<Job>>> launch_job(const sandbox::Sandbox& sandbox,
                                                         JobTable& table, const ExecArgs& args,
                                                         uid_t owner) {
  if (!sandbox.spawner) {
    co_return std::unexpected(Error{"start the command", "", "brig's jail spawner is not running"});
  }
  auto plan = plan_exec(sandbox.policy, sandbox.context, sandbox.spec, args);
  if (!plan) co_return std::unexpected(plan.error());
  // The jail's own placeholder, in the routes' variables (over any the
  // call's env named: the routes' names are the proxy's).
  std::string placeholder;
  if (!sandbox.policy.llm.routes.empty() && sandbox.llm) {
    auto made = llm::new_placeholder();
    if (!made) co_return std::unexpected(made.error());
    placeholder = std::move(*made);
    for (auto& [name, value] : policy::llm_environment(sandbox.policy.llm.routes, placeholder)) {
      std::erase_if(plan->request.env,
                    [&](const std::string& e) { return e.starts_with(name + "="); });
      plan->request.env.push_back(name + "=" + value);
    }
  }
  // Taken before the first co_await: calls admitted together are counted
  // together.
  auto slot = table.reserve(owner, plan->spec.limits.memory_bytes);
  if (!slot) co_return std::unexpected(slot.error());

  auto out = make_pipe("stdout");
  if (!out) co_return std::unexpected(out.error());
  auto err = make_pipe("stderr");
  if (!err) co_return std::unexpected(err.error());
  UniqueFd stdin_read, stdin_write;
  if (args.stdin_open) {
    auto in = make_pipe("stdin");
    if (!in) co_return std::unexpected(in.error());
    stdin_read = std::move(in->read);
    stdin_write = std::move(in->write);  // args.stdin_text goes in once the job runs
  } else if (args.stdin_text) {
    auto fd = stdin_memfd(*args.stdin_text);
    if (!fd) co_return std::unexpected(fd.error());
    stdin_read = std::move(*fd);
  } else {
    stdin_read.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!stdin_read) co_return std::unexpected(sys_error("open", "/dev/null", errno));
  }

  const std::string id = table.next_id();
  auto out_spool = Spool::create(id + "-stdout", table.spool_limits());
  if (!out_spool) co_return std::unexpected(out_spool.error());
  auto err_spool = Spool::create(id + "-stderr", table.spool_limits());
  if (!err_spool) co_return std::unexpected(err_spool.error());

  plan->request.stdin_fd = stdin_read.get();
  plan->request.stdout_fd = out->write.get();
  plan->request.stderr_fd = err->write.get();
  auto running = co_await sandbox.spawner->spawn(plan->spec, plan->request);
  if (!running) co_return std::unexpected(running.error());
  // The spawner holds its own copies: ours would keep the pipes from
  // reporting EOF when the command ends.
  stdin_read.reset();
  out->write.reset();
  err->write.reset();

  auto job =
      std::make_shared<Job>(id, owner, args.display, std::move(*out_spool), std::move(*err_spool));
  job->start(
      co_await asio::this_coro::executor,
      process_of(std::move(*running), sandbox.relay, sandbox.policy, id, sandbox.llm, placeholder),
      std::move(out->read), std::move(err->read), std::move(stdin_write));
  if (args.stdin_open && args.stdin_text && !args.stdin_text->empty()) {
    if (auto w = job->write_stdin(*args.stdin_text, false); !w) {
      job->kill();
      co_return std::unexpected(w.error());
    }
  }
  table.add(job, std::move(*slot));
  co_return job;
}

}  // namespace brig::exec
