// [[llm.routes]]: the placeholder-key LLM proxy's routes (docs/llm.md).
// Reading them from TOML, the provider presets, the upstream URL's parts,
// and the jail-side names (the base URL a jail's variables point at). Pure:
// the real keys are read by server/llm/, never here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jail/base/error.h"
#include "server/policy/policy.h"
#include "server/policy/reader.h"

namespace brig::policy {

// A provider preset: what a route naming it gets unless it says otherwise.
struct LlmPreset {
  std::string_view provider;
  std::string_view target;  // "" = the route must name its own (openai-compatible)
  std::string_view header;
  std::string_view key_variable;
  std::string_view base_url_variable;
};

// anthropic, openai, gemini, openai-compatible.
std::span<const LlmPreset> llm_presets();

// A route's target split: the scheme decides TLS; path has no trailing '/'
// ("" for none). Only https:// anywhere, or http:// to a loopback host (a
// model server on this machine), with no userinfo, query or fragment.
struct LlmTarget {
  bool tls = true;
  std::string host;  // lower-case; an IPv6 address without brackets
  std::uint16_t port = 443;
  std::string path;
};
Result<LlmTarget> parse_llm_target(std::string_view url);

// The Host header's value for `t` (the port only when not the scheme's).
std::string llm_host_header(const LlmTarget& t);

// The jail's base URL for `route`: http://127.0.0.1:<kLlmPort>/<prefix>.
std::string llm_base_url(const LlmRoute& route);

// The variables a jail with `routes` gets: each route's key variable set to
// `placeholder` and its base URL variable. "NAME", "value".
std::vector<std::pair<std::string, std::string>> llm_environment(
    const std::vector<LlmRoute>& routes, std::string_view placeholder);

// llm.routes: an array of tables (`[[llm.routes]]`). A route's mistakes are
// each reported at their own position; llm.routes_add appends.
void apply_llm_routes(Reader& r, Policy& p, const Setting& s);

// The routes as `brig policy show` writes them (loads back to the same).
std::string llm_routes_text(const std::vector<LlmRoute>& routes);

// What only the whole policy shows: routes with mode dangerously_host (the
// listener would sit on the host's own loopback), a route's key variable
// passed into the jail by environment.pass (the real key would enter it),
// and environment.set naming a route's jail variable. One message each.
std::vector<std::string> llm_route_conflicts(const Policy& p);

}  // namespace brig::policy
