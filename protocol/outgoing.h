// Turns responses into lines that respect the outgoing size limit. Internal
// to protocol/.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "protocol/json_rpc.h"
#include "protocol/mcp_types.h"
#include "protocol/request_context.h"

namespace brig::protocol {

// One encoded response and a small stand-in for when the full line is over
// the limit: an isError tool result or a -32603 error that says how large
// the response was and what the limit is. A result's stand-in is made only
// when it is needed (almost never): `standin` says how.
struct Reply {
  struct Standin {
    Id id;
    Era era;
    bool tool_call;
  };
  std::string line;
  std::string fallback;            // an error's stand-in
  std::optional<Standin> standin;  // a result's, made on demand
};

// Encodes responses for one session; never produces a line over max_bytes
// (as long as max_bytes leaves room for a stand-in: Session keeps it >= 64 KiB).
class Outgoing {
 public:
  Outgoing(ServerInfo info, std::size_t max_bytes);

  // A result. modern: adds resultType "complete" and _meta serverInfo.
  // tool_call: the stand-in is an isError CallToolResult, so the model sees
  // why; otherwise it is a -32603 error.
  Reply result(const Id& id, Json result, Era era, bool tool_call) const;
  // A tools/call result: the bytes of result(id, r.to_json(), era, true),
  // written straight from r instead of through a JSON object.
  Reply tool_result(const Id& id, ToolResult&& r, Era era) const;
  // An error response; its stand-in drops data and shortens the message.
  Reply error(const ErrorResponse& e) const;

  // The line to send for one reply.
  std::string single(const Reply& r) const;
  // Same, moving the line out instead of copying it (it can be megabytes).
  std::string single(Reply&& r) const;
  // The lines to send for a batch: normally one JSON array. Members become
  // stand-ins, largest first, until the array fits; if even that is too big,
  // each member goes out as its own line.
  std::vector<std::string> batch(const std::vector<Reply>& replies) const;

  // The stand-in line of r.
  std::string fallback(const Reply& r) const;

  std::size_t max_bytes() const { return max_; }
  // " N bytes, over the M-byte limit on outgoing messages" text for stand-ins.
  std::string too_large(std::size_t size) const;

 private:
  Json decorate(Json result, Era era) const;

  ServerInfo info_;
  std::size_t max_;
  std::string meta_member_;  // "_meta":{serverInfo} of modern results, encoded once
};

}  // namespace brig::protocol
