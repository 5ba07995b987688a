// Short constructors for expected jail::Mount values in planner tests, and
// the sizes they are written with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jail/spec.h"

namespace brig::policy::testing {

using jail::Mount;

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

inline Mount mount_of(Mount::Kind kind, std::string target) {
  Mount m;
  m.kind = kind;
  m.target = std::move(target);
  return m;
}
inline Mount bound(std::string path, bool writable, bool optional) {
  Mount m = mount_of(Mount::Kind::bind, path);
  m.source = std::move(path);
  m.writable = writable;
  m.optional = optional;
  return m;
}
inline Mount ro(std::string path, bool optional = false) {
  return bound(path, false, optional);
}
inline Mount rw(std::string path, bool optional = false) {
  return bound(path, true, optional);
}
inline Mount tmpfs(std::string path, uint64_t size, mode_t mode) {
  Mount m = mount_of(Mount::Kind::tmpfs, std::move(path));
  m.writable = true;
  m.size_bytes = size;
  m.mode = mode;
  return m;
}
inline Mount mask(std::string path) {
  Mount m = mount_of(Mount::Kind::mask, std::move(path));
  m.optional = true;
  return m;
}
// The git layer on `path` (a workspace's .git), whose private layer may
// hold `size` bytes.
inline Mount git_layer(std::string path, uint64_t size) {
  Mount m = mount_of(Mount::Kind::git, std::move(path));
  m.optional = true;
  m.size_bytes = size;
  return m;
}
// An environment without the git settings every jail with the git layer
// gets (GIT_CONFIG_*; to_jail_spec_test checks those).
inline std::vector<std::string> without_git_config(std::vector<std::string> env) {
  std::erase_if(env, [](const std::string& e) { return e.starts_with("GIT_CONFIG_"); });
  return env;
}
inline Mount proc() {
  return mount_of(Mount::Kind::proc, "/proc");
}
// /dev, whose /dev/shm is `shm_size` bytes.
inline Mount dev(uint64_t shm_size) {
  Mount m = mount_of(Mount::Kind::dev, "/dev");
  m.size_bytes = shm_size;
  return m;
}

}  // namespace brig::policy::testing
