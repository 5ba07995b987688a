#include "tests/server/exec/exec_test_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "tests/server/test_support.h"

namespace brig::exec::testing {

void start_call(asio::io_context& io, const tools::Tool& tool, protocol::Json args,
                tools::ToolContext& ctx, Call& call) {
  asio::co_spawn(io, tool.handler(std::move(args), ctx),
                 asio::bind_cancellation_slot(
                     call.cancel.slot(), [&call](std::exception_ptr e, protocol::ToolResult r) {
                       call.done = true;
                       call.error = e;
                       if (!e) call.result.emplace(std::move(r));
                     }));
}

void cancel_call(FakeContext& ctx, Call& call) {
  ctx.cancelled_ = true;
  call.cancel.emit(asio::cancellation_type::terminal);
}

asio::awaitable<void> FakeContext::room_for_reply() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (output_backlogged_) {
    timer.expires_after(5ms);
    co_await timer.async_wait(asio::use_awaitable);
  }
}

bool run_until(asio::io_context& io, const std::function<bool()>& cond,
               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // An io_context out of work stops; timers and pipes may bring more.
    if (io.stopped()) io.restart();
    io.run_one_for(10ms);
  }
  return true;
}

namespace {

// The whole of a /proc file, or empty when the process went away meanwhile
// (reads then fail with ESRCH, which iostreams would throw).
std::string read_proc(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

bool process_gone(pid_t pid) {
  const std::string line = read_proc("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z';
}

std::vector<pid_t> processes_with(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    if (read_proc(std::string("/proc/") + e->d_name + "/cmdline").find(needle) !=
        std::string::npos) {
      out.push_back(pid);
    }
  }
  ::closedir(proc);
  return out;
}

std::string first_text(const protocol::ToolResult& result) {
  if (result.content.empty()) return {};
  return result.content[0].to_json().value("text", std::string());
}

std::string stream_text(const protocol::ToolResult& result, std::string_view name) {
  return server::testing::exec_stream(first_text(result), name);
}

}  // namespace brig::exec::testing
