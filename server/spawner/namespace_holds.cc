#include "server/spawner/namespace_holds.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>

#include "server/spawner/jail_pool.h"

namespace brig::spawner {
namespace {

// A number alone on the first line of a /proc/sys file; nullopt if unreadable.
std::optional<std::uint64_t> read_limit(const char* path) {
  char buf[32];
  if (read_start_of(path, buf, sizeof buf) == 0) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(buf, &end, 10);
  if (end == buf) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

}  // namespace

std::size_t holds_allowed(std::optional<std::uint64_t> available,
                          std::optional<std::uint64_t> net_limit,
                          std::optional<std::uint64_t> user_limit,
                          std::optional<std::uint64_t> open_files) {
  std::uint64_t allowed = kMaxHeld;
  if (available) allowed = std::min(allowed, *available / kMemoryPerHeld);
  for (const auto& limit : {net_limit, user_limit, open_files})
    if (limit) allowed = std::min(allowed, *limit / 8);
  return static_cast<std::size_t>(allowed);
}

NamespaceHolds::NamespaceHolds(std::size_t cap) : cap_(cap) {}

std::size_t NamespaceHolds::cap_for_this_host() {
  std::optional<std::uint64_t> open_files;
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    open_files = files.rlim_cur;
  return holds_allowed(memory_available(), read_limit("/proc/sys/user/max_net_namespaces"),
                       read_limit("/proc/sys/user/max_user_namespaces"), open_files);
}

void NamespaceHolds::keep(UniqueFd hold) {
  if (!hold) return;
  if (cap_ == 0) return;  // closed as it goes out of scope
  if (held_.size() >= cap_) held_.pop_front();
  held_.push_back(std::move(hold));
}

}  // namespace brig::spawner
