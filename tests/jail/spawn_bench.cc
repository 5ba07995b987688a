// Not a test: the median wall time of spawn + wait of /bin/true in the test
// suite's baseline jail (every namespace, mounts, Landlock, seccomp), over
// N runs (default 200). Usage: jail_spawn_bench [N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/jail/jail_test_support.h"

int main(int argc, char** argv) {
  using namespace brig::jail;
  const int n = argc > 1 ? std::atoi(argv[1]) : 200;
  char tmpl[] = "/tmp/brig-bench.XXXXXX";
  const char* ws = ::mkdtemp(tmpl);
  if (!ws) return 1;
  const JailSpec spec = test::base_spec(ws);
  ExecRequest req;
  req.argv = {"/bin/true"};
  req.env = {"PATH=/usr/bin:/bin"};
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto j = spawn(spec, req);
    if (!j) {
      std::fprintf(stderr, "spawn: %s\n", j.error().to_string().c_str());
      return 1;
    }
    auto o = wait(*j);
    if (!o || o->exit_status() != 0) {
      std::fprintf(stderr, "run %d: %s\n", i,
                   o ? o->to_string().c_str() : o.error().to_string().c_str());
      return 1;
    }
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  ::rmdir(ws);
  std::sort(ms.begin(), ms.end());
  std::printf(
      "spawn+wait /bin/true: median %.2f ms, p10 %.2f ms, p90 %.2f ms over %d runs (uid %d)\n",
      ms[ms.size() / 2], ms[ms.size() / 10], ms[ms.size() * 9 / 10], n,
      static_cast<int>(::getuid()));
  return 0;
}
