// Job: one command running (or run) in its own jail, followed from the
// server: its stdout and stderr pumped into Spools, its end recorded as a
// jail::Outcome. The jail itself is a spawner::RunningJail (the server's
// handle on what the jail side calls jail::RunningJail); the Job sees it only
// as a Process, which launch.h's process_of() makes of it. Every exec is a Job from its start; the
// call that started it follows it until it ends or `yield_after` passes, after which the Job lives
// on in the JobTable for the `job` tool. All of it runs on the server's single io_context thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/outcome.h"
#include "server/exec/spool.h"

namespace brig::exec {

enum class Stream { out = 0, err = 1 };
const char* stream_name(Stream s);  // "stdout", "stderr"

// What a Job needs of the process it follows: the pid, signal and wait of a
// spawner::RunningJail in the server (exec::process_of), of a plain child in
// the Job's own tests, so that a Job can be tested without jails.
struct Process {
  pid_t pid = -1;                      // the jail's init
  std::function<int(int sig)> signal;  // 0 or errno
  // Called once: completes when the process ended. Destroying the Process
  // before then must kill it.
  std::function<asio::awaitable<jail::Outcome>()> wait;
};

class Job : public std::enable_shared_from_this<Job> {
 public:
  using Clock = std::chrono::steady_clock;

  // What the Job keeps of stdin written through `job write` before the
  // command reads it.
  static constexpr std::size_t kMaxStdinPending = 1 << 20;
  // How long the pipes may stay open after the jail ended (a process outside
  // the jail's pid namespace could hold them) before the Job stops reading.
  static constexpr std::chrono::seconds kDrainGrace{2};

  Job(std::string id, uid_t owner, std::string command, Spool out, Spool err);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Starts following `process` on executor: reads out_pipe and err_pipe (the
  // read ends of its stdout and stderr) to EOF and waits for its end.
  // stdin_pipe: the write end of its stdin, or empty when it has none.
  void start(const asio::any_io_executor& executor, Process process, UniqueFd out_pipe,
             UniqueFd err_pipe, UniqueFd stdin_pipe);

  const std::string& id() const { return id_; }
  uid_t owner() const { return owner_; }
  const std::string& command() const { return command_; }
  pid_t pid() const { return process_.pid; }
  Clock::time_point started() const { return started_; }
  // How long it ran (until now while running).
  std::chrono::milliseconds duration() const;

  // True once the process ended and its output was read.
  bool finished() const { return finished_; }
  Clock::time_point finished_at() const { return finished_at_; }
  const std::optional<jail::Outcome>& outcome() const { return outcome_; }
  // Whether kill() was asked (by `job kill`, a cancelled call, shutdown).
  bool kill_requested() const { return kill_requested_; }

  const Spool& spool(Stream s) const { return spools_[static_cast<int>(s)]; }
  // How far results have shown each stream: the next result starts there.
  std::uint64_t delivered(Stream s) const { return delivered_[static_cast<int>(s)]; }
  void set_delivered(Stream s, std::uint64_t offset) { delivered_[static_cast<int>(s)] = offset; }
  // Drops both streams' kept output (Spool::evict), once finished: the job
  // table makes room in the server's output budget so.
  void evict_output();
  // A failure to keep output (the spool could not be written); empty if none.
  const std::string& spool_error() const { return spool_error_; }

  // Completes at the next change (new output, the end) or at deadline,
  // whichever is first. Throws operation_aborted when the awaiting
  // coroutine is cancelled.
  asio::awaitable<void> changed(Clock::time_point deadline);

  // Sends sig to the jail's init (which forwards it to the command); 0 or
  // errno (ESRCH once the job has finished).
  int signal(int sig);
  // SIGKILL to the init: the whole jail ends.
  void kill();
  // kill(), and no caller may use the job any more (its call was cancelled
  // before handing it over): the table hides it and drops it once it ended.
  // Touches only the Job, so that it is safe from a coroutine frame being
  // destroyed after the table.
  void abandon();
  bool abandoned() const { return abandoned_; }

  bool has_stdin() const { return stdin_.has_value(); }
  struct StdinWrite {
    std::size_t queued = 0;   // bytes accepted now
    std::size_t pending = 0;  // bytes not yet taken by the command's stdin pipe
  };
  // Queues data for the command's stdin and closes it once written when
  // eof. Fails when the job has no stdin pipe (started without stdin_open),
  // it was closed, the command closed it, or too much is pending.
  Result<StdinWrite> write_stdin(std::string data, bool eof);

 private:
  asio::awaitable<void> run(std::shared_ptr<Job> self, UniqueFd out_pipe, UniqueFd err_pipe);
  asio::awaitable<void> pump(asio::posix::stream_descriptor& pipe, Stream s);
  asio::awaitable<void> wait_end(asio::posix::stream_descriptor& out,
                                 asio::posix::stream_descriptor& err);
  asio::awaitable<void> write_stdin_loop(std::shared_ptr<Job> self);
  void notify();
  void close_stdin();

  std::string id_;
  uid_t owner_;
  std::string command_;
  Clock::time_point started_;
  Clock::time_point finished_at_{};
  std::array<Spool, 2> spools_;
  std::array<std::uint64_t, 2> delivered_{};
  std::array<bool, 2> eof_{};
  std::string spool_error_;
  Process process_;
  std::optional<jail::Outcome> outcome_;
  bool finished_ = false;
  bool kill_requested_ = false;
  bool abandoned_ = false;
  std::vector<asio::steady_timer*> waiters_;

  std::optional<asio::posix::stream_descriptor> stdin_;
  std::string stdin_queue_;
  bool stdin_writing_ = false;
  bool stdin_eof_ = false;
  std::string stdin_error_;
};

}  // namespace brig::exec
