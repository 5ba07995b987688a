// The MCP protocol revisions brig serves, and what each one allows.
#pragma once

#include <array>
#include <string_view>

namespace brig::protocol {

// The modern (per-request _meta, no handshake) revision.
inline constexpr std::string_view kModernVersion = "2026-07-28";

// Legacy (initialize handshake) revisions, newest first; an initialize asking
// for anything else is answered with the first one.
inline constexpr std::array<std::string_view, 4> kLegacyVersions = {"2025-11-25", "2025-06-18",
                                                                    "2025-03-26", "2024-11-05"};

// Every revision brig serves, newest first: server/discover's supportedVersions
// and the -32022 error's data.supported.
inline constexpr std::array<std::string_view, 5> kSupportedVersions = {
    kModernVersion, kLegacyVersions[0], kLegacyVersions[1], kLegacyVersions[2], kLegacyVersions[3]};

// True for a legacy revision brig serves; false for the modern one and unknown text.
bool is_legacy_version(std::string_view version);

// True only for 2025-03-26: the one revision whose schema has JSON-RPC batches
// (added there, removed in 2025-06-18; 2024-11-05 never had them).
bool allows_batches(std::string_view legacy_version);

}  // namespace brig::protocol
