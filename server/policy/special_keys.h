// Apply functions of the keys with rules of their own beyond a typed read:
// what they refuse, and why, lives here; the key table (keys.cc) names them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "server/policy/policy.h"
#include "server/policy/reader.h"

namespace brig::policy {

void apply_env_pass(Reader& r, Policy& p, const Setting& s);
void apply_env_set(Reader& r, Policy& p, const Setting& s);

void apply_memory(Reader& r, Policy& p, const Setting& s);
// A size limit other than memory, or "unlimited".
void read_size_limit(Reader& r, std::optional<uint64_t>& field, const Setting& s);
// A count limit of at least `min`, or "unlimited".
void read_count_limit(Reader& r, std::optional<uint64_t>& field, const Setting& s, int64_t min);
void apply_cpu_time(Reader& r, Policy& p, const Setting& s);
void apply_wall_time(Reader& r, Policy& p, const Setting& s);

void apply_as_root(Reader& r, Policy& p, const Setting& s);
// identity.uid or gid: a host id other than (uid_t)-1.
void read_host_id(Reader& r, uint32_t& field, const Setting& s);

// network.allow, network.deny: rules, each refused at its own position.
void read_net_rules(Reader& r, std::vector<NetRule>& rules, const Setting& s);
// network.hosts: name -> address, merged by name.
void apply_net_hosts(Reader& r, Policy& p, const Setting& s);

void apply_dangerously_share(Reader& r, Policy& p, const Setting& s);
void apply_disabled_tools(Reader& r, Policy& p, const Setting& s);

}  // namespace brig::policy
