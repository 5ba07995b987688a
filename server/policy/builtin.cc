#include "server/policy/builtin.h"

namespace brig::policy {

const BuiltinPolicy* find_builtin(std::string_view name) {
  for (const BuiltinPolicy& b : builtin_policies()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

}  // namespace brig::policy
