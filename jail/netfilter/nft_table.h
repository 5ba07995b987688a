// Whether an nftables table exists, asked of the kernel directly: a reply to
// one netlink message, where libnftables would first build its whole cache.
#pragma once

#include <string>

#include "jail/base/error.h"

namespace brig::jail::netfilter {

// Table `name` of family inet, in the caller's network namespace.
Result<bool> inet_table_exists(const std::string& name);

}  // namespace brig::jail::netfilter
