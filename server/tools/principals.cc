#include "server/tools/principals.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/policy/expand.h"

namespace brig::tools {

Result<sandbox::Account> account_of(uid_t uid, gid_t gid) {
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  const int err = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
  const std::string where = fmt::format("uid {}", uid);
  if (err != 0) return std::unexpected(sys_error("look up the user", where, err));
  if (found == nullptr) {
    // Without an entry there is no home to give the jail, and no name for
    // the operator's logs; such a client is refused rather than guessed at.
    return std::unexpected(
        Error{"look up the user", where, "no passwd entry: brig takes the user's home from it"});
  }
  sandbox::Account account{.uid = uid, .gid = gid, .name = found->pw_name, .home = {}};
  if (found->pw_dir != nullptr && found->pw_dir[0] == '/') {
    char real[PATH_MAX];
    if (::realpath(found->pw_dir, real) != nullptr) {
      account.home = real;
    } else if (auto normal = policy::normalize_path(found->pw_dir)) {
      account.home = *normal;
    }
  }
  return account;
}

std::string identity_refusal(const sandbox::Sandbox& sandbox) {
  const policy::Context& who = sandbox.context;
  if (who.uid == ::geteuid()) return {};
  return fmt::format(
      "brig ran this call as uid {} gid {}, the client's own user (without its supplementary "
      "groups), and the host's permissions refuse that user here. brig never lends a client "
      "more than its own permissions: the owner of the path (or of the workspace) can grant "
      "that user access, with a group or an ACL.",
      who.uid, who.gid);
}

Principals::Principals(asio::any_io_executor executor, const sandbox::Sandbox& own,
                       pool::WorkerPool* own_workers, AccountPlanner plan_other,
                       std::string worker_path)
    : executor_(std::move(executor)),
      own_{own, own_workers},
      plan_other_(std::move(plan_other)),
      worker_path_(std::move(worker_path)) {}

Result<Principal> Principals::of(const std::optional<process::PeerCredentials>& who) {
  const uid_t self = ::geteuid();
  if (!who || who->uid == self) return own_;
  const std::string where = fmt::format("uid {} gid {}", who->uid, who->gid);
  if (self != 0) {
    // `brig serve` refuses to admit other users when not root; this is the
    // same rule for any other way a call could arrive.
    return std::unexpected(Error{
        "run as the client's user", where,
        fmt::format("brig runs as uid {}, not root, and the kernel lets it give a jail no ids "
                    "but its own; the client's calls would run with brig's permissions",
                    self)});
  }
  const auto key = std::make_pair(who->uid, who->gid);
  if (auto it = others_.find(key); it != others_.end())
    return Principal{it->second->sandbox, it->second->workers.get()};
  if (!plan_other_) {
    return std::unexpected(
        Error{"run as the client's user", where, "this server serves no other users"});
  }
  Result<sandbox::Account> account = account_of(who->uid, who->gid);
  if (!account) return std::unexpected(account.error());
  Result<sandbox::Sandbox> planned = plan_other_(*account);
  if (!planned) {
    Error e = planned.error();
    e.what = fmt::format("plan the sandbox of {} ({}): {}", account->name, where, e.what);
    return std::unexpected(std::move(e));
  }
  auto other = std::make_unique<Other>();
  other->sandbox = std::move(*planned);
  other->sandbox.spawner = own_.sandbox.spawner;
  if (own_.workers != nullptr && !worker_path_.empty())
    other->workers = std::make_unique<pool::WorkerPool>(executor_, other->sandbox, worker_path_,
                                                        own_.workers->journal_root());
  spdlog::info("serving {} ({}) as itself: its jails and file workers take its ids, home {}",
               account->name, where, account->home.empty() ? "none" : account->home);
  Principal principal{other->sandbox, other->workers.get()};
  others_.emplace(key, std::move(other));
  return principal;
}

void Principals::stop() {
  if (own_.workers != nullptr) own_.workers->stop();
  for (auto& [key, other] : others_) {
    if (other->workers) other->workers->stop();
  }
}

}  // namespace brig::tools
