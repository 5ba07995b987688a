#include "server/policy/llm_routes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "jail/base/ascii.h"
#include "server/policy/suggest.h"
#include "server/policy/toml_text.h"

namespace brig::policy {
namespace {

// Gemini: GOOGLE_GEMINI_BASE_URL is what gemini-cli and Google's genai SDKs
// read to replace generativelanguage.googleapis.com (docs/llm.md).
constexpr LlmPreset kPresets[] = {
    {"anthropic", "https://api.anthropic.com", "x-api-key", "ANTHROPIC_API_KEY",
     "ANTHROPIC_BASE_URL"},
    {"openai", "https://api.openai.com/v1", "bearer", "OPENAI_API_KEY", "OPENAI_BASE_URL"},
    {"gemini", "https://generativelanguage.googleapis.com", "x-goog-api-key", "GEMINI_API_KEY",
     "GOOGLE_GEMINI_BASE_URL"},
    {"openai-compatible", "", "bearer", "OPENAI_API_KEY", "OPENAI_BASE_URL"},
};

constexpr std::array<std::string_view, 10> kRouteKeys = {
    "provider", "prefix",   "target",  "header",
    "key_env",  "key_file", "ca_file", "dangerously_skip_verify",
    "env",      "key"};  // "key": refused with its own message
constexpr std::array<std::string_view, 2> kEnvKeys = {"base_url", "key"};

bool is_variable_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front())) != 0) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

// One path segment of safe characters: it is matched literally and shown in URLs.
bool is_prefix(std::string_view s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
}

// An HTTP header name (RFC 9110 token), as the key's header.
bool is_header_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

// Headers the proxy sets or frames with itself: a key there would break the
// request or be sent where it must not go.
bool reserved_header(std::string_view lower) {
  constexpr std::string_view kReserved[] = {
      "host",    "content-length", "transfer-encoding",  "connection", "te",
      "upgrade", "cookie",         "proxy-authorization"};
  return std::find(std::begin(kReserved), std::end(kReserved), lower) != std::end(kReserved);
}

bool loopback_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

const LlmPreset* find_preset(std::string_view provider) {
  for (const LlmPreset& p : kPresets)
    if (p.provider == provider) return &p;
  return nullptr;
}

std::vector<std::string_view> preset_names() {
  std::vector<std::string_view> names;
  for (const LlmPreset& p : kPresets) names.push_back(p.provider);
  return names;
}

// One route from its table; nullopt when it has an error (each reported).
std::optional<LlmRoute> read_route(Reader& r, const toml::table& t, const std::string& where) {
  LlmRoute route;
  bool ok = true;
  const toml::node* provider_node = nullptr;
  const toml::node* env_node = nullptr;
  auto str = [&](const toml::node& n, std::string_view key, std::string_view example,
                 std::string& out) {
    if (auto v = r.string(n, fmt::format("{}.{}", where, key), example))
      out = *v;
    else
      ok = false;
  };
  for (auto&& [key, node] : t) {
    const std::string_view k = key.str();
    if (k == "provider") {
      provider_node = &node;
      str(node, k, "\"anthropic\"", route.provider);
    } else if (k == "prefix") {
      str(node, k, "\"local\"", route.prefix);
    } else if (k == "target") {
      str(node, k, "\"https://llm.internal.example:8443/v1\"", route.target);
    } else if (k == "header") {
      str(node, k, "\"bearer\", \"x-api-key\" or a header name", route.header);
    } else if (k == "key_env") {
      str(node, k, "\"ANTHROPIC_API_KEY\"", route.key_env);
    } else if (k == "key_file" || k == "ca_file") {
      if (auto path = r.path(node, fmt::format("{}.{}", where, k)))
        (k == "key_file" ? route.key_file : route.ca_file) = *path;
      else
        ok = false;
    } else if (k == "dangerously_skip_verify") {
      if (auto b = r.boolean(node, fmt::format("{}.{}", where, k)))
        route.dangerously_skip_verify = *b;
      else
        ok = false;
    } else if (k == "env") {
      env_node = &node;
    } else if (k == "key" || k == "api_key") {
      r.error(key.source(),
              fmt::format("{}: a key is never written in a policy (a jail may read the file); "
                          "name it with key_env = \"VARIABLE\" or key_file = \"/path\"",
                          where));
      ok = false;
    } else {
      auto guess = closest(k, kRouteKeys);
      r.error(key.source(),
              fmt::format("unknown key \"{}\" in {}{}; the keys there are {}", k, where,
                          guess ? fmt::format(" (did you mean \"{}\"?)", *guess) : "",
                          quoted_list(std::span(kRouteKeys.data(), 9))));
      ok = false;
    }
  }
  if (env_node != nullptr) {
    const toml::table* env = env_node->as_table();
    if (env == nullptr) {
      r.error(*env_node, fmt::format("{}.env must be a table, like env = {{ base_url = "
                                     "\"OPENAI_BASE_URL\", key = \"OPENAI_API_KEY\" }}; found {}",
                                     where, type_name(*env_node)));
      ok = false;
    } else {
      for (auto&& [key, node] : *env) {
        const std::string_view k = key.str();
        std::string* field = k == "base_url" ? &route.base_url_variable
                             : k == "key"    ? &route.key_variable
                                             : nullptr;
        if (field == nullptr) {
          r.error(key.source(), fmt::format("unknown key \"{}\" in {}.env; write {}", k, where,
                                            quoted_list(kEnvKeys)));
          ok = false;
          continue;
        }
        str(node, fmt::format("env.{}", k), "\"OPENAI_API_KEY\"", *field);
        if (!field->empty() && !is_variable_name(*field)) {
          r.error(node, fmt::format("{}.env.{} = \"{}\" is not a variable name (letters, digits "
                                    "and _, not starting with a digit)",
                                    where, k, *field));
          ok = false;
        }
      }
    }
  }
  if (!ok) return std::nullopt;

  const toml::source_region& at = t.source();
  const LlmPreset* preset = nullptr;
  if (!route.provider.empty()) {
    preset = find_preset(route.provider);
    if (preset == nullptr) {
      const auto names = preset_names();
      auto guess = closest(route.provider, names);
      r.error(*provider_node,
              fmt::format("{}: no provider preset is called \"{}\"{}; the presets are {} (or "
                          "leave provider out and write target, header and env yourself)",
                          where, route.provider,
                          guess ? fmt::format(" (did you mean \"{}\"?)", *guess) : "",
                          quoted_list(names)));
      return std::nullopt;
    }
    if (route.prefix.empty()) route.prefix = preset->provider;
    if (route.target.empty()) route.target = preset->target;
    if (route.header.empty()) route.header = preset->header;
    if (route.key_variable.empty()) route.key_variable = preset->key_variable;
    if (route.base_url_variable.empty()) route.base_url_variable = preset->base_url_variable;
  }
  route.header = ascii_lowered(route.header);

  std::vector<std::string> missing;
  if (route.prefix.empty()) missing.emplace_back("prefix");
  if (route.target.empty())
    missing.emplace_back(preset ? "target (the openai-compatible preset has none)" : "target");
  if (route.header.empty()) missing.emplace_back("header");
  if (route.key_variable.empty()) missing.emplace_back("env.key");
  if (route.base_url_variable.empty()) missing.emplace_back("env.base_url");
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    r.error(at, fmt::format("{} needs {} (or a provider preset: {})", where, list,
                            quoted_list(preset_names())));
    return std::nullopt;
  }
  if (!is_prefix(route.prefix)) {
    r.error(at, fmt::format("{}.prefix = \"{}\" must be one path segment of letters, digits, "
                            "'-', '_' and '.'",
                            where, route.prefix));
    return std::nullopt;
  }
  if (auto target = parse_llm_target(route.target); !target) {
    r.error(at, fmt::format("{}.target = \"{}\": {}", where, route.target, target.error().why));
    return std::nullopt;
  }
  if (!is_header_name(route.header) || reserved_header(route.header)) {
    r.error(at, fmt::format("{}.header = \"{}\": write \"bearer\" (Authorization: Bearer), "
                            "\"x-api-key\", or another header name the provider reads the key "
                            "from (not one HTTP itself uses)",
                            where, route.header));
    return std::nullopt;
  }
  if (route.key_env.empty() == route.key_file.empty()) {
    r.error(at, fmt::format("{} needs exactly one of key_env (a variable of brig's own "
                            "environment) and key_file (a file only its owner can read)",
                            where));
    return std::nullopt;
  }
  if (!route.key_env.empty() && !is_variable_name(route.key_env)) {
    r.error(at, fmt::format("{}.key_env = \"{}\" is not a variable name", where, route.key_env));
    return std::nullopt;
  }
  if (route.key_variable == route.base_url_variable) {
    r.error(at, fmt::format("{}: env.key and env.base_url are both {}", where, route.key_variable));
    return std::nullopt;
  }
  return route;
}

}  // namespace

std::span<const LlmPreset> llm_presets() {
  return kPresets;
}

Result<LlmTarget> parse_llm_target(std::string_view url) {
  auto fail = [](std::string why) { return std::unexpected(Error{"", "", std::move(why)}); };
  LlmTarget t;
  if (url.starts_with("https://")) {
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    t.tls = false;
    t.port = 80;
    url.remove_prefix(7);
  } else {
    return fail("must start with https:// (or http:// for a server on this host's loopback)");
  }
  if (url.find_first_of("?#") != std::string_view::npos) return fail("has a query or fragment");
  const std::size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : url.substr(slash);
  if (authority.find('@') != std::string_view::npos) return fail("has userinfo (user@)");
  std::string_view port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return fail("an IPv6 address without its ']'");
    t.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(':')) return fail("text after the IPv6 address");
      port = rest.substr(1);
    }
  } else {
    const std::size_t colon = authority.find(':');
    t.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  t.host = ascii_lowered(t.host);
  if (t.host.empty()) return fail("has no host");
  if (!std::all_of(t.host.begin(), t.host.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == ':';
      }))
    return fail("the host has characters a host name cannot");
  if (!port.empty() || authority.ends_with(':')) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      return fail(fmt::format("port \"{}\" is not 1-65535", port));
    t.port = static_cast<std::uint16_t>(value);
  }
  while (path.ends_with('/')) path.remove_suffix(1);
  for (char c : path) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      return fail("the path has a space or control character");
  }
  t.path = std::string(path);
  if (!t.tls && !loopback_host(t.host))
    return fail(
        "http:// sends the key unencrypted: only a loopback host (127.0.0.1, ::1, localhost) may "
        "be plain http; write https://");
  return t;
}

std::string llm_host_header(const LlmTarget& t) {
  std::string host = t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host;
  if (t.port != (t.tls ? 443 : 80)) host += fmt::format(":{}", t.port);
  return host;
}

std::string llm_base_url(const LlmRoute& route) {
  return fmt::format("http://127.0.0.1:{}/{}", kLlmPort, route.prefix);
}

std::vector<std::pair<std::string, std::string>> llm_environment(
    const std::vector<LlmRoute>& routes, std::string_view placeholder) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const LlmRoute& r : routes) {
    env.emplace_back(r.key_variable, std::string(placeholder));
    env.emplace_back(r.base_url_variable, llm_base_url(r));
  }
  return env;
}

void apply_llm_routes(Reader& r, Policy& p, const Setting& s) {
  const toml::array* a =
      r.list(s.value, s.name, "[[llm.routes]] tables: provider = \"anthropic\", key_env = \"...\"");
  if (a == nullptr) return;
  std::vector<LlmRoute>& routes = p.llm.routes;
  if (!s.add) routes.clear();
  std::size_t index = 0;
  for (const toml::node& e : *a) {
    ++index;
    const toml::table* t = e.as_table();
    if (t == nullptr) {
      r.error(
          e, fmt::format("{} entries are tables ([[llm.routes]]); found {}", s.base, type_name(e)));
      continue;
    }
    const std::string where = fmt::format("llm.routes[{}]", routes.size() + 1);
    auto route = read_route(r, *t, where);
    if (!route) continue;
    // A later file's route with the same prefix replaces the earlier one.
    auto same = std::find_if(routes.begin(), routes.end(),
                             [&](const LlmRoute& o) { return o.prefix == route->prefix; });
    if (same != routes.end() && s.add) {
      *same = std::move(*route);
      continue;
    }
    if (same != routes.end()) {
      r.error(e, fmt::format("{}: another route already has prefix \"{}\"", where, route->prefix));
      continue;
    }
    for (const LlmRoute& o : routes) {
      for (const std::string* v : {&route->key_variable, &route->base_url_variable}) {
        if (*v == o.key_variable || *v == o.base_url_variable) {
          r.error(e, fmt::format("{}: the jail's variable {} is already the route \"{}\"'s; give "
                                 "one of them env = {{ key = ..., base_url = ... }}",
                                 where, *v, o.prefix));
          route.reset();
          break;
        }
      }
      if (!route) break;
    }
    if (route) routes.push_back(std::move(*route));
  }
  r.note(s.base, s.value);
}

std::string llm_routes_text(const std::vector<LlmRoute>& routes) {
  if (routes.empty()) return "[]";
  std::string out = "[\n";
  for (const LlmRoute& r : routes) {
    auto q = [](const std::string& s) { return toml_string(s, /*escape_dollar=*/true); };
    // Everything spelled out, presets filled in: what is shown is what runs.
    out += fmt::format("  {{ prefix = {}, target = {}, header = {}, ", q(r.prefix), q(r.target),
                       q(r.header));
    out += r.key_file.empty() ? fmt::format("key_env = {}, ", q(r.key_env))
                              : fmt::format("key_file = {}, ", q(r.key_file));
    if (!r.ca_file.empty()) out += fmt::format("ca_file = {}, ", q(r.ca_file));
    if (r.dangerously_skip_verify) out += "dangerously_skip_verify = true, ";
    out += fmt::format("env = {{ key = {}, base_url = {} }} }},", q(r.key_variable),
                       q(r.base_url_variable));
    if (r.dangerously_skip_verify) out += "  # DANGEROUS: the upstream's TLS is not verified";
    out += "\n";
  }
  return out + "]";
}

std::vector<std::string> llm_route_conflicts(const Policy& p) {
  std::vector<std::string> out;
  if (p.llm.routes.empty()) return out;
  if (p.network.mode == NetworkMode::dangerously_host) {
    out.emplace_back(
        "llm.routes need the jail's own network namespace (their listener sits on its "
        "127.0.0.1), and network.mode = \"dangerously_host\" shares the host's; write mode "
        "\"none\" or \"proxy\"");
  }
  auto passes = [&](const std::string& name) {
    return std::any_of(
        p.environment.pass.begin(), p.environment.pass.end(), [&](const std::string& pass) {
          return pass.ends_with('*') ? std::string_view(name).starts_with(
                                           std::string_view(pass).substr(0, pass.size() - 1))
                                     : pass == name;
        });
  };
  for (const LlmRoute& r : p.llm.routes) {
    // Even when the route's own variable has that name (and the jail's
    // command gets the placeholder there), brig-worker's jail and brig's
    // planned environment would still hold the real key.
    if (!r.key_env.empty() && passes(r.key_env)) {
      out.push_back(fmt::format(
          "environment.pass lets {} into the jail, and it holds the real key of the llm route "
          "\"{}\" (key_env): remove it from environment.pass",
          r.key_env, r.prefix));
    }
    for (const std::string* v : {&r.key_variable, &r.base_url_variable}) {
      if (p.environment.set.contains(*v)) {
        out.push_back(fmt::format(
            "environment.set names {}, which the llm route \"{}\" sets in the jail; remove it "
            "from environment.set (or give the route env = {{ ... }} with other names)",
            *v, r.prefix));
      }
    }
  }
  return out;
}

}  // namespace brig::policy
