#include "jail/steps/process.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

namespace brig::jail::process {

int arrange_fds_in_child(const FdPlan& plan) {
  int base = plan.first_unused;
  for (const auto& m : plan.moves) base = std::max({base, m.from + 1, m.to + 1});
  int tmp[32];
  const size_t n = plan.moves.size();
  if (n > sizeof tmp / sizeof tmp[0]) return EINVAL;
  for (size_t i = 0; i < n; ++i) {
    tmp[i] = ::fcntl(plan.moves[i].from, F_DUPFD_CLOEXEC, base);
    if (tmp[i] < 0) return errno;
  }
  for (size_t i = 0; i < n; ++i)
    if (::dup3(tmp[i], plan.moves[i].to, plan.moves[i].cloexec ? O_CLOEXEC : 0) < 0) return errno;
  // A fixed number below first_unused that nothing moved to (no network
  // namespace's socket, no tree for a missing source) still holds whatever
  // the launcher had there: closed too, so it reads as absent.
  for (int fd = 0; fd < plan.first_unused; ++fd) {
    bool target = false;
    for (size_t i = 0; i < n; ++i) target = target || plan.moves[i].to == fd;
    if (!target) ::close(fd);
  }
  return ::close_range(static_cast<unsigned>(plan.first_unused), ~0U, 0) == 0 ? 0 : errno;
}

std::vector<Rlimit> plan_rlimits(const Limits& limits) {
  std::vector<Rlimit> out;
  auto add = [&](int resource, const std::optional<uint64_t>& v) {
    if (!v) return;
    struct rlimit cur {};
    ::getrlimit(resource, &cur);
    rlim_t value = static_cast<rlim_t>(*v);
    if (cur.rlim_max != RLIM_INFINITY) value = std::min(value, cur.rlim_max);
    out.push_back({resource, {value, value}});
  };
  add(RLIMIT_CPU, limits.cpu_seconds);
  add(RLIMIT_FSIZE, limits.file_size_bytes);
  add(RLIMIT_NOFILE, limits.open_files);
  // RLIMIT_NPROC counts the init as well, which the cgroup tier does not
  // hold: one more keeps `pids` the command's own budget in both tiers.
  // (Saturating: the largest pids is no limit, not 0.)
  if (limits.pids)
    add(RLIMIT_NPROC,
        *limits.pids == std::numeric_limits<uint64_t>::max() ? *limits.pids : *limits.pids + 1);
  add(RLIMIT_DATA, limits.memory_bytes);
  return out;
}

int apply_rlimits_in_child(const std::vector<Rlimit>& rlimits, bool cgroup_pids, bool cgroup_memory,
                           int* failed) {
  for (size_t i = 0; i < rlimits.size(); ++i) {
    if ((rlimits[i].resource == RLIMIT_NPROC && cgroup_pids) ||
        (rlimits[i].resource == RLIMIT_DATA && cgroup_memory))
      continue;
    if (::setrlimit(static_cast<__rlimit_resource>(rlimits[i].resource), &rlimits[i].value) != 0) {
      *failed = static_cast<int>(i);
      return errno;
    }
  }
  return 0;
}

int switch_ids_in_child(uid_t uid, gid_t gid) {
  if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return errno;
  // Raw syscalls: glibc's set*id would try to apply the change to every
  // thread it believes the process has, and the clone's thread list is stale.
  if (::syscall(SYS_setresgid, gid, gid, gid) != 0 || ::syscall(SYS_setresuid, uid, uid, uid) != 0)
    return errno;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return errno;
  for (auto& d : data) d.effective = d.permitted;
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  return ::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) == 0 ? 0 : errno;
}

int drop_groups_in_child() {
  return ::syscall(SYS_setgroups, 0, nullptr) == 0 ? 0 : errno;
}

int reset_signals_in_child() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    ::sigaction(sig, &dfl, nullptr);  // EINVAL for KILL/STOP/internal ones
  sigset_t none;
  sigemptyset(&none);
  return ::sigprocmask(SIG_SETMASK, &none, nullptr) == 0 ? 0 : errno;
}

std::vector<PageRange> code_pages() {
  std::vector<PageRange> out;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& ranges = *static_cast<std::vector<PageRange>*>(data);
        const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W)) continue;
          // Only pages wholly inside the segment: a page shared with a
          // writable neighbour could hold data.
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          const uintptr_t begin = (start + page - 1) & ~(page - 1);
          const uintptr_t end = (start + ph.p_memsz) & ~(page - 1);
          if (end > begin) ranges.push_back({reinterpret_cast<char*>(begin), end - begin});
        }
        return 1;  // the program itself comes first; shared libraries are shared anyway
      },
      &out);
  return out;
}

void release_code_pages(const std::vector<PageRange>& ranges) {
  for (const auto& r : ranges) ::madvise(r.begin, r.size, MADV_DONTNEED);
}

}  // namespace brig::jail::process
