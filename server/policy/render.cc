#include "server/policy/render.h"

#include <fmt/format.h>

#include "server/policy/keys.h"

namespace brig::policy {

std::string render_policy(const Policy& p, const std::vector<std::string>& chain) {
  std::string out = "# The fully resolved policy";
  for (size_t i = 0; i < chain.size(); ++i) {
    out += i == 0 ? fmt::format(" of {}", chain[i]) : fmt::format(", extending {}", chain[i]);
  }
  out += ",\n# with ~ and $VARS expanded for this user. It loads as it is.\n";
  std::string_view section;
  for (const Key& k : policy_keys()) {
    if (k.show == nullptr) continue;
    if (k.section != section) {
      section = k.section;
      out += fmt::format("\n[{}]\n", section);
    }
    if (k.form == Form::table) {
      out += fmt::format("\n[{}.{}]\n{}", section, k.name, k.show(p));
    } else {
      out += fmt::format("{} = {}\n", k.name, k.show(p));
    }
  }
  return out;
}

}  // namespace brig::policy
