#include "server/files/json_size.h"

namespace brig::files {

std::size_t json_string_cost(std::string_view text) {
  std::size_t cost = 2;
  for (const char ch : text) cost += json_byte_cost(static_cast<unsigned char>(ch));
  return cost;
}

}  // namespace brig::files
