#include "protocol/versions.h"

#include <algorithm>

namespace brig::protocol {

bool is_legacy_version(std::string_view version) {
  return std::find(kLegacyVersions.begin(), kLegacyVersions.end(), version) !=
         kLegacyVersions.end();
}

bool allows_batches(std::string_view legacy_version) {
  return legacy_version == "2025-03-26";
}

}  // namespace brig::protocol
