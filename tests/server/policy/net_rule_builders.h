// Addresses and network rules from their policy text, for net_rules and
// net_filter tests; a text that does not parse fails the test that wrote it.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "server/policy/net_rules.h"

namespace brig::policy::testing {

inline Address addr(std::string_view text) {
  auto a = parse_address(text);
  EXPECT_TRUE(a) << text;
  return a.value_or(Address{});
}

inline NetRule rule(std::string_view text) {
  auto r = parse_net_rule(text);
  EXPECT_TRUE(r) << text << ": " << (r ? "" : r.error().to_string());
  return r.value_or(NetRule{});
}

inline NetRules rules(std::vector<std::string_view> allow, std::vector<std::string_view> deny = {},
                      std::vector<StaticHost> hosts = {}) {
  NetRules out;
  for (auto t : allow) out.allow.push_back(rule(t));
  for (auto t : deny) out.deny.push_back(rule(t));
  out.hosts = std::move(hosts);
  return out;
}

}  // namespace brig::policy::testing
