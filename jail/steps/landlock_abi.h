// The Landlock kernel ABI, versions 1 to 7, as brig uses it. Debian 12's
// <linux/landlock.h> stops at ABI 2 (its landlock_ruleset_attr has only
// handled_access_fs), so brig carries its own copies of the uapi structs and
// flags under its own names; values and layouts are those of the kernel's
// include/uapi/linux/landlock.h. Newer fields are appended to the structs, and
// the kernel accepts a larger struct as long as the fields it does not know
// are zero, so one struct serves every ABI.
#pragma once

#include <cstdint>

namespace brig::jail::landlock_abi {

// landlock_create_ruleset(attr, size, flags) flags.
inline constexpr uint32_t kCreateRulesetVersion = 1U << 0;  // returns the ABI version
inline constexpr uint32_t kCreateRulesetErrata = 1U << 1;   // returns the errata bitmask

// struct landlock_ruleset_attr (handled_access_net: ABI 4, scoped: ABI 6).
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};
static_assert(sizeof(RulesetAttr) == 24);

// enum landlock_rule_type.
inline constexpr int kRulePathBeneath = 1;
inline constexpr int kRuleNetPort = 2;  // ABI 4

// struct landlock_path_beneath_attr (packed in the uapi header).
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access = 0;
  int32_t parent_fd = -1;
};
static_assert(sizeof(PathBeneathAttr) == 12);

// struct landlock_net_port_attr (ABI 4). `port` is in host byte order.
struct NetPortAttr {
  uint64_t allowed_access = 0;
  uint64_t port = 0;
};
static_assert(sizeof(NetPortAttr) == 16);

// Filesystem access rights.
inline constexpr uint64_t kFsExecute = 1ULL << 0;
inline constexpr uint64_t kFsWriteFile = 1ULL << 1;
inline constexpr uint64_t kFsReadFile = 1ULL << 2;
inline constexpr uint64_t kFsReadDir = 1ULL << 3;
inline constexpr uint64_t kFsRemoveDir = 1ULL << 4;
inline constexpr uint64_t kFsRemoveFile = 1ULL << 5;
inline constexpr uint64_t kFsMakeChar = 1ULL << 6;
inline constexpr uint64_t kFsMakeDir = 1ULL << 7;
inline constexpr uint64_t kFsMakeReg = 1ULL << 8;
inline constexpr uint64_t kFsMakeSock = 1ULL << 9;
inline constexpr uint64_t kFsMakeFifo = 1ULL << 10;
inline constexpr uint64_t kFsMakeBlock = 1ULL << 11;
inline constexpr uint64_t kFsMakeSym = 1ULL << 12;
inline constexpr uint64_t kFsRefer = 1ULL << 13;     // ABI 2
inline constexpr uint64_t kFsTruncate = 1ULL << 14;  // ABI 3
inline constexpr uint64_t kFsIoctlDev = 1ULL << 15;  // ABI 5

// Network access rights (ABI 4).
inline constexpr uint64_t kNetBindTcp = 1ULL << 0;
inline constexpr uint64_t kNetConnectTcp = 1ULL << 1;

// Scopes (ABI 6).
inline constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
inline constexpr uint64_t kScopeSignal = 1ULL << 1;

// landlock_restrict_self(fd, flags) flags (ABI 7): audit logging controls.
inline constexpr uint32_t kRestrictSelfLogSameExecOff = 1U << 0;
inline constexpr uint32_t kRestrictSelfLogNewExecOn = 1U << 1;
inline constexpr uint32_t kRestrictSelfLogSubdomainsOff = 1U << 2;

// The newest ABI whose definitions this file carries; a newer kernel is used
// at this ABI (Landlock is backward compatible).
inline constexpr int kNewestKnownAbi = 7;

// Every filesystem right a given ABI handles: the ruleset must not name a
// right the kernel does not know (EINVAL).
constexpr uint64_t fs_rights_for_abi(int abi) {
  if (abi < 1) return 0;
  uint64_t rights = (kFsMakeSym << 1) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) rights |= kFsRefer;
  if (abi >= 3) rights |= kFsTruncate;
  if (abi >= 5) rights |= kFsIoctlDev;
  return rights;
}

// The rights that make sense on a file that is not a directory: adding a rule
// with directory-only rights on a regular file fails with EINVAL.
inline constexpr uint64_t kFsFileRights =
    kFsExecute | kFsWriteFile | kFsReadFile | kFsTruncate | kFsIoctlDev;

}  // namespace brig::jail::landlock_abi
