// JSON-RPC 2.0 and MCP error codes that brig sends. Protocol faults only:
// a tool that fails answers with an isError result, never with one of these.
#pragma once

namespace brig::protocol::error_code {

inline constexpr int kParseError = -32700;      // the line is not JSON (reply has no id)
inline constexpr int kInvalidRequest = -32600;  // JSON, but not a valid JSON-RPC request
inline constexpr int kMethodNotFound = -32601;  // unknown method, or not served in that era
inline constexpr int kInvalidParams = -32602;   // params wrong for the method, missing _meta
inline constexpr int kInternalError = -32603;   // brig's own fault, or a limit it enforces
// MCP 2026-07-28: the request's _meta protocolVersion is not one brig serves;
// data = {"supported": [...], "requested": "..."}.
inline constexpr int kUnsupportedProtocolVersion = -32022;

}  // namespace brig::protocol::error_code
