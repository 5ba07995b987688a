// The spawner's wire (jail/spec_codec.h): any bytes decode or fail with an
// Error, never crash, and what decodes survives a second trip unchanged:
// decode(encode(v)) encodes to the same bytes as v. (Not the input bytes
// themselves: an error's unknown step name decodes as "none", on purpose.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "jail/spec_codec.h"

namespace {

// encode(decode(encode(value))) == encode(value), or abort.
template <class Encode, class Decode>
void round_trip(const std::string& once, Encode encode, Decode decode) {
  auto again = decode(once);
  if (!again || encode(*again) != once) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace brig::jail;
  if (size == 0) return 0;
  // The first byte picks the message, so one corpus covers all three.
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      if (auto d = decode_spawn(bytes)) {
        round_trip(
            encode_spawn(d->first, d->second),
            [](const auto& p) { return encode_spawn(p.first, p.second); }, decode_spawn);
      }
      break;
    case 1:
      if (auto d = decode_outcome(bytes))
        round_trip(encode_outcome(*d), encode_outcome, decode_outcome);
      break;
    default:
      if (auto d = decode_error(bytes)) round_trip(encode_error(*d), encode_error, decode_error);
      break;
  }
  return 0;
}
