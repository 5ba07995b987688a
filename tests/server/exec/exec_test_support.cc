#include "tests/server/exec/exec_test_support.h"

#include <dirent.h>

#include <fstream>
#include <iterator>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>

namespace brig::exec::testing {

void start_call(asio::io_context& io, const server::Tool& tool, protocol::Json args,
                server::ToolContext& ctx, Call& call) {
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

bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
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
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

}  // namespace brig::exec::testing
