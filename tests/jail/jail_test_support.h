// Shared pieces of the jail tests: a baseline spec that works as root and
// as an unprivileged user, a runner that captures the jail's output, and a
// fixture that checks after each test that nothing it started is left
// (process, cgroup), retried to a generous deadline.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "jail/launcher.h"
#include "jail/spec.h"

namespace brig::jail::test {

// The directory holding this test binary and its sibling jail_probe.
std::string bin_dir();

// A jail with the system directories read-only, /proc, /dev, a private /tmp,
// the test binaries' directory read-only and `workspace` read-write; the
// caller's own uid/gid inside; Landlock matching the mounts; seccomp on.
JailSpec base_spec(const std::string& workspace);

// jail_probe with `args`, env PATH=/usr/bin:/bin and LANG=C.
ExecRequest probe_request(std::vector<std::string> args);

struct Ran {
  Outcome outcome;
  std::string out;  // the jail's stdout
  std::string err;  // the jail's stderr
};

// Everything in fd (a memfd that captured output), read from its start.
std::string slurp(int fd);

// spawn + wait (deadline 60 s unless the spec has a wall time), capturing
// stdout and stderr in memfds. A spawn error fails the test.
Ran run_jail(const JailSpec& spec, ExecRequest request);

// wait (deadline 60 s unless the jail's is earlier), then what the jail
// wrote to the memfds `out` and `err`. A failed wait fails the test.
Ran wait_and_collect(RunningJail& jailed, int out, int err);

// Lines of `text`, without the trailing newline.
std::vector<std::string> lines(const std::string& text);

// A temporary directory (0755) removed with its contents at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Makes the test process a child subreaper; after each test, no child of
// ours, no process whose command line holds marker(), and no cgroup named
// for this process may be left.
class JailTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // A string unique to this test, to put in jailed commands' argv.
  const std::string& marker() const { return marker_; }
  TempDir workspace_;

 private:
  std::string marker_;
};

// Pids of processes whose command line contains `needle`, this process
// excepted. Processes that exit while /proc is read are skipped (no throw).
std::vector<pid_t> processes_with(const std::string& needle);

// Cgroup directories under brig's dirs made by launcher `pid` (named
// "<pid>-<n>"); by default this process.
std::vector<std::string> our_cgroups(pid_t pid = 0);

}  // namespace brig::jail::test
