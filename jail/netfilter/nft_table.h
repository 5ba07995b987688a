// Whether an nftables table exists, asked of the kernel directly: a reply to
// one netlink message, where libnftables would first build its whole cache.
#pragma once

#include <optional>
#include <string>

#include "jail/base/error.h"

namespace brig::jail::netfilter {

// How many rules table `name` of family inet holds in the caller's network
// namespace; nullopt: there is no such table.
Result<std::optional<int>> inet_table_rules(const std::string& name);

}  // namespace brig::jail::netfilter
