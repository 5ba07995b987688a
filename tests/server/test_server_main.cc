// brig-test-server: brig-server's command line plus the TEST tools the
// conformance and server tests drive (see test_tools.h).
#include "server/server_cli.h"
#include "tests/server/test_tools.h"

int main(int argc, char** argv) {
  return brig::server::server_main(argc, argv, brig::server::testing::add_test_tools);
}
