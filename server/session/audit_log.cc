#include "server/session/audit_log.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <utility>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/error.hpp>

namespace brig::session {
namespace {

using protocol::Json;

// A copy of `value` whose long strings are cut, and whose `env` object (at
// any depth) keeps its names but not its values.
Json redacted(const Json& value, std::size_t max_string) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s.size() <= max_string) return value;
    return fmt::format("{}… ({} bytes cut)", s.substr(0, max_string), s.size() - max_string);
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& v : value) out.push_back(redacted(v, max_string));
    return out;
  }
  if (!value.is_object()) return value;
  Json out = Json::object();
  for (const auto& [key, v] : value.items()) {
    if (key == "env" && v.is_object()) {
      Json names = Json::object();
      for (const auto& [name, ignored] : v.items()) names[name] = "(not logged)";
      out[key] = std::move(names);
    } else {
      out[key] = redacted(v, max_string);
    }
  }
  return out;
}

std::string_view outcome_name(AuditRecord::Outcome o) {
  switch (o) {
    case AuditRecord::Outcome::ok:
      return "ok";
    case AuditRecord::Outcome::error:
      return "error";
    case AuditRecord::Outcome::cancelled:
      return "cancelled";
    case AuditRecord::Outcome::failed:
      return "failed";
  }
  return "failed";
}

// UTC, to the millisecond: "2026-11-27T10:04:05.123Z".
std::string time_text(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", std::chrono::floor<std::chrono::milliseconds>(t));
}

}  // namespace

std::string audit_line(const AuditRecord& r, std::size_t max_string) {
  Json line = {
      {"time", time_text(r.started)},
      {"client", r.client
                     ? Json{{"pid", r.client->pid}, {"uid", r.client->uid}, {"gid", r.client->gid}}
                     : Json("stdio")},
      {"tool", r.tool},
      {"arguments", redacted(r.arguments, max_string)},
      {"outcome", outcome_name(r.outcome)},
      {"duration_ms", std::chrono::duration<double, std::milli>(r.duration).count()},
  };
  if (r.result) {
    const Json result = r.result->to_json();
    line["bytes"] = result.dump(-1, ' ', false, Json::error_handler_t::replace).size();
    if (r.result->structured) {
      for (const char* key : {"exit_code", "signal", "timed_out"})
        if (r.result->structured->contains(key)) line[key] = r.result->structured->at(key);
    }
    if (r.result->is_error) {
      std::string text;
      for (const protocol::ContentBlock& c : r.result->content) {
        if (const std::string* plain = c.plain_text()) {
          text += *plain;
        } else if (c.json()->is_object() && c.json()->value("type", "") == "text") {
          text += c.json()->value("text", "");
        }
      }
      line["error"] = redacted(Json(text), 4 * max_string);
    }
  }
  if (!r.failure.empty()) line["error"] = r.failure;
  return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  // Created 0600: arguments may be private. O_NONBLOCK only for the open
  // itself (a FIFO would otherwise block it); it is cleared below.
  // No symlink is followed in any component: a jail could have planted one
  // in a directory it may write (the workspace), and the log would then be
  // created, as brig's user, wherever it points.
  open_how how{};
  how.flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  how.mode = 0600;
  how.resolve = RESOLVE_NO_SYMLINKS;
  UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
  if (!fd) {
    const int err = errno;
    if (err == ELOOP) {
      return std::unexpected(Error{"open the audit log", path,
                                   "its path goes through a symbolic link, which brig does not "
                                   "follow (a jail could have planted it); name the file by its "
                                   "real path (realpath)",
                                   err});
    }
    return std::unexpected(sys_error("open the audit log", path, err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return std::unexpected(sys_error("stat the audit log", path, errno));
  if (!S_ISREG(st.st_mode)) {
    return std::unexpected(
        Error{"open the audit log", path, "not a regular file; name a file to append to"});
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    return std::unexpected(sys_error("open the audit log", path, errno));
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(fd), path));
}

AuditLog::AuditLog(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
AuditLog::~AuditLog() = default;

void AuditLog::write_line(std::string line) {
  line += '\n';
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A full disk must not fail the call; the operator learns it here.
      spdlog::error("audit log {}: write failed: {}", path_, std::strerror(errno));
      return;
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

void AuditLog::write(const AuditRecord& record) {
  write_line(audit_line(record));
}

void AuditLog::write_start(const protocol::Json& facts) {
  Json line = {{"time", time_text(std::chrono::system_clock::now())}, {"event", "start"}};
  for (const auto& [key, value] : facts.items()) line[key] = value;
  write_line(line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void AuditLog::write_egress(const egress::EgressRecord& r) {
  constexpr const char* kKinds[] = {"connect", "http", "dns"};
  Json line = {{"time", time_text(std::chrono::system_clock::now())},
               {"event", "egress"},
               {"jail", r.jail},
               {"kind", kKinds[static_cast<int>(r.kind)]},
               {"host", r.host},
               {"port", r.port},
               {"allowed", r.allowed},
               {"rule", r.rule},
               {"status", r.status}};
  if (!r.address.empty()) line["address"] = r.address;
  if (r.kind != egress::EgressRecord::Kind::dns) {
    line["bytes_up"] = r.bytes_up;
    line["bytes_down"] = r.bytes_down;
  }
  write_line(line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void AuditLog::write_llm(const llm::LlmRecord& r) {
  Json line = {{"time", time_text(std::chrono::system_clock::now())},
               {"event", "llm"},
               {"jail", r.jail},
               {"route", r.route},
               {"method", r.method},
               {"path", r.path},
               {"status", r.status},
               {"bytes_up", r.bytes_up},
               {"bytes_down", r.bytes_down},
               {"duration_ms", r.duration.count()},
               {"attempts", r.attempts}};
  if (!r.error.empty()) line["error"] = r.error;
  if (r.first_byte) line["first_byte_ms"] = r.first_byte->count();
  if (r.input_tokens) line["input_tokens"] = *r.input_tokens;
  if (r.output_tokens) line["output_tokens"] = *r.output_tokens;
  write_line(line.dump(-1, ' ', false, Json::error_handler_t::replace));
}

tools::Tool AuditLog::wrap(tools::Tool tool) {
  tools::ToolHandler inner = std::move(tool.handler);
  std::string name = tool.descriptor.name;
  tool.handler = [this, inner = std::move(inner), name](
                     Json arguments,
                     tools::ToolContext& ctx) -> asio::awaitable<protocol::ToolResult> {
    AuditRecord record;
    record.started = std::chrono::system_clock::now();
    record.client = ctx.peer();
    record.tool = name;
    record.arguments = arguments;
    const auto start = std::chrono::steady_clock::now();
    std::exception_ptr thrown;
    try {
      protocol::ToolResult result = co_await inner(std::move(arguments), ctx);
      record.outcome = ctx.cancelled()   ? AuditRecord::Outcome::cancelled
                       : result.is_error ? AuditRecord::Outcome::error
                                         : AuditRecord::Outcome::ok;
      record.result = result;
      record.duration = std::chrono::steady_clock::now() - start;
      write(record);
      co_return result;
    } catch (const std::system_error& e) {
      record.outcome = e.code() == asio::error::operation_aborted ? AuditRecord::Outcome::cancelled
                                                                  : AuditRecord::Outcome::failed;
      record.failure = record.outcome == AuditRecord::Outcome::failed ? e.what() : "";
      thrown = std::current_exception();
    } catch (const std::exception& e) {
      record.outcome = AuditRecord::Outcome::failed;
      record.failure = e.what();
      thrown = std::current_exception();
    }
    record.duration = std::chrono::steady_clock::now() - start;
    write(record);
    std::rethrow_exception(thrown);
  };
  return tool;
}

}  // namespace brig::session
