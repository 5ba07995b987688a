// Principals: whose identity a tool call's jails, jobs and file workers take.
// brig's own calls (stdio, and socket peers of brig's own uid) use the
// sandbox and workers planned at start-up. A root brig that admits other
// users (--allow-uid, --allow-gid) serves each of them as themselves: a
// sandbox planned for the peer's uid and gid (SO_PEERCRED) and its passwd
// entry's home, and file workers of its own running as the peer, so the
// kernel checks every command and file operation with the peer's
// permissions, never root's. Kept per (uid, gid) for the server's life.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <asio/any_io_executor.hpp>

#include "jail/base/error.h"
#include "server/pool/worker_pool.h"
#include "server/process/peer_credentials.h"
#include "server/sandbox/sandbox.h"

namespace brig::tools {

// The sandbox a call runs in and the file workers that serve it (null when
// the server runs no file tools).
struct Principal {
  const sandbox::Sandbox& sandbox;
  pool::WorkerPool* workers;
};

// Plans the sandbox of another user (plan_sandbox_for with the server's
// policy, workspace and directory); the spawner is filled in by Principals.
using AccountPlanner = std::function<Result<sandbox::Sandbox>(const sandbox::Account& account)>;

// `account`'s passwd entry's name and home (symlinks resolved when it
// exists), with uid and gid as given; an error naming the uid when it has
// no entry.
Result<sandbox::Account> account_of(uid_t uid, gid_t gid);

// For a refusal by the host's permissions (EACCES) in `sandbox`: when it
// is another user's than brig's, a sentence saying the call ran as that
// user and who could change it; else empty.
std::string identity_refusal(const sandbox::Sandbox& sandbox);

class Principals {
 public:
  // own and own_workers (may be null) must outlive this. plan_other empty:
  // no other user is served. worker_path: brig-worker, for other users'
  // workers (empty: none, as own_workers).
  Principals(asio::any_io_executor executor, const sandbox::Sandbox& own,
             pool::WorkerPool* own_workers, AccountPlanner plan_other = {},
             std::string worker_path = {});

  // The sandbox brig planned at start-up: tool descriptions come from it.
  const sandbox::Sandbox& own() const { return own_.sandbox; }

  // The principal for calls of `who` (ToolContext::principal()): brig's own
  // when empty or of brig's uid; else that user's, planned on first use.
  // Fails when brig is not root (it cannot take another uid), or the user's
  // sandbox cannot be planned (no passwd entry, a policy error for its home).
  Result<Principal> of(const std::optional<process::PeerCredentials>& who);

  // Kills every worker; later calls start new ones.
  void stop();

 private:
  struct Other {
    sandbox::Sandbox sandbox;
    std::unique_ptr<pool::WorkerPool> workers;
  };

  asio::any_io_executor executor_;
  Principal own_;
  AccountPlanner plan_other_;
  std::string worker_path_;
  std::map<std::pair<uid_t, gid_t>, std::unique_ptr<Other>> others_;
};

}  // namespace brig::tools
