// Differential: the request scanner (protocol/request_scan.h) against the
// general path (parse_line + decode_message), through the oracle its unit
// test uses (tests/protocol/request_scan_oracle.h). A disagreement aborts,
// so libFuzzer keeps the line as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "protocol/json_rpc.h"
#include "tests/protocol/request_scan_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  if (auto why =
          brig::protocol::testing::disagreement(line, brig::protocol::kDefaultMaxNestingDepth)) {
    std::fprintf(stderr, "request_scan: %s\n", why->c_str());
    std::abort();
  }
  return 0;
}
