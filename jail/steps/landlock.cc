#include "jail/steps/landlock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace brig::jail::landlock {
namespace abi = landlock_abi;

int probe_abi() {
  long version = syscall(SYS_landlock_create_ruleset, nullptr, 0, abi::kCreateRulesetVersion);
  if (version < 1) return 0;  // ENOSYS: not built in; EOPNOTSUPP: not enabled at boot
  return static_cast<int>(std::min<long>(version, abi::kNewestKnownAbi));
}

Result<Prepared> plan(const LandlockRules& rules, int kernel_abi) {
  Prepared prepared;
  if (!rules.enabled) return prepared;
  for (const auto* list : {&rules.read_only, &rules.read_write, &rules.list_only}) {
    for (const std::string& path : *list) {
      if (path.empty() || path.front() != '/') {
        return std::unexpected(
            Error{"landlock: rule", path, "paths must be absolute, as seen inside the jail"});
      }
    }
  }
  int level = std::min(kernel_abi, abi::kNewestKnownAbi);
  if (level < 1) {
    prepared.unenforced.push_back(
        "landlock: this kernel has no Landlock (not built in, or missing from the lsm= boot "
        "parameter)");
    return prepared;
  }
  const std::string have = ", this kernel has " + std::to_string(level);
  prepared.abi = level;

  // Handle every right the kernel knows, so that only what a rule grants is
  // allowed; a right left unhandled would be allowed everywhere.
  const uint64_t all = abi::fs_rights_for_abi(level);
  prepared.attr.handled_access_fs = all;
  constexpr uint64_t kReadOnly = abi::kFsExecute | abi::kFsReadFile | abi::kFsReadDir;
  for (const std::string& path : rules.read_only) prepared.paths.push_back({path, kReadOnly});
  for (const std::string& path : rules.read_write) prepared.paths.push_back({path, all});
  for (const std::string& path : rules.list_only) prepared.paths.push_back({path, abi::kFsReadDir});

  if (rules.restrict_tcp) {
    if (level >= 4) {
      prepared.attr.handled_access_net = abi::kNetBindTcp | abi::kNetConnectTcp;
      for (uint16_t port : rules.bind_tcp) prepared.ports.push_back({abi::kNetBindTcp, port});
      for (uint16_t port : rules.connect_tcp) prepared.ports.push_back({abi::kNetConnectTcp, port});
    } else {
      prepared.unenforced.push_back("landlock: TCP bind/connect rules need ABI 4" + have);
    }
  }
  if (rules.scope_abstract_unix) {
    if (level >= 6) {
      prepared.attr.scoped |= abi::kScopeAbstractUnixSocket;
    } else {
      prepared.unenforced.push_back("landlock: abstract unix socket scoping needs ABI 6" + have);
    }
  }
  if (rules.scope_signals) {
    if (level >= 6) {
      prepared.attr.scoped |= abi::kScopeSignal;
    } else {
      prepared.unenforced.push_back("landlock: signal scoping needs ABI 6" + have);
    }
  }
  return prepared;
}

LayerStatus layer_status(const LandlockRules& rules, const Prepared& prepared) {
  if (!rules.enabled) return {Layer::landlock, LayerState::off, ""};
  std::string detail;
  for (const std::string& u : prepared.unenforced) detail += (detail.empty() ? "" : "; ") + u;
  return {Layer::landlock, prepared.abi == 0 ? LayerState::degraded : LayerState::enforced,
          std::move(detail)};
}

Result<Prepared> prepare(const LandlockRules& rules) {
  return plan(rules, probe_abi());
}

namespace {

// Adds one path rule. A path missing from the jail, or one the command's ids
// cannot reach (another user's workspace, with its optional .git), is
// skipped: a rule on it could only have granted access.
int add_path_rule(int ruleset, const PathGrant& grant) {
  int fd = open(grant.path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == EACCES ? 0 : errno;
  int err = 0;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    err = errno;
  } else {
    // Directory-only rights on a file are EINVAL: keep the ones a file has.
    abi::PathBeneathAttr attr;
    attr.allowed_access = S_ISDIR(st.st_mode) ? grant.access : grant.access & abi::kFsFileRights;
    attr.parent_fd = fd;
    if (syscall(SYS_landlock_add_rule, ruleset, abi::kRulePathBeneath, &attr, 0) != 0) err = errno;
  }
  close(fd);
  return err;
}

int add_rules(int ruleset, const Prepared& prepared) {
  for (const PathGrant& grant : prepared.paths) {
    if (int err = add_path_rule(ruleset, grant)) return err;
  }
  for (const abi::NetPortAttr& port : prepared.ports) {
    if (syscall(SYS_landlock_add_rule, ruleset, abi::kRuleNetPort, &port, 0) != 0) return errno;
  }
  return 0;
}

}  // namespace

int apply_in_child(const Prepared& prepared) {
  if (prepared.abi < 1) return 0;
  // The whole struct is passed whatever the ABI: a kernel that knows fewer
  // fields accepts it because plan() left those fields zero.
  long ruleset = syscall(SYS_landlock_create_ruleset, &prepared.attr, sizeof prepared.attr, 0);
  if (ruleset < 0) return errno;
  int fd = static_cast<int>(ruleset);
  int err = add_rules(fd, prepared);
  if (err == 0 && syscall(SYS_landlock_restrict_self, fd, 0) != 0) err = errno;
  close(fd);
  return err;
}

}  // namespace brig::jail::landlock
