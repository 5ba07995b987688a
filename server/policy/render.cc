#include "server/policy/render.h"

#include <fmt/format.h>

#include "server/policy/expand.h"
#include "server/policy/names.h"
#include "server/policy/units.h"

namespace brig::policy {
namespace {

std::string path_rules(const std::vector<PathRule>& rules) {
  if (rules.empty()) return "[]";
  std::string out = "[\n";
  for (const PathRule& r : rules) {
    const std::string path = toml_string(r.path, /*escape_dollar=*/true);
    out += r.optional ? fmt::format("  {{ path = {}, optional = true }},\n", path)
                      : fmt::format("  {},\n", path);
  }
  return out + "]";
}

template <class T, class F>
std::string list(const std::vector<T>& items, F&& to_string) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += toml_string(to_string(items[i]), /*escape_dollar=*/false);
  }
  return out + "]";
}

std::string size_or_unlimited(const std::optional<uint64_t>& v) {
  return v ? toml_string(format_size(*v), false) : "\"unlimited\"";
}

std::string count_or_unlimited(const std::optional<uint64_t>& v) {
  return v ? std::to_string(*v) : "\"unlimited\"";
}

std::string duration_or_unlimited(const std::optional<std::chrono::milliseconds>& v) {
  return v ? toml_string(format_duration(*v), false) : "\"unlimited\"";
}

std::string tmpfs_size(uint64_t v) {
  return v == 0 ? "0  # the kernel default: half of RAM" : toml_string(format_size(v), false);
}

const char* boolean(bool b) {
  return b ? "true" : "false";
}

}  // namespace

std::string toml_string(std::string_view text, bool escape_dollar) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '$':
        out += escape_dollar ? "$$" : "$";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string render_policy(const Policy& p, const std::vector<std::string>& chain) {
  std::string out = "# The fully resolved policy";
  for (size_t i = 0; i < chain.size(); ++i) {
    out += i == 0 ? fmt::format(" of {}", chain[i]) : fmt::format(", extending {}", chain[i]);
  }
  out += ",\n# with ~ and $VARS expanded for this user. It loads as it is.\n";
  out += fmt::format("description = {}\n", toml_string(p.description, true));

  const Filesystem& fs = p.filesystem;
  out += "\n[filesystem]\n";
  out += fmt::format("workspace = \"{}\"\n", names::of(fs.workspace, names::kWorkspaceAccess));
  out += fmt::format("read_only = {}\n", path_rules(fs.read_only));
  out += fmt::format("read_write = {}\n", path_rules(fs.read_write));
  out += "hidden = [";
  for (size_t i = 0; i < fs.hidden.size(); ++i)
    out += fmt::format("{}\n  {}", i == 0 ? "" : ",", toml_string(fs.hidden[i], true));
  out += fs.hidden.empty() ? "]\n" : ",\n]\n";
  out += fmt::format("tmp_size = {}\n", tmpfs_size(fs.tmp_size));
  out += fmt::format("private_home = {}\n", boolean(fs.private_home));
  out += fmt::format("home_size = {}\n", tmpfs_size(fs.home_size));
  out += fmt::format("dangerously_writable_git = {}\n", boolean(fs.dangerously_writable_git));
  out += fmt::format("dangerously_devices = {}\n", path_rules(fs.dangerously_devices));

  out += "\n[environment]\n";
  out +=
      fmt::format("pass = {}\n", list(p.environment.pass, [](const std::string& s) { return s; }));
  out += "\n[environment.set]\n";
  for (const auto& [name, value] : p.environment.set)
    out += fmt::format("{} = {}\n", name, toml_string(value, true));

  const jail::Limits& l = p.limits;
  out += "\n[limits]\n";
  out += fmt::format("memory = {}\n", size_or_unlimited(l.memory_bytes));
  out += fmt::format("pids = {}\n", count_or_unlimited(l.pids));
  out += fmt::format(
      "cpu_time = {}\n",
      duration_or_unlimited(l.cpu_seconds
                                ? std::optional(std::chrono::milliseconds(*l.cpu_seconds * 1000))
                                : std::nullopt));
  out += fmt::format("file_size = {}\n", size_or_unlimited(l.file_size_bytes));
  out += fmt::format("open_files = {}\n", count_or_unlimited(l.open_files));
  out += fmt::format("wall_time = {}\n", duration_or_unlimited(l.wall_time));

  out += fmt::format("\n[seccomp]\nenabled = {}\n", boolean(p.seccomp));
  out += fmt::format("\n[landlock]\nenabled = {}\n", boolean(p.landlock));
  out += fmt::format("\n[namespaces]\ndangerously_share = {}\n",
                     list(p.dangerously_share, [](SharedNamespace n) {
                       return std::string(names::of(n, names::kSharedNamespaces));
                     }));
  out += fmt::format("\n[network]\nmode = \"{}\"\nloopback_servers = {}\n",
                     names::of(p.network.mode, names::kNetworkModes),
                     boolean(p.network.loopback_servers));
  out += fmt::format(
      "\n[identity]\nas_root = \"{}\"\nuid = {}\ngid = {}\ndangerously_unmask_root_secrets = {}\n",
      names::of(p.identity.as_root, names::kRootIdentities), p.identity.uid, p.identity.gid,
      boolean(p.identity.dangerously_unmask_root_secrets));
  out += fmt::format("\n[require]\nlayers = {}\n", list(p.require, [](jail::Layer l) {
                       return std::string(names::of(l, names::kLayers));
                     }));
  out += fmt::format("\n[tools]\ndisabled = {}\n",
                     list(p.disabled_tools, [](const std::string& s) { return s; }));
  return out;
}

}  // namespace brig::policy
