// How many cores a search may keep busy when a cgroup caps the CPU time
// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us): threads beyond the quota only
// take turns, each waiting for the others' slices, so the search would be
// slower than with as many threads as the quota allows. The jail does not
// mount /sys, so the server reads its own cgroup's quota (the jail's
// processes run under it too: brig sets no CPU quota of its own) and hands
// it to the worker in its environment (kCpuLimitEnv).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace brig::search {

inline constexpr const char* kCpuLimitEnv = "BRIG_CPU_LIMIT";

// Cores a cgroup v2 cpu.max line ("150000 100000") allows, rounded up;
// nullopt for "max" (no quota) or text that is not a quota.
std::optional<std::size_t> cores_of_cpu_max(std::string_view line);

// The tightest CPU quota on this process's cgroup and its ancestors, in
// cores (cgroup v2, or v1's cpu controller); nullopt when none or unreadable.
std::optional<std::size_t> cgroup_cpu_limit();

// The limit the server passed in kCpuLimitEnv (a positive integer), if any.
std::optional<std::size_t> cpu_limit_from_env();

}  // namespace brig::search
