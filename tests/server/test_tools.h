// TEST tools, registered in this order (the contract with tests/conformance):
//   echo     {text}            → text, structuredContent {text}
//   add      {a, b}            → "<sum>", structuredContent {sum}; no other properties
//   slow     {seconds, marker?} → waits on an asio timer, then writes "done" to
//            marker; cancelled, it never writes the marker
//   progress {steps 1..1000, interval_ms = 10} → progress 1..steps ("step i"),
//            then "done <steps>", structuredContent {steps}
//   fail     {message}         → isError result with message
#pragma once

#include "jail/base/error.h"
#include "server/tools/registry.h"

namespace brig::server::testing {

// Adds the five test tools to registry; fails if any name is taken.
Result<void> add_test_tools(tools::Registry& registry);

}  // namespace brig::server::testing
