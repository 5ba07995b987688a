#include "server/policy/key_reference.h"

#include <fmt/format.h>

#include "server/policy/keys.h"

namespace brig::policy {
namespace {

// What `brig policy show` writes for Policy{}, on one line for a table cell.
std::string built_in(const Key& k) {
  if (k.show == nullptr) return "—";
  std::string text = k.show(Policy{});
  if (k.form == Form::table) {
    if (text.empty()) return "`{}`";
    text.pop_back();  // the last newline
    for (size_t at; (at = text.find('\n')) != std::string::npos;) text.replace(at, 1, ", ");
    return fmt::format("`{{ {} }}`", text);
  }
  // `tmp_size = 0  # the kernel default: …`: the README says that in the meaning.
  if (const size_t comment = text.find("  # "); comment != std::string::npos) text.resize(comment);
  for (size_t at; (at = text.find("\n  ")) != std::string::npos;) text.replace(at, 3, " ");
  for (size_t at; (at = text.find(",\n]")) != std::string::npos;) text.replace(at, 3, " ]");
  return fmt::format("`{}`", text);
}

}  // namespace

std::string key_reference(std::string_view section) {
  std::string out = "| key | type | built-in | meaning |\n|---|---|---|---|\n";
  for (const Key& k : policy_keys()) {
    if (k.section != section) continue;
    const std::string name = k.form == Form::list ? fmt::format("`{0}`, `{0}_add`", k.name)
                                                  : fmt::format("`{}`", k.name);
    out += fmt::format("| {} | {} | {} | {} |\n", name, k.type, built_in(k), k.doc);
  }
  return out;
}

}  // namespace brig::policy
