// brig-search-bench: search in-process versus ripgrep, with one thread
// (rg -j1) and with every usable core (rg -jN, N the same), and find_files
// (its first page, and every page by cursor) versus `rg --files`, on the
// same tree in the same run. Prints the core count, times, ratios and
// whether the counts agree.
//   brig-search-bench TREE [RUNS] [find|search|first|brig1|brigN]
// TREE: e.g. the Linux source extracted into /dev/shm and `git init`ed
// (tests/bench/README or issue 4 describe how).
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/search/cpu_limit.h"
#include "server/search/file_prefetch.h"
#include "server/search/find_files.h"
#include "server/search/search.h"

namespace {

using Clock = std::chrono::steady_clock;
using brig::protocol::Json;

struct Case {
  const char* name;
  Json args;                    // search_op arguments besides output_mode
  std::vector<std::string> rg;  // ripgrep flags besides -j1 and the mode flag
};

// Runs ripgrep in `tree`, reading (and dropping) its output through a pipe:
// ripgrep quits at the first match when its stdout is /dev/null.
std::pair<double, std::size_t> run_rg(const std::string& tree, std::vector<std::string> args,
                                      std::size_t threads) {
  args.insert(args.begin(), {"rg", "-j" + std::to_string(threads), "--no-config"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2];
  if (::pipe(out) != 0) std::abort();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addchdir_np(&fa, tree.c_str());
  const auto start = Clock::now();
  pid_t pid;
  if (posix_spawnp(&pid, "rg", &fa, nullptr, argv.data(), environ) != 0) {
    std::perror("rg");
    std::exit(1);
  }
  ::close(out[1]);
  std::string text;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status;
  ::waitpid(pid, &status, 0);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  // "-c" prints path:count per file; otherwise one line per match.
  std::size_t matches = 0;
  const bool counts = std::find(args.begin(), args.end(), "-c") != args.end();
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl - at);
    matches += counts ? std::strtoull(line.substr(line.rfind(':') + 1).c_str(), nullptr, 10) : 1;
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return {secs, matches};
}

std::pair<double, std::size_t> run_brig(const std::string& tree, Json args, std::size_t threads) {
  brig::files::OpContext ctx;
  ctx.workspace = tree;
  ctx.max_bytes = std::size_t{1} << 30;
  args["max_results"] = brig::search::kMaxSearchResults;
  const auto start = Clock::now();
  auto r = brig::search::search_with(args, ctx, brig::search::SearchTuning{threads});
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (!r) {
    std::fprintf(stderr, "search: %s\n", r.error().to_string().c_str());
    std::exit(1);
  }
  std::size_t matches = 0;
  for (const Json& f : r->header["files"]) matches += f.value("count", std::size_t{0});
  if (r->header.value("truncated", false)) std::fprintf(stderr, "warning: result truncated\n");
  return {secs, matches};
}

// The calling thread's CPU time (s): on a loaded machine the wall time of a
// short call is mostly waiting for a CPU; this is the walk's own work.
double thread_cpu() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
double g_walk_cpu = 0;  // of the walk's thread, in the last run_find

// find_files for `glob`: the first page of `limit` paths, or (all) every
// page by cursor; the time and the paths seen.
std::pair<double, std::size_t> run_find(const std::string& tree, const char* glob,
                                        std::size_t limit, bool all,
                                        std::size_t read_ahead = SIZE_MAX) {
  brig::files::OpContext ctx;
  ctx.workspace = tree;
  ctx.max_bytes = std::size_t{4} << 20;  // the worker's default reply size
  Json args = {{"pattern", glob}, {"limit", limit}};
  std::size_t seen = 0;
  const double cpu0 = thread_cpu();
  const auto start = Clock::now();
  for (;;) {
    auto r = brig::search::find_files_with(args, ctx, brig::search::FindTuning{read_ahead});
    if (!r) {
      std::fprintf(stderr, "find_files: %s\n", r.error().to_string().c_str());
      std::exit(1);
    }
    seen += r->header["files"].size();
    if (!all || !r->header.contains("next_cursor")) break;
    args["cursor"] = r->header["next_cursor"];
  }
  g_walk_cpu = thread_cpu() - cpu0;
  return {std::chrono::duration<double>(Clock::now() - start).count(), seen};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TREE [RUNS] [find|search|first|brig1|brigN]\n", argv[0]);
    return 2;
  }
  const std::string tree = argv[1];
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  // "find": find_files alone (profiling the walk); "search": search alone;
  // "first": only find_files' first page, RUNS times (profiling it).
  const std::string only = argc > 3 ? argv[3] : "";
  if (only == "first") {
    std::vector<double> wall, cpu;
    for (int i = 0; i < runs; ++i) {
      wall.push_back(run_find(tree, "**/*.c", 200, /*all=*/false).first * 1000);
      cpu.push_back(g_walk_cpu * 1000);
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf(
        "find_files **/*.c, first page (200), %d runs: median %.1f ms, best %.1f ms "
        "(walk's thread CPU median %.1f ms)\n",
        runs, wall[wall.size() / 2], wall[0], cpu[cpu.size() / 2]);
    return 0;
  }
  const std::vector<Case> cases = {
      {"literal PM_RESUME", {{"pattern", "PM_RESUME"}}, {"PM_RESUME"}},
      {"-i pm_resume", {{"pattern", "pm_resume"}, {"case_insensitive", true}}, {"-i", "pm_resume"}},
      {"regex \\w+_SUSPEND\\b", {{"pattern", "\\w+_SUSPEND\\b"}}, {"\\w+_SUSPEND\\b"}},
  };
  const std::size_t cores = brig::search::usable_cores();
  if (const auto quota = brig::search::cgroup_cpu_limit())
    std::printf("cgroup CPU quota: %zu cores\n", *quota);
  else
    std::printf("cgroup CPU quota: none\n");
  // "brig1", "brigN": brig alone, the first case counted (profiling it).
  if (only == "brig1" || only == "brigN") {
    Json args = cases[0].args;
    args["output_mode"] = "count";
    for (int i = 0; i < runs; ++i) {
      const auto [t, n] = run_brig(tree, args, only == "brig1" ? 1 : cores);
      std::printf("brig %s: %.3f s, %zu\n", only.c_str(), t, n);
    }
    return 0;
  }
  std::printf("usable cores: %zu (rg -j%zu and brig with %zu threads in the N columns)\n", cores,
              cores, cores);
  std::printf("%-24s %-7s %8s %8s %6s %8s %8s %6s %9s %9s\n", "case", "mode", "brig1 s", "rg-j1 s",
              "ratio", "brigN s", "rg-jN s", "ratio", "brig n", "rg n");
  for (const Case& c : cases) {
    if (only == "find") break;
    for (const char* mode : {"count", "content"}) {
      Json args = c.args;
      args["output_mode"] = mode;
      std::vector<std::string> rg = c.rg;
      rg.insert(rg.begin(), std::string(mode) == "count" ? "-c" : "-n");
      double b1 = 1e9, r1 = 1e9, bn = 1e9, rn = 1e9;
      std::size_t n_brig = 0, n_rg = 0;
      for (int i = 0; i < runs; ++i) {
        // Alternate, so neither side always runs on a warmer cache.
        const auto [tb, nb] = run_brig(tree, args, 1);
        const auto [tr, nr] = run_rg(tree, rg, 1);
        const auto [tbn, nbn] = run_brig(tree, args, cores);
        const auto [trn, nrn] = run_rg(tree, rg, cores);
        b1 = std::min(b1, tb);
        r1 = std::min(r1, tr);
        bn = std::min(bn, tbn);
        rn = std::min(rn, trn);
        n_brig = nb == nbn ? nb : 0;
        n_rg = nr == nrn ? nr : 0;
      }
      std::printf("%-24s %-7s %8.3f %8.3f %6.2f %8.3f %8.3f %6.2f %9zu %9zu%s\n", c.name, mode, b1,
                  r1, b1 / r1, bn, rn, bn / rn, n_brig, n_rg,
                  n_brig == n_rg ? "" : "  (counts differ)");
    }
  }
  if (only == "search") return 0;
  // find_files: every page by cursor (10000 paths a page, the most) against
  // rg --files, and the first page (the default 200) alone.
  double all_find = 1e9, first_find = 1e9, all_rg = 1e9, first_alone = 1e9;
  double all_alone = 1e9, first_cpu = 1e9, alone_cpu = 1e9;
  std::size_t n_find = 0, n_rg = 0;
  for (int i = 0; i < runs; ++i) {
    const auto [tf, nf] = run_find(tree, "**/*.c", 10000, /*all=*/true);
    const auto [tp, np] = run_find(tree, "**/*.c", 200, /*all=*/false);
    first_cpu = std::min(first_cpu, g_walk_cpu);
    const auto [tr, nr] = run_rg(tree, {"--files", "-g", "*.c"}, cores);
    // The same without directories read ahead: the walk's thread alone.
    first_alone = std::min(first_alone, run_find(tree, "**/*.c", 200, false, 0).first);
    alone_cpu = std::min(alone_cpu, g_walk_cpu);
    all_alone = std::min(all_alone, run_find(tree, "**/*.c", 10000, true, 0).first);
    all_find = std::min(all_find, tf);
    first_find = std::min(first_find, tp);
    all_rg = std::min(all_rg, tr);
    n_find = nf;
    n_rg = nr;
    (void)np;
  }
  std::printf(
      "find_files **/*.c, all pages: %.3f s, rg --files -j%zu: %.3f s, ratio %.2f, %zu vs "
      "%zu paths%s\n",
      all_find, cores, all_rg, all_find / all_rg, n_find, n_rg,
      n_find == n_rg ? "" : "  (counts differ)");
  std::printf("find_files **/*.c, first page (200): %.1f ms (walk's thread CPU %.1f ms)\n",
              first_find * 1000, first_cpu * 1000);
  std::printf(
      "  without reading ahead (the walk's thread alone): first page %.1f ms (CPU %.1f ms), all "
      "pages %.3f s\n",
      first_alone * 1000, alone_cpu * 1000, all_alone);
  return 0;
}
