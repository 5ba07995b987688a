#include "server/search/json_size.h"

namespace brig::search {

std::size_t json_string_cost(std::string_view text) {
  std::size_t cost = text.size() + 2;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      cost += 1;
    } else if (c < 0x20) {
      cost += 5;  // \u00XX
    } else if (c >= 0x80) {
      cost += 2;
    }
  }
  return cost;
}

}  // namespace brig::search
