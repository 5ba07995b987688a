#include "server/search/thread_start.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <memory>

namespace brig::search {

std::thread start_thread_elsewhere(std::function<void()> body) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool known = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  // The thread widens its mask again only after the caller has narrowed it:
  // widened first, the narrowing would stick.
  auto placed = std::make_shared<std::atomic<bool>>(false);
  std::thread t([allowed, known, placed, body = std::move(body)] {
    if (known) {
      while (!placed->load(std::memory_order_acquire)) ::sched_yield();
      ::sched_setaffinity(0, sizeof allowed, &allowed);
    }
    body();
  });
  if (known) {
    cpu_set_t others = allowed;
    const int here = ::sched_getcpu();
    if (here >= 0) CPU_CLR(here, &others);
    if (CPU_COUNT(&others) > 0) ::pthread_setaffinity_np(t.native_handle(), sizeof others, &others);
    placed->store(true, std::memory_order_release);
  }
  return t;
}

}  // namespace brig::search
