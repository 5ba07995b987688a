// The escape-attempt suite's common ground: jails planned from the shipped
// default policy (or a test policy that extends it) for a temporary
// workspace and home, the probe copied into that workspace, `brig run` as a
// user runs it, and the leftover checks of tests/jail plus brig's own
// cgroups and mounts.
//
// Every attack has a positive control: the same probe with only the layer
// under test switched off (without()), or aimed at an allowed target, must
// succeed, so that no attack passes because it broke for another reason.
#pragma once

#include <sys/types.h>
#include <chrono>

#include <string>
#include <vector>

#include "jail/spec.h"
#include "tests/jail/jail_test_support.h"

namespace brig::security::test {

using jail::ExecRequest;
using jail::JailSpec;
using jail::test::Ran;
using jail::test::TempDir;

// What `brig run` did: its exit status (-1: it did not exit normally) and output.
struct BrigRan {
  int status = -1;
  std::string out;
  std::string err;
};

// A jail and the probe command to run in it, as a policy plans them.
struct Planned {
  JailSpec spec;
  ExecRequest request;
};

class SecurityTest : public jail::test::JailTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The jail `policy` (a shipped name, or policy_file()'s path) plans for
  // workspace() and home() with the probe running `args` (and marker()).
  Planned plan(const std::string& policy, std::vector<std::string> args) const;
  // plan("default", args).
  Planned plan_default(std::vector<std::string> args) const { return plan("default", args); }
  // Runs a planned jail; a spawn failure fails the test.
  Ran run(const Planned& p) const { return jail::test::run_jail(p.spec, p.request); }

  // `brig run ARGS…` from workspace() with env ("NAME=value") besides PATH
  // and HOME=home(); stdin /dev/null. Every fd of this process without
  // CLOEXEC is inherited, as a user's shell would hand it on. Returns once
  // brig and the jail's init it leaves to exit (an orphan that comes to this
  // subreaper) are reaped.
  BrigRan brig_run(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
  // argv for the probe copied into the workspace, with marker() appended.
  std::vector<std::string> probe(std::vector<std::string> args) const;

  // Writes a policy file "<name>.toml" in a directory of its own and returns its path.
  std::string policy_file(const std::string& name, const std::string& toml);

  const std::string& workspace() const { return workspace_.path(); }
  const std::string& home() const { return home_.path(); }
  std::string probe_path() const { return workspace() + "/jail_probe"; }

 private:
  TempDir home_;
  TempDir policies_;
  std::vector<pid_t> brig_pids_;            // launchers whose cgroups TearDown checks
  std::vector<std::string> mounts_before_;  // watched host mounts at SetUp
};

// `spec` with `layer` switched off and no longer required: the positive
// control of an attack on that layer. Namespaces are switched off one at a
// time with the other overloads.
JailSpec without(JailSpec spec, jail::Layer layer);
// The host's pid namespace: the jail's own /proc (which needs the jail's pid
// namespace) is replaced by a bind of the host's.
JailSpec with_host_pids(JailSpec spec);
// The host's network namespace; Landlock's TCP rule is kept as the spec had it.
JailSpec with_host_network(JailSpec spec);

// A host process of this test (`sleep`), killed and reaped at destruction.
class HostSleeper {
 public:
  HostSleeper();
  ~HostSleeper();
  pid_t pid() const { return pid_; }
  // Whether it still runs (neither exited nor killed).
  bool alive();
  // How it ended once it did, as a wait status; -1 while it runs.
  int status() const { return status_; }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

// How many processes have `needle` in their command line; unlike
// jail::test::processes_with, safe while they come and go by the thousand.
size_t count_processes_with(const std::string& needle);

// Whether this process can still fork a child that exits 0: the host is healthy.
bool can_fork();

// The milliseconds from now until `deadline`, 0 once it has passed: a poll
// timeout for I/O that must end by then.
int ms_until(std::chrono::steady_clock::time_point deadline);

}  // namespace brig::security::test
