// The spellings policies use for enum values, indexed by the enum's value, so
// the loader, `policy show` and the docs agree.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "server/policy/policy.h"
#include "server/policy/tool_names.h"

namespace brig::policy::names {

inline constexpr std::array<std::string_view, 2> kWorkspaceAccess = {"read_write", "read_only"};
inline constexpr std::array<std::string_view, 4> kNetworkModes = {"none", "proxy", "filtered",
                                                                  "dangerously_host"};
inline constexpr std::array<std::string_view, 3> kRootIdentities = {"mapped", "user",
                                                                    "dangerously_host_root"};
inline constexpr std::array<std::string_view, 6> kSharedNamespaces = {"user", "mount", "pid",
                                                                      "ipc",  "uts",   "cgroup"};
// jail::Layer, spelled as jail::layer_name() does.
inline constexpr std::array<std::string_view, 5> kLayers = {"namespaces", "landlock", "seccomp",
                                                            "cgroups", "capabilities"};
// The MCP tools a policy can switch off: kTools, in server/policy/tool_names.h.

// The name of enum value `e` in `table`.
template <class E, size_t N>
constexpr std::string_view of(E e, const std::array<std::string_view, N>& table) {
  return table[static_cast<size_t>(e)];
}

// The enum value spelled `name` in `table`; nullopt if none is.
template <class E, size_t N>
constexpr std::optional<E> find(std::string_view name,
                                const std::array<std::string_view, N>& table) {
  for (size_t i = 0; i < N; ++i) {
    if (table[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace brig::policy::names
