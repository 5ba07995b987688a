// `brig connect HOST PORT`: stdin and stdout joined to HOST:PORT through the
// egress proxy of the `proxy` jail it runs in (CONNECT to 127.0.0.1's proxy
// port). It is what a proxy jail's GIT_SSH_COMMAND names as ssh's
// ProxyCommand, so that `git clone git@host:repo` reaches an allowed
// `host:22` the one way out there is; brig binds its own program read-only
// into such a jail for it (policy::Context::connect_program).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/App.hpp>

namespace brig::commands {

struct ConnectOptions {
  std::string host;
  std::uint16_t port = 0;
};

CLI::App* add_connect_command(CLI::App& app, ConnectOptions& options);

// Exit status: 0 once the upstream closed, 1 when the proxy refused (its
// answer on stderr) or could not be reached.
int run_connect(const ConnectOptions& options);

}  // namespace brig::commands
