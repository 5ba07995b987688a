#include "jail/spec_validate.h"

#include <string>
#include <string_view>

#include "jail/base/path.h"

namespace brig::jail {
namespace {

Error invalid(std::string where, std::string why) {
  return Error{"invalid jail spec", std::move(where), std::move(why), 0};
}

bool has_nul(std::string_view s) {
  return s.find('\0') != std::string_view::npos;
}

// Whether `child` is `parent` or lies beneath it.
Result<void> check_path(const std::string& path, const std::string& where) {
  if (path.empty()) return std::unexpected(invalid(where, "empty path"));
  if (has_nul(path)) return std::unexpected(invalid(where, "path contains a NUL byte"));
  if (!is_normal_absolute(path))
    return std::unexpected(invalid(
        where,
        "\"" + path + "\" is not an absolute, normalized path (no ., .., // or trailing /)"));
  return {};
}

// What a dev mount makes itself: its minimal devices, devpts, shm and the
// standard links (jail/steps/mounts.cc plan_dev).
constexpr std::string_view kDevOwnEntries[] = {"null",  "zero",   "full",  "random", "urandom",
                                               "tty",   "pts",    "ptmx",  "shm",    "fd",
                                               "stdin", "stdout", "stderr"};

Result<void> check_devices(const Mount& m, const std::string& at) {
  if (m.kind != Mount::Kind::dev) {
    if (!m.devices.empty())
      return std::unexpected(invalid(at + ".devices", "only a dev mount has devices"));
    return {};
  }
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const std::string where = at + ".devices[" + std::to_string(i) + "]";
    const std::string& path = m.devices[i].path;
    if (has_nul(path)) return std::unexpected(invalid(where, "path contains a NUL byte"));
    if (auto why = device_path_problem(path)) return std::unexpected(invalid(where, *why));
    for (size_t j = 0; j < i; ++j)
      if (m.devices[j].path == path)
        return std::unexpected(
            invalid(where, "\"" + path + "\" is also devices[" + std::to_string(j) + "]"));
  }
  return {};
}

Result<void> check_mounts(const JailSpec& spec) {
  if (!spec.mounts.empty() && !spec.namespaces.mount)
    return std::unexpected(invalid("mounts", "a mount plan needs the mount namespace"));
  bool have_proc = false, have_dev = false, have_git = false;
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const Mount& m = spec.mounts[i];
    const std::string at = "mounts[" + std::to_string(i) + "]";
    BRIG_TRY_VOID(check_path(m.target, at + ".target"));
    if (m.target == "/")
      return std::unexpected(invalid(at + ".target", "the jail's root is brig's own tmpfs"));
    if (m.kind == Mount::Kind::bind)
      BRIG_TRY_VOID(check_path(m.source, at + ".source"));
    else if (!m.source.empty())
      return std::unexpected(invalid(at + ".source", "only a bind has a source"));
    if (m.kind == Mount::Kind::proc) {
      if (have_proc) return std::unexpected(invalid(at, "a second proc mount"));
      if (!spec.namespaces.pid)
        return std::unexpected(
            invalid(at, "proc needs the pid namespace (it would show the host's)"));
      have_proc = true;
    }
    if (m.kind == Mount::Kind::dev) {
      if (have_dev) return std::unexpected(invalid(at, "a second dev mount"));
      have_dev = true;
    }
    if (m.kind == Mount::Kind::git) {
      // One private layer, at a fixed place in the setup's scratch root.
      if (have_git) return std::unexpected(invalid(at, "a second git mount"));
      have_git = true;
    }
    BRIG_TRY_VOID(check_devices(m, at));
    if (m.kind == Mount::Kind::file && m.content.size() > kMaxFileContent)
      return std::unexpected(
          invalid(at + ".content", "more than " + std::to_string(kMaxFileContent) + " bytes"));
    if (m.kind != Mount::Kind::file && !m.content.empty())
      return std::unexpected(invalid(at + ".content", "only a file mount has content"));
    if (m.keep_owner && m.kind != Mount::Kind::bind)
      return std::unexpected(invalid(at + ".keep_owner", "only a bind keeps its owner"));
    if (m.keep_owner && !spec.namespaces.user)
      return std::unexpected(
          invalid(at + ".keep_owner", "an idmapped bind maps to the jail's user namespace"));
    if (m.mode > 07777) return std::unexpected(invalid(at + ".mode", "not a file mode"));
    for (size_t j = 0; j < i; ++j) {
      const Mount& earlier = spec.mounts[j];
      if (earlier.target == m.target)
        return std::unexpected(invalid(
            at + ".target", "\"" + m.target + "\" is also mounts[" + std::to_string(j) + "]"));
      // A later mount over a parent would hide this earlier one entirely.
      if (is_within(earlier.target, m.target) && m.kind != Mount::Kind::mask &&
          m.kind != Mount::Kind::file)
        return std::unexpected(invalid(at + ".target", "\"" + m.target + "\" would cover mounts[" +
                                                           std::to_string(j) +
                                                           "]; parents come before children"));
    }
  }
  return {};
}

// The listeners live in the jail's own network namespace: without one they
// would be the host's loopback, which other users share.
Result<void> check_listeners(const JailSpec& spec) {
  if (spec.listeners.empty()) return {};
  if (spec.network == NetworkMode::dangerously_host)
    return std::unexpected(invalid("listeners", "need the jail's own network namespace"));
  if (spec.listeners.size() > kMaxListeners)
    return std::unexpected(invalid("listeners", "more than " + std::to_string(kMaxListeners)));
  for (size_t i = 0; i < spec.listeners.size(); ++i) {
    const Listener& l = spec.listeners[i];
    const std::string at = "listeners[" + std::to_string(i) + "]";
    if (l.port == 0) return std::unexpected(invalid(at + ".port", "must be 1-65535"));
    for (size_t j = 0; j < i; ++j)
      if (spec.listeners[j] == l)
        return std::unexpected(invalid(at, "the same as listeners[" + std::to_string(j) + "]"));
  }
  return {};
}

// A filter belongs to a filtered jail, and the launcher runs its program:
// an absolute path, and entries the kernel's rules can hold.
Result<void> check_filter(const JailSpec& spec) {
  const NetFilter& f = spec.filter;
  if (spec.network != NetworkMode::filtered) {
    if (f != NetFilter{}) return std::unexpected(invalid("filter", "only for network filtered"));
    return {};
  }
  if (f.program.empty() || f.program[0] != '/' || has_nul(f.program))
    return std::unexpected(invalid("filter.program", "must be an absolute path"));
  if (f.allow.size() + f.deny.size() > kMaxFilterEntries)
    return std::unexpected(
        invalid("filter", "more than " + std::to_string(kMaxFilterEntries) + " entries"));
  for (const auto* entries : {&f.allow, &f.deny}) {
    const std::string list = entries == &f.allow ? "filter.allow" : "filter.deny";
    for (size_t i = 0; i < entries->size(); ++i) {
      const NetFilter::Entry& e = (*entries)[i];
      const std::string at = list + "[" + std::to_string(i) + "]";
      if (e.prefix > 32) return std::unexpected(invalid(at + ".prefix", "must be 0-32"));
      const std::uint32_t a = (std::uint32_t{e.address[0]} << 24) |
                              (std::uint32_t{e.address[1]} << 16) |
                              (std::uint32_t{e.address[2]} << 8) | e.address[3];
      if (e.prefix < 32 && (a & (0xffffffffu >> e.prefix)) != 0)
        return std::unexpected(invalid(at + ".address", "has bits past its prefix"));
      if (e.first_port == 0 || e.first_port > e.last_port)
        return std::unexpected(invalid(at, "ports must be 1-65535, first <= last"));
    }
  }
  return {};
}

Result<void> check_limits(const Limits& l) {
  auto positive = [](const std::optional<uint64_t>& v) { return !v || *v > 0; };
  if (!positive(l.memory_bytes))
    return std::unexpected(invalid("limits.memory_bytes", "must be > 0"));
  if (l.memory_bytes && *l.memory_bytes < (1u << 20))
    return std::unexpected(invalid("limits.memory_bytes", "below 1 MiB no program starts"));
  if (!positive(l.pids)) return std::unexpected(invalid("limits.pids", "must be > 0"));
  if (!positive(l.cpu_seconds))
    return std::unexpected(invalid("limits.cpu_seconds", "must be > 0"));
  if (!positive(l.file_size_bytes))
    return std::unexpected(invalid("limits.file_size_bytes", "must be > 0"));
  if (l.open_files && *l.open_files < 3)
    return std::unexpected(invalid("limits.open_files", "must leave room for stdio (>= 3)"));
  if (l.wall_time && l.wall_time->count() <= 0)
    return std::unexpected(invalid("limits.wall_time", "must be > 0"));
  return {};
}

}  // namespace

std::optional<std::string> device_path_problem(const std::string& path) {
  if (!is_normal_absolute(path))
    return "\"" + path + "\" is not an absolute, normalized path (no ., .., // or trailing /)";
  if (path == "/dev")
    return "\"/dev\" is the jail's own; name a device under it like \"/dev/fuse\"";
  if (!is_within(path, "/dev"))
    return "\"" + path + "\" is not a path under /dev; name a device like \"/dev/fuse\"";
  const std::string_view rest = std::string_view(path).substr(5);
  const std::string_view first = rest.substr(0, rest.find('/'));
  for (std::string_view own : kDevOwnEntries)
    if (first == own)
      return "\"" + path + "\" is part of the jail's minimal /dev already (/dev/" +
             std::string(own) + "); remove it";
  return std::nullopt;
}

Result<void> validate(const JailSpec& spec) {
  const Namespaces& ns = spec.namespaces;
  if (spec.network != NetworkMode::dangerously_host && !ns.net)
    return std::unexpected(
        invalid("network", "modes none and filtered need the network namespace"));
  if (spec.network == NetworkMode::dangerously_host && ns.net)
    return std::unexpected(invalid("network", "dangerously_host needs the network namespace off"));
  if (ns.uts) {
    if (spec.hostname.empty() || spec.hostname.size() > 64 || has_nul(spec.hostname))
      return std::unexpected(invalid("hostname", "1 to 64 bytes, no NUL"));
  }
  // The init switches to the jail's ids before it builds the jail, which
  // needs the capabilities only the namespace's root keeps.
  if (!spec.identity.map_launcher &&
      (spec.identity.inside_uid != 0 || spec.identity.inside_gid != 0 || !ns.user))
    return std::unexpected(
        invalid("identity",
                "without the launcher's ids mapped, the jail's ids are root's (0) in a user "
                "namespace of its own"));
  BRIG_TRY_VOID(check_mounts(spec));
  BRIG_TRY_VOID(check_listeners(spec));
  BRIG_TRY_VOID(check_filter(spec));
  BRIG_TRY_VOID(check_limits(spec.limits));
  for (size_t i = 0; i < spec.landlock.read_only.size(); ++i)
    BRIG_TRY_VOID(
        check_path(spec.landlock.read_only[i], "landlock.read_only[" + std::to_string(i) + "]"));
  for (size_t i = 0; i < spec.landlock.read_write.size(); ++i)
    BRIG_TRY_VOID(
        check_path(spec.landlock.read_write[i], "landlock.read_write[" + std::to_string(i) + "]"));
  for (size_t i = 0; i < spec.landlock.list_only.size(); ++i)
    BRIG_TRY_VOID(
        check_path(spec.landlock.list_only[i], "landlock.list_only[" + std::to_string(i) + "]"));
  return {};
}

Result<void> validate(const ExecRequest& request) {
  if (request.argv.empty() || request.argv[0].empty())
    return std::unexpected(invalid("argv", "no command"));
  for (size_t i = 0; i < request.argv.size(); ++i)
    if (has_nul(request.argv[i]))
      return std::unexpected(invalid("argv[" + std::to_string(i) + "]", "contains a NUL byte"));
  for (size_t i = 0; i < request.env.size(); ++i) {
    const std::string& e = request.env[i];
    const size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || has_nul(e))
      return std::unexpected(
          invalid("env[" + std::to_string(i) + "]", "not NAME=value: \"" + e + "\""));
  }
  if (!request.cwd.empty()) BRIG_TRY_VOID(check_path(request.cwd, "cwd"));
  const int fds[] = {request.stdin_fd, request.stdout_fd, request.stderr_fd};
  const char* names[] = {"stdin_fd", "stdout_fd", "stderr_fd"};
  for (int i = 0; i < 3; ++i)
    if (fds[i] < -1) return std::unexpected(invalid(names[i], "-1 or an open fd"));
  return {};
}

}  // namespace brig::jail
