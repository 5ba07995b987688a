#include "server/policy/caller.h"

#include <pwd.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern char** environ;

namespace brig::policy {

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

std::string caller_home(const EnvMap& env) {
  std::string home;
  if (auto it = env.find("HOME"); it != env.end() && it->second.starts_with('/')) {
    home = it->second;
  } else if (FILE* passwd = std::fopen("/etc/passwd", "re")) {
    // /etc/passwd itself, not getpwuid: `brig` is a static executable, where
    // NSS would dlopen the glibc it was linked against. A login (LDAP, sssd)
    // always sets HOME; this fallback is for services and cron, whose users
    // are local.
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> buf(16384);
    while (::fgetpwent_r(passwd, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
      if (found->pw_uid != ::geteuid()) continue;
      if (found->pw_dir != nullptr && found->pw_dir[0] == '/') home = found->pw_dir;
      break;
    }
    std::fclose(passwd);
  }
  if (home.empty()) return home;
  char real[PATH_MAX];
  if (::realpath(home.c_str(), real) != nullptr) return real;
  auto normal = normalize_path(home);
  return normal ? *normal : std::string();
}

Context caller_context(std::string workspace, std::string cwd, EnvMap env, std::string home) {
  Context ctx;
  ctx.workspace = std::move(workspace);
  ctx.cwd = std::move(cwd);
  ctx.uid = ::geteuid();
  ctx.gid = ::getegid();
  ctx.home = std::move(home);
  ctx.env = std::move(env);
  return ctx;
}

}  // namespace brig::policy
