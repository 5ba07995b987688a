#include "jail/steps/caps.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace brig::jail::caps {

Result<Prepared> prepare(const Namespaces& namespaces) {
  Prepared prepared;
  // cap_max_bits() is how many capabilities the running kernel knows, which
  // may be more or fewer than the headers brig was built with.
  int bits = static_cast<int>(cap_max_bits());
  if (bits <= 0 || bits > 64) {
    return std::unexpected(Error{"capabilities: count the kernel's capabilities", "",
                                 "libcap reports " + std::to_string(bits)});
  }
  prepared.last_cap = bits - 1;
  if (namespaces.user) return prepared;  // the new namespace's root has every capability

  // Without a new user namespace the child holds exactly the caller's
  // capabilities.
  cap_t own = cap_get_proc();
  if (own == nullptr) return std::unexpected(sys_error("capabilities: cap_get_proc", "", errno));
  cap_flag_value_t setpcap = CAP_CLEAR;
  int rc = cap_get_flag(own, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
  int err = errno;
  cap_free(own);
  if (rc != 0) return std::unexpected(sys_error("capabilities: cap_get_flag", "CAP_SETPCAP", err));
  prepared.can_setpcap = setpcap == CAP_SET;
  if (!prepared.can_setpcap) {
    prepared.unenforced.push_back(
        "capabilities: the bounding set is kept and securebits are not locked (no CAP_SETPCAP "
        "outside a user namespace); no_new_privs keeps execve from gaining anything through them");
  }
  return prepared;
}

int apply_in_child(const Prepared& prepared) {
  if (prepared.can_setpcap) {
    // Securebits first, while CAP_SETPCAP is still effective. NOROOT: uid 0
    // gets no capabilities from execve. NO_CAP_AMBIENT_RAISE: the ambient set
    // stays empty. KEEP_CAPS_LOCKED: keep-caps stays off. Each one locked, so
    // nothing in the jail can undo it.
    constexpr unsigned long kBits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
                                    SECBIT_NO_CAP_AMBIENT_RAISE |
                                    SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED | SECBIT_KEEP_CAPS_LOCKED;
    if (prctl(PR_SET_SECUREBITS, kBits, 0, 0, 0) != 0) return errno;
    // The bounding set limits what any later execve can grant; dropping a
    // capability from it needs CAP_SETPCAP, so this comes before capset.
    for (int cap = 0; cap <= prepared.last_cap; ++cap) {
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return errno;
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return errno;
  // Raw capset: libcap's cap_set_proc allocates. Lowering the sets needs no
  // privilege, and all three go to zero at once.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, data) != 0) return errno;
  return 0;
}

int set_no_new_privs_in_child() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  return 0;
}

}  // namespace brig::jail::caps
