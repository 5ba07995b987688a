// brig-server: `brig serve` (brig execs it) and the other commands that
// need the whole server: asio, spdlog, JSON.
#include "server/server_cli.h"

int main(int argc, char** argv) {
  return brig::server::server_main(argc, argv);
}
